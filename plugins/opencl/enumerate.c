/* Finding the devices: every device of every platform (platform order, then
 * the platform's device order), optionally only the platforms whose name
 * contains $HC_OPENCL_PLATFORM, each described by a hc_device_info_t. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* Vendor queries, by value: the headers of the 1.2 target may lack them. */
#define OCL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE 0x1067 /* OpenCL 3.0 */
#define OCL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define OCL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define OCL_DEVICE_WARP_SIZE_NV 0x4003
#define OCL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD 0x4040
#define OCL_DEVICE_SIMD_WIDTH_AMD 0x4041
#define OCL_DEVICE_SIMD_INSTRUCTION_WIDTH_AMD 0x4042
#define OCL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
#define OCL_DEVICE_PCI_BUS_ID_NV 0x4008
#define OCL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define OCL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#define OCL_DEVICE_TOPOLOGY_AMD 0x4037
#define OCL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#define OCL_PLATFORM_NOT_FOUND_KHR (-1001) /* cl_khr_icd: no vendor .icd */

/* Copies a string without trailing blanks (some drivers pad names). */
static void set_str(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src);
  size_t n = strlen(dst);
  while (n && (dst[n - 1] == ' ' || dst[n - 1] == '\n' || dst[n - 1] == '\t')) dst[--n] = '\0';
  size_t lead = strspn(dst, " \t");
  if (lead) memmove(dst, dst + lead, strlen(dst + lead) + 1);
}

