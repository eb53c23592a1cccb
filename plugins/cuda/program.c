/* cuda-c programs (NVRTC -> CUBIN, cached on disk), kernels and launches.
 * Build and kernel errors leave the device out of the message: the core
 * prefixes "kernel 'x' on cuda:N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* Cache entries are device images; the key holds everything that changes
 * them: the source (prelude included), the options, the architecture, and
 * the driver and NVRTC versions. Bump the tag when the build recipe
 * changes. */
#define HC_CUDA_CACHE_TAG "hc-cuda-cubin-1"

static void cache_key(const cuda_dev_t *d, const char *source, const char *options, char key[33]) {
  char arch[16], drv[16], nvrtc[600];
  snprintf(arch, sizeof arch, "sm_%d", d->cc);
  snprintf(drv, sizeof drv, "%d", d->s->driver_version);
  snprintf(nvrtc, sizeof nvrtc, "%d.%d", d->s->nvrtc.major, d->s->nvrtc.minor);
  const void *parts[6] = {HC_CUDA_CACHE_TAG, arch, drv, nvrtc, options, source};
  hc_cache_key(key, 6, parts, NULL);
}

hc_status_t cuda_program_build(void *dev, hc_language_t lang, const char *source, const char *options, void **program) {
  cuda_dev_t *d = dev;
  cuda_state_t *s = d->s;
  const hc_cu_api_t *cu = d->cu;
  if (lang != HC_LANG_CUDA_C)
    return hc_error(HC_ERR_UNSUPPORTED, "cannot build %s kernels (only cuda-c)", hc_language_name(lang));
  if (!s->have_nvrtc) return hc_error(HC_ERR_BUILD, "cannot build cuda-c kernels: %s", s->nvrtc_why);
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  char key[33];
  cache_key(d, source, options ? options : "", key);
  CUmodule mod = NULL;
  void *image = NULL;
  size_t size = 0;
  st = hc_cache_load("cuda", key, &image, &size);
  if (st == HC_ERR_IO) hc_log(s->ctx, HC_LOG_WARN, "cuda:%u: %s", d->index, hc_last_error());
  if (st == HC_OK) {
    CUresult r = cu->cuModuleLoadData(&mod, image);
    free(image);
    if (r == CUDA_SUCCESS) {
      hc_log(s->ctx, HC_LOG_DEBUG, "cuda:%u: program %s from the kernel cache", d->index, key);
      *program = mod;
      return HC_OK;
    }
    mod = NULL; /* an entry the driver refuses: rebuild and overwrite it */
  }
  int is_ptx = 0;
  char *log = NULL;
  double t0 = hc_now();
  st = hc_nvrtc_compile(&s->nvrtc, d->cc, source, options, &image, &size, &is_ptx, &log);
  if (st != HC_OK) {
    free(log);
    return st; /* the core prefixes the kernel and device */
  }
  hc_log(s->ctx, HC_LOG_DEBUG, "cuda:%u: NVRTC %d.%d built %zu bytes of %s in %.0f ms%s%s", d->index, s->nvrtc.major,
         s->nvrtc.minor, size, is_ptx ? "PTX" : "CUBIN", (hc_now() - t0) * 1e3, log && *log ? "; log:\n" : "",
         log ? log : "");
  free(log);
  CUresult r = cu->cuModuleLoadData(&mod, image);
  if (r != CUDA_SUCCESS) {
    free(image);
    return hc_cu_fail(cu, HC_ERR_BUILD, r, "cuModuleLoadData (%s for sm_%d from NVRTC %d.%d)", is_ptx ? "PTX" : "CUBIN",
                      d->cc, s->nvrtc.major, s->nvrtc.minor);
  }
  if (hc_cache_enabled() && hc_cache_store("cuda", key, image, size) != HC_OK)
    hc_log(s->ctx, HC_LOG_DEBUG, "cuda:%u: kernel cache: %s", d->index, hc_last_error());
  free(image);
  *program = mod;
  return HC_OK;
}

