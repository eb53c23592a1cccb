/* Programs and kernels: OpenCL C source (prelude already prepended by the
 * core) built for one device, with the program binary kept in the on-disk
 * cache (kind "opencl") so the next process skips the compiler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#define CACHE_KIND "opencl"
/* Bump when what is stored under a key changes meaning. */
#define CACHE_FORMAT "hc-opencl-binary-2"
/* A stored entry is this tag, then the driver's binary. Only tagged bytes
 * (which came from clGetProgramInfo here) go back to a driver: some parse
 * a foreign blob without bounds checks (PoCL 3.1 reads past a short one). */
static const char BIN_TAG[8] = "hcoclb1";

/* The build log, malloc'd ("" when there is none); NULL without memory. */
static char *build_log(cl_program p, cl_device_id dev) {
  size_t n = 0;
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS) n = 0;
  char *log = malloc(n + 1);
  if (!log) return NULL;
  if (!n || clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) n = 0;
  log[n] = '\0';
  while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\0')) log[--n] = '\0';
  return log;
}

/* A program from a cached binary, or NULL: a binary the driver refuses
 * (another driver build, a corrupt file) is a miss, never an error. */
static cl_program from_binary(ocl_dev_t *d, const void *bin, size_t size, const char *options) {
  cl_int err = CL_SUCCESS, bstatus = CL_SUCCESS;
  const unsigned char *b = bin;
  cl_program p = clCreateProgramWithBinary(d->ctx, 1, &d->slot->id, &size, &b, &bstatus, &err);
  if (!p) return NULL;
  if (err != CL_SUCCESS || bstatus != CL_SUCCESS ||
      clBuildProgram(p, 1, &d->slot->id, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(p);
    return NULL;
  }
  return p;
}

/* Stores the built program's binary; a failure only costs a later rebuild. */
static void store_binary(ocl_dev_t *d, cl_program p, const char *key) {
  size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || !size) return;
  unsigned char *entry = malloc(sizeof BIN_TAG + size);
  if (!entry) return;
  memcpy(entry, BIN_TAG, sizeof BIN_TAG);
  unsigned char *bin = entry + sizeof BIN_TAG;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS &&
      hc_cache_store(CACHE_KIND, key, entry, sizeof BIN_TAG + size) != HC_OK)
    hc_log(d->state->ctx, HC_LOG_DEBUG, "opencl: kernel cache not written: %s", hc_last_error());
  free(entry);
}

hc_status_t ocl_program_build(void *dev, hc_language_t lang, const char *source, const char *options, void **program) {
  ocl_dev_t *d = dev;
  if (lang != HC_LANG_OPENCL_C)
    return hc_error(HC_ERR_UNSUPPORTED, "opencl: cannot build %s kernels (only opencl-c)", hc_language_name(lang));
  if (!options) options = "";
  const hc_device_info_t *in = &d->slot->info;
  char key[33];
  const void *parts[] = {CACHE_FORMAT, source, options, in->name, in->driver, in->platform, d->slot->platform_version};
  hc_cache_key(key, (uint32_t)(sizeof parts / sizeof parts[0]), parts, NULL);

  void *entry = NULL;
  size_t size = 0;
  hc_status_t cst = hc_cache_load(CACHE_KIND, key, &entry, &size);
  if (cst == HC_ERR_IO) hc_log(d->state->ctx, HC_LOG_WARN, "opencl: %s", hc_last_error());
  if (cst == HC_OK) {
    int tagged = size > sizeof BIN_TAG && !memcmp(entry, BIN_TAG, sizeof BIN_TAG);
    cl_program p = tagged ? from_binary(d, (const char *)entry + sizeof BIN_TAG, size - sizeof BIN_TAG, options) : NULL;
    free(entry);
    if (p) {
      hc_log(d->state->ctx, HC_LOG_DEBUG, "opencl: program %s from the kernel cache", key);
      *program = p;
      return HC_OK;
    }
    hc_log(d->state->ctx, HC_LOG_DEBUG, "opencl: cached entry %s %s; rebuilding", key,
           tagged ? "refused by the driver" : "is not an OpenCL program binary");
  }

  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(d->ctx, 1, &source, NULL, &err);
  if (!p || err != CL_SUCCESS) return ocl_fail(err, HC_ERR_BUILD, "clCreateProgramWithSource", "%s", in->name);
  err = clBuildProgram(p, 1, &d->slot->id, options, NULL, NULL);
  char *log = build_log(p, d->slot->id);
  if (err != CL_SUCCESS) {
    /* The log is what the user needs: it goes whole into the message (the
     * core's last-error buffer may cut a very long one; the debug log
     * keeps it all). */
    hc_log(d->state->ctx, HC_LOG_DEBUG, "opencl: build log:\n%s", log ? log : "");
    hc_status_t st = hc_error(err == CL_OUT_OF_HOST_MEMORY ? HC_ERR_NO_MEMORY : HC_ERR_BUILD,
                              "opencl: clBuildProgram failed: %s (%s, options \"%s\"); build log:\n%s",
                              ocl_err_name(err), in->name, options, log && *log ? log : "(empty)");
    free(log);
    clReleaseProgram(p);
    return st;
  }
  if (log && *log) hc_log(d->state->ctx, HC_LOG_DEBUG, "opencl: build log (%s):\n%s", in->name, log);
  free(log);
  store_binary(d, p, key);
  *program = p;
  return HC_OK;
}