static void platform_str(cl_platform_id p, cl_platform_info what, char *dst, size_t cap) {
  char buf[1024] = "";
  if (clGetPlatformInfo(p, what, sizeof buf - 1, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
  buf[sizeof buf - 1] = '\0';
  set_str(dst, cap, buf);
}

static void device_str(cl_device_id d, cl_device_info what, char *dst, size_t cap) {
  char buf[1024] = "";
  if (clGetDeviceInfo(d, what, sizeof buf - 1, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
  buf[sizeof buf - 1] = '\0';
  set_str(dst, cap, buf);
}

/* A numeric query of the given width; 0 when the device does not know it. */
static cl_ulong device_num(cl_device_id d, cl_device_info what, size_t width) {
  union {
    cl_uint u;
    cl_ulong ul;
    size_t z;
    cl_bool b;
  } v;
  memset(&v, 0, sizeof v);
  if (clGetDeviceInfo(d, what, width, &v, NULL) != CL_SUCCESS) return 0;
  if (width == sizeof(cl_ulong)) return v.ul;
  if (width == sizeof(cl_uint)) return v.u;
  return v.z;
}
#define DEV_UINT(d, w) ((cl_uint)device_num((d), (w), sizeof(cl_uint)))
#define DEV_ULONG(d, w) device_num((d), (w), sizeof(cl_ulong))
#define DEV_SIZE(d, w) ((size_t)device_num((d), (w), sizeof(size_t)))

/* Extensions are a long list: read it whole to look for one name. */
static int has_extension(cl_device_id d, const char *ext) {
  size_t n = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || !n) return 0;
  char *buf = malloc(n + 1);
  if (!buf) return 0;
  int found = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, buf, NULL) == CL_SUCCESS) {
    buf[n] = '\0';
    size_t len = strlen(ext);
    for (const char *p = buf; (p = strstr(p, ext)) != NULL; p += len)
      if ((p == buf || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0')) {
        found = 1;
        break;
      }
  }
  free(buf);
  return found;
}

/* FP32 lanes per SM by compute capability (CUDA programming guide table). */
static unsigned nv_cores_per_sm(unsigned major, unsigned minor) {
  switch (major) {
  case 2: return minor == 1 ? 48 : 32;
  case 3: return 192;
  case 5: return 128;
  case 6: return minor == 0 ? 64 : 128;
  case 7: return 64;
  case 8: return minor == 0 ? 64 : 128;
  default: return 128; /* 9.x and later */
  }
}

/* FP64 rate relative to FP32: full-rate datacenter parts (x.0 of 6, 7, 8,
 * 9) run it at 1/2, the rest at 1/32 or 1/64. */
static double nv_fp64_ratio(unsigned major, unsigned minor) {
  if (minor == 0 && (major == 6 || major == 7 || major == 8 || major == 9)) return 0.5;
  if (major >= 8) return 1.0 / 64;
  return 1.0 / 32;
}

static void describe_nvidia(cl_device_id d, hc_device_info_t *in) {
  unsigned major = DEV_UINT(d, OCL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV);
  unsigned minor = DEV_UINT(d, OCL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV);
  unsigned warp = DEV_UINT(d, OCL_DEVICE_WARP_SIZE_NV);
  in->preferred_group_multiple = warp ? warp : 32;
  if (!major) return;
  in->cc_major = major;
  in->cc_minor = minor;
  snprintf(in->arch, sizeof in->arch, "sm_%u%u", major, minor);
  /* 2 flops (an FMA) per lane per clock. */
  in->peak_fp32_gflops = 2.0 * in->compute_units * nv_cores_per_sm(major, minor) * (double)in->clock_mhz / 1000.0;
  if (in->fp64) in->peak_fp64_gflops = in->peak_fp32_gflops * nv_fp64_ratio(major, minor);
}

/* The PCI address: cl_khr_pci_bus_info, else the vendors' own queries
 * (NVIDIA's slot is device << 3 | function; AMD's topology is PCIe's). */
static void pci_address(cl_device_id d, char *out, size_t n) {
  cl_uint domain = 0, bus = 0, dev = 0, fn = 0;
  if (has_extension(d, "cl_khr_pci_bus_info")) {
    cl_uint v[4] = {0, 0, 0, 0};
    if (clGetDeviceInfo(d, OCL_DEVICE_PCI_BUS_INFO_KHR, sizeof v, v, NULL) != CL_SUCCESS) return;
    domain = v[0], bus = v[1], dev = v[2], fn = v[3];
  } else if (has_extension(d, "cl_nv_device_attribute_query")) {
    cl_uint slot = 0;
    if (clGetDeviceInfo(d, OCL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(d, OCL_DEVICE_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) != CL_SUCCESS)
      return;
    if (clGetDeviceInfo(d, OCL_DEVICE_PCI_DOMAIN_ID_NV, sizeof domain, &domain, NULL) != CL_SUCCESS) domain = 0;
    dev = slot >> 3, fn = slot & 7;
  } else if (has_extension(d, "cl_amd_device_attribute_query")) {
    struct {
      cl_uint type;
      cl_uchar unused[17], bus, device, function;
    } t;
    memset(&t, 0, sizeof t);
    if (clGetDeviceInfo(d, OCL_DEVICE_TOPOLOGY_AMD, sizeof t, &t, NULL) != CL_SUCCESS || t.type != 1) return;
    bus = t.bus, dev = t.device, fn = t.function;
  } else {
    return;
  }
  snprintf(out, n, "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff, dev & 0x1f, fn & 7);
}

static void describe_amd(cl_device_id d, hc_device_info_t *in) {
  unsigned simd = DEV_UINT(d, OCL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD);
  unsigned width = DEV_UINT(d, OCL_DEVICE_SIMD_WIDTH_AMD);
  unsigned iw = DEV_UINT(d, OCL_DEVICE_SIMD_INSTRUCTION_WIDTH_AMD);
  unsigned wave = DEV_UINT(d, OCL_DEVICE_WAVEFRONT_WIDTH_AMD);
  if (wave) in->preferred_group_multiple = wave;
  if (simd && width && iw)
    in->peak_fp32_gflops = 2.0 * in->compute_units * simd * width * iw * (double)in->clock_mhz / 1000.0;
}

/* A platform without the 3.0 query and without vendor attributes: ask a
 * trivial kernel (only then: it costs a compile at startup). */
static size_t multiple_from_kernel(cl_platform_id p, cl_device_id d) {
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)p, 0};
  cl_int err;
  size_t m = 0;
  cl_context c = clCreateContext(props, 1, &d, NULL, NULL, &err);
  if (!c) return 0;
  const char *src = "__kernel void hc_probe(__global int *p) { p[get_global_id(0)] = 0; }";
  cl_program prog = clCreateProgramWithSource(c, 1, &src, NULL, &err);
  if (prog && clBuildProgram(prog, 1, &d, "", NULL, NULL) == CL_SUCCESS) {
    cl_kernel k = clCreateKernel(prog, "hc_probe", &err);
    if (k) {
      if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof m, &m, NULL) !=
          CL_SUCCESS)
        m = 0;
      clReleaseKernel(k);
    }
  }
  if (prog) clReleaseProgram(prog);
  clReleaseContext(c);
  return m;
}