void cuda_program_release(void *dev, void *program) {
  cuda_dev_t *d = dev;
  if (cuda_use(d) == HC_OK) d->cu->cuModuleUnload((CUmodule)program);
}

typedef struct cuda_kernel {
  CUfunction fn;
  unsigned max_threads;
  int nparams; /* -1: unknown (driver < 12.4) */
  unsigned short psize[HC_MAX_KERNEL_ARGS];
  char name[128];
} cuda_kernel_t;

/* "a, b, c": the kernels a module defines, for "not found" messages. */
static void list_functions(const hc_cu_api_t *cu, CUmodule mod, char *out, size_t n) {
  out[0] = '\0';
  unsigned count = 0;
  if (!cu->cuModuleGetFunctionCount || !cu->cuModuleEnumerateFunctions || !cu->cuFuncGetName ||
      cu->cuModuleGetFunctionCount(&count, mod) != CUDA_SUCCESS || !count)
    return;
  CUfunction fns[32];
  if (count > 32) count = 32;
  if (cu->cuModuleEnumerateFunctions(fns, count, mod) != CUDA_SUCCESS) return;
  size_t len = 0;
  for (unsigned i = 0; i < count && len < n; i++) {
    const char *name = NULL;
    if (cu->cuFuncGetName(&name, fns[i]) == CUDA_SUCCESS && name)
      len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "", name);
  }
}

hc_status_t cuda_kernel_create(void *dev, void *program, const char *name, void **kernel) {
  cuda_dev_t *d = dev;
  const hc_cu_api_t *cu = d->cu;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUfunction fn = NULL;
  CUresult r = cu->cuModuleGetFunction(&fn, (CUmodule)program, name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    char names[1024];
    list_functions(cu, (CUmodule)program, names, sizeof names);
    return hc_cu_fail(cu, HC_ERR_NOT_FOUND, r,
                      "the program has no kernel '%s' (declare it HC_KERNEL, i.e. extern \"C\" "
                      "__global__)%s%s; cuModuleGetFunction",
                      name, names[0] ? "; it defines: " : "", names);
  }
  if (r != CUDA_SUCCESS) return hc_cu_fail(cu, HC_ERR_BUILD, r, "cuModuleGetFunction('%s')", name);
  cuda_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return hc_error(HC_ERR_NO_MEMORY, "cuda: out of memory");
  k->fn = fn;
  snprintf(k->name, sizeof k->name, "%s", name);
  int maxt = 0;
  if (cu->cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn) != CUDA_SUCCESS || maxt <= 0)
    maxt = 256;
  k->max_threads = (unsigned)maxt;
  /* Parameter sizes, to refuse a launch whose arguments do not match the
   * kernel (the driver itself would read garbage). */
  k->nparams = -1;
  if (cu->cuFuncGetParamInfo) {
    size_t off, sz;
    int i = 0;
    while (i <= HC_MAX_KERNEL_ARGS && cu->cuFuncGetParamInfo(fn, (size_t)i, &off, &sz) == CUDA_SUCCESS) {
      if (i < HC_MAX_KERNEL_ARGS) k->psize[i] = (unsigned short)sz;
      i++;
    }
    if (i <= HC_MAX_KERNEL_ARGS) k->nparams = i;
  }
  *kernel = k;
  return HC_OK;
}

void cuda_kernel_release(void *dev, void *kernel) {
  (void)dev;
  free(kernel);
}

size_t cuda_kernel_max_group_size(void *dev, void *kernel) {
  (void)dev;
  return ((cuda_kernel_t *)kernel)->max_threads;
}

/* The block for an unspecified local size: 256 threads (1-D), 32x8 (2-D),
 * 32x4x2 (3-D). Threads of a slow axis shorter than the block move to axis
 * 0 (a 2-D range of one row should not idle 7 of 8 warps), and those of a
 * short axis 0 move to axis 1 while it has room; then the block shrinks to
 * the kernel's limit, slow axes first, keeping axis 0 a warp wide for
 * coalesced access. */