void ocl_program_release(void *dev, void *program) {
  (void)dev;
  if (program) clReleaseProgram((cl_program)program);
}

/* "a, b, c": the kernels a program has, for a "no such kernel" message. */
static void kernel_names(cl_program p, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &n) != CL_SUCCESS || !n) return;
  char *names = malloc(n + 1);
  if (!names) return;
  if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, n, names, NULL) == CL_SUCCESS) {
    names[n] = '\0';
    size_t len = 0;
    char *save = NULL;
    for (char *tok = strtok_r(names, ";", &save); tok && len + 4 < cap; tok = strtok_r(NULL, ";", &save))
      len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", tok);
  }
  free(names);
}

hc_status_t ocl_kernel_create(void *dev, void *program, const char *name, void **kernel) {
  ocl_dev_t *d = dev;
  cl_program p = program;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(p, name, &err);
  if (!k || err != CL_SUCCESS) {
    if (err == CL_INVALID_KERNEL_NAME) {
      char names[512];
      kernel_names(p, names, sizeof names);
      return hc_error(HC_ERR_NOT_FOUND,
                      "opencl: clCreateKernel failed: %s (no kernel named '%s' in the program; it has: %s)",
                      ocl_err_name(err), name, names[0] ? names : "none");
    }
    return ocl_fail(err, HC_ERR_BUILD, "clCreateKernel", "kernel '%s'", name);
  }
  ocl_kernel_t *ok = calloc(1, sizeof *ok);
  if (!ok) {
    clReleaseKernel(k);
    return hc_error(HC_ERR_NO_MEMORY, "opencl: out of memory");
  }
  ok->k = k;
  snprintf(ok->name, sizeof ok->name, "%s", name);
  cl_device_id id = d->slot->id;
  /* Queried once here, so a launch needs no query. */
  if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof ok->nargs, &ok->nargs, NULL) != CL_SUCCESS)
    ok->nargs = OCL_NARGS_UNKNOWN;
  if (clGetKernelWorkGroupInfo(k, id, CL_KERNEL_WORK_GROUP_SIZE, sizeof ok->max_group, &ok->max_group, NULL) !=
          CL_SUCCESS ||
      !ok->max_group)
    ok->max_group = d->slot->info.max_work_group_size ? d->slot->info.max_work_group_size : 1;
  if (clGetKernelWorkGroupInfo(k, id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof ok->multiple, &ok->multiple,
                               NULL) != CL_SUCCESS ||
      !ok->multiple)
    ok->multiple = d->slot->info.preferred_group_multiple ? d->slot->info.preferred_group_multiple : 1;
  if (clGetKernelWorkGroupInfo(k, id, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof ok->reqd, ok->reqd, NULL) != CL_SUCCESS)
    ok->reqd[0] = ok->reqd[1] = ok->reqd[2] = 0;
  /* A kernel compiled for reqd_work_group_size runs groups of that size.
   * NVIDIA's OpenCL reports 256 items for every kernel,
   * a 10-register one and one declaring reqd_work_group_size(1024, 1, 1)
   * alike, and both run 1024-item groups correctly. */
  const size_t reqd_items = ok->reqd[0] * ok->reqd[1] * ok->reqd[2];
  if (reqd_items > ok->max_group && reqd_items <= d->slot->info.max_work_group_size) ok->max_group = reqd_items;
  *kernel = ok;
  return HC_OK;
}

void ocl_kernel_release(void *dev, void *kernel) {
  (void)dev;
  ocl_kernel_t *k = kernel;
  if (!k) return;
  clReleaseKernel(k->k);
  free(k);
}

size_t ocl_kernel_max_group_size(void *dev, void *kernel) {
  (void)dev;
  return ((ocl_kernel_t *)kernel)->max_group;
}