static void describe(ocl_devslot_t *slot, const char *platform_name) {
  cl_device_id d = slot->id;
  hc_device_info_t *in = &slot->info;
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  cl_device_type t = 0;
  clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
  in->type = (t & CL_DEVICE_TYPE_GPU)           ? HC_DEVICE_GPU
             : (t & CL_DEVICE_TYPE_ACCELERATOR) ? HC_DEVICE_ACCELERATOR
             : (t & CL_DEVICE_TYPE_CPU)         ? HC_DEVICE_CPU
                                                : HC_DEVICE_OTHER;
  device_str(d, CL_DEVICE_NAME, in->name, sizeof in->name);
  device_str(d, CL_DEVICE_VENDOR, in->vendor, sizeof in->vendor);
  device_str(d, CL_DRIVER_VERSION, in->driver, sizeof in->driver);
  set_str(in->platform, sizeof in->platform, platform_name);
  /* A device without a compiler cannot build source kernels: it accepts
   * no language hc offers. */
  in->languages = DEV_UINT(d, CL_DEVICE_COMPILER_AVAILABLE) ? HC_LANG_BIT(HC_LANG_OPENCL_C) : 0;
  in->compute_units = DEV_UINT(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  in->clock_mhz = DEV_UINT(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  in->fp64 = has_extension(d, "cl_khr_fp64") || DEV_ULONG(d, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  in->max_work_group_size = (uint32_t)DEV_SIZE(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  in->global_mem_bytes = DEV_ULONG(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  in->max_alloc_bytes = DEV_ULONG(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  in->local_mem_bytes = DEV_ULONG(d, CL_DEVICE_LOCAL_MEM_SIZE);
  /* On a GPU the global memory cache is its L2; on a CPU it says little. */
  if (in->type == HC_DEVICE_GPU) in->l2_cache_bytes = DEV_ULONG(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  /* Per-axis limits of a work-group (NVIDIA: 1024 x 1024 x 64). */
  size_t items[3] = {0, 0, 0};
  if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) != CL_SUCCESS) items[0] = 0;
  for (int i = 0; i < 3; i++)
    slot->max_items[i] = items[i] ? items[i] : (in->max_work_group_size ? in->max_work_group_size : 1);

  in->preferred_group_multiple = (uint32_t)DEV_SIZE(d, OCL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE);
  if (has_extension(d, "cl_nv_device_attribute_query"))
    describe_nvidia(d, in);
  else if (has_extension(d, "cl_amd_device_attribute_query"))
    describe_amd(d, in);
  if (!in->preferred_group_multiple && in->languages)
    in->preferred_group_multiple = (uint32_t)multiple_from_kernel(slot->platform, d);
  if (!in->preferred_group_multiple) in->preferred_group_multiple = 1;
  slot->pci_bus_id[0] = '\0';
  if (in->type != HC_DEVICE_CPU) pci_address(d, slot->pci_bus_id, sizeof slot->pci_bus_id);
}

/* Whether dir exists and can be written, or could be created: its nearest
 * existing ancestor takes a new entry (tried, since permission bits do not
 * tell for root or for file systems such as /proc; only on this failure
 * path, and removed at once). */
static int dir_usable(const char *dir) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", dir);
  for (;;) {
    struct stat st;
    if (stat(buf, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return 0;
      char probe[4200];
      snprintf(probe, sizeof probe, "%s/.hc-probe-%ld", buf, (long)getpid());
      if (mkdir(probe, 0700) != 0) return 0;
      rmdir(probe);
      return 1;
    }
    char *slash = strrchr(buf, '/');
    if (!slash) return 0;
    if (slash == buf)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
}

/* Appends to why what in the environment commonly keeps an OpenCL driver
 * from starting, where it is the case: PoCL's cache directory (its rule:
 * POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl, else $HOME/.cache/pocl) that
 * cannot be written, and an address-space limit (drivers reserve large
 * ranges at start-up). Without these hints an unwritable HOME reads as
 * "platform without devices" and `ulimit -v` as "no platform installed". */
static void append_causes(char *why, size_t n) {
  char dir[4096] = "";
  const char *pocl = getenv("POCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (pocl && *pocl)
    snprintf(dir, sizeof dir, "%s", pocl);
  else if (xdg && *xdg)
    snprintf(dir, sizeof dir, "%s/pocl", xdg);
  else if (home && *home)
    snprintf(dir, sizeof dir, "%s/.cache/pocl", home);
  size_t len = strlen(why);
  if (!dir[0])
    snprintf(why + len, n - len, "; HOME is not set, so PoCL has no cache directory (set POCL_CACHE_DIR)");
  else if (!dir_usable(dir))
    snprintf(why + len, n - len,
             "; the driver's cache directory %s cannot be created or written (PoCL keeps its compiled kernels "
             "there: set POCL_CACHE_DIR or XDG_CACHE_HOME to a writable directory)",
             dir);
  len = strlen(why);
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    snprintf(why + len, n - len,
             "; an address-space limit of %llu MiB is set (ulimit -v), under which OpenCL drivers may fail to start",
             (unsigned long long)(rl.rlim_cur >> 20));
}

static int platform_wanted(const char *name, const char *filter) {
  return !filter || !*filter || strcasestr(name, filter) != NULL;
}

static hc_status_t enumerate_platforms(ocl_state_t *s) {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == OCL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0)) {
    snprintf(s->why, sizeof s->why, "no OpenCL platform installed (ICD loader found no vendor .icd)");
    append_causes(s->why, sizeof s->why);
    return HC_OK;
  }
  if (err != CL_SUCCESS) {
    snprintf(s->why, sizeof s->why, "clGetPlatformIDs failed: %s", ocl_err_name(err));
    append_causes(s->why, sizeof s->why);
    return HC_OK;
  }
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats) return hc_error(HC_ERR_NO_MEMORY, "opencl: out of memory");
  err = clGetPlatformIDs(np, plats, NULL);
  if (err != CL_SUCCESS) {
    free(plats);
    snprintf(s->why, sizeof s->why, "clGetPlatformIDs failed: %s", ocl_err_name(err));
    return HC_OK;
  }
  const char *filter = NULL;
  hc_config_str("HC_OPENCL_PLATFORM", &filter);
  char seen[384] = "", empty[384] = "";
  uint32_t nwanted = 0;
  for (cl_uint p = 0; p < np; p++) {
    char pname[HC_NAME_MAX];
    platform_str(plats[p], CL_PLATFORM_NAME, pname, sizeof pname);
    size_t len = strlen(seen);
    snprintf(seen + len, sizeof seen - len, "%s'%s'", len ? ", " : "", pname);
    if (!platform_wanted(pname, filter)) continue;
    nwanted++;
    cl_uint nd = 0;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err != CL_SUCCESS || nd == 0) {
      len = strlen(empty);
      snprintf(empty + len, sizeof empty - len, "%s'%s' (%s)", len ? ", " : "", pname,
               err == CL_SUCCESS ? "0 devices" : ocl_err_name(err));
      continue;
    }
    cl_device_id *ids = calloc(nd, sizeof *ids);
    ocl_devslot_t *grown = realloc(s->slots, (s->nslots + nd) * sizeof *grown);
    if (!ids || !grown) {
      free(ids);
      if (grown) s->slots = grown;
      free(plats);
      return hc_error(HC_ERR_NO_MEMORY, "opencl: out of memory");
    }
    s->slots = grown;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) != CL_SUCCESS) nd = 0;
    for (cl_uint i = 0; i < nd; i++) {
      ocl_devslot_t *slot = &s->slots[s->nslots++];
      memset(slot, 0, sizeof *slot);
      slot->platform = plats[p];
      slot->id = ids[i];
      platform_str(plats[p], CL_PLATFORM_VERSION, slot->platform_version, sizeof slot->platform_version);
      describe(slot, pname);
    }
    free(ids);
  }
  free(plats);
  if (s->nslots == 0) {
    if (nwanted == 0)
      snprintf(s->why, sizeof s->why, "HC_OPENCL_PLATFORM=%s matches none of the OpenCL platforms (%s)", filter, seen);
    else {
      snprintf(s->why, sizeof s->why, "OpenCL platform(s) without devices: %s", empty);
      append_causes(s->why, sizeof s->why);
    }
  }
  return HC_OK;
}

/* The first OpenCL call (the ICD loader or a vendor's initialisation) cut
 * OCL_ICD_FILENAMES in place at its first ':' on a machine that lists
 * its drivers there:
 * "libpocl.so.2:libnvidia-opencl.so.1" became "libpocl.so.2" in this
 * process's environment, and every child process (an hcrun started by a
 * tool that embeds hc) lost NVIDIA's platform. The value is kept before
 * that call and put back after it. */
hc_status_t ocl_enumerate(ocl_state_t *s) {
  const char *filenames = getenv("OCL_ICD_FILENAMES");
  char *kept = filenames ? strdup(filenames) : NULL;
  if (filenames && !kept) return hc_error(HC_ERR_NO_MEMORY, "opencl: out of memory");
  hc_status_t st = enumerate_platforms(s);
  if (kept) {
    const char *now = getenv("OCL_ICD_FILENAMES");
    if (!now || strcmp(now, kept) != 0) setenv("OCL_ICD_FILENAMES", kept, 1);
    free(kept);
  }
  return st;
}