static void choose_block(uint32_t dims, const size_t *g, unsigned maxt, unsigned b[3]) {
  static const unsigned def[3][3] = {{256, 1, 1}, {32, 8, 1}, {32, 4, 2}};
  memcpy(b, def[dims - 1], 3 * sizeof *b);
  for (uint32_t a = dims - 1; a >= 1; a--)
    while (b[a] > 1 && b[a] / 2 >= g[a]) {
      b[a] /= 2;
      b[0] *= 2;
    }
  while (b[0] > 1 && b[0] / 2 >= g[0]) {
    b[0] /= 2;
    if (dims > 1 && b[1] < g[1]) b[1] *= 2;
  }
  while ((size_t)b[0] * b[1] * b[2] > maxt) {
    unsigned *slow = b[1] >= b[2] ? &b[1] : &b[2];
    if (*slow > 1)
      *slow /= 2;
    else
      b[0] /= 2;
  }
}

hc_status_t cuda_launch(void *dev, void *kernel, const hc_launch_t *l) {
  cuda_dev_t *d = dev;
  cuda_kernel_t *k = kernel;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  if (k->nparams >= 0 && (int)l->nargs != k->nparams)
    return hc_error(HC_ERR_INVALID_ARG, "cuda:%u: kernel '%s' takes %d argument(s), %u given", d->index, k->name,
                    k->nparams, l->nargs);
  void *params[HC_MAX_KERNEL_ARGS];
  for (uint32_t i = 0; i < l->nargs; i++) {
    const hc_launch_arg_t *a = &l->args[i];
    int buf = a->kind == HC_ARG_KIND_BUFFER;
    size_t have = buf ? sizeof(CUdeviceptr) : a->size;
    if (k->nparams >= 0 && have != k->psize[i])
      return hc_error(HC_ERR_INVALID_ARG,
                      "cuda:%u: kernel '%s' argument %u: the kernel takes %u bytes, given %s of %zu", d->index, k->name,
                      i, k->psize[i], buf ? "a buffer" : "a scalar", have);
    /* A buffer's handle is its device address: pass where it is stored. */
    params[i] = buf ? (void *)&a->mem : (void *)a->value;
  }
  unsigned b[3];
  if (l->local[0] && l->local[1] && l->local[2]) {
    for (int a = 0; a < 3; a++) b[a] = l->local[a] > 1024 ? 1025 : (unsigned)l->local[a];
    if ((size_t)b[0] * b[1] * b[2] > k->max_threads)
      return hc_error(HC_ERR_LAUNCH, "cuda:%u: kernel '%s': group %zux%zux%zu exceeds its limit of %u threads",
                      d->index, k->name, l->local[0], l->local[1], l->local[2], k->max_threads);
  } else {
    choose_block(l->dims, l->global, k->max_threads, b);
  }
  size_t g[3];
  for (int a = 0; a < 3; a++) g[a] = (l->global[a] + b[a] - 1) / b[a];
  if (g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535)
    return hc_error(HC_ERR_LAUNCH,
                    "cuda:%u: kernel '%s': range %zux%zux%zu in groups of %ux%ux%u needs %zux%zux%zu groups, over "
                    "CUDA's 2147483647x65535x65535",
                    d->index, k->name, l->global[0], l->global[1], l->global[2], b[0], b[1], b[2], g[0], g[1], g[2]);
  /* an NVTX range around the launch names it in Nsight Systems */
  cuda_range_push(d->s, k->name);
  CUresult r = d->cu->cuLaunchKernel(k->fn, (unsigned)g[0], (unsigned)g[1], (unsigned)g[2], b[0], b[1], b[2], 0,
                                     d->stream, params, NULL);
  cuda_range_pop(d->s);
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(d->cu, HC_ERR_LAUNCH, r, "cuda:%u: launching '%s' (grid %zux%zux%zu, block %ux%ux%u)", d->index,
                      k->name, g[0], g[1], g[2], b[0], b[1], b[2]);
  return HC_OK;
}
