/* Kernels: choose the language a device accepts, prepend the dialect
 * prelude, share programs per device, translate launch arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char prelude_opencl[] =
#include "dialect_opencl.h"
#include "dialect_common.h"
    ;
static const char prelude_cuda[] =
#include "dialect_cuda.h"
#include "dialect_common.h"
    ;

const char *hc__dialect_prelude(hc_language_t lang) {
  return lang == HC_LANG_OPENCL_C ? prelude_opencl : lang == HC_LANG_CUDA_C ? prelude_cuda : "";
}

/* Finds or builds the program for (lang, prelude + source, options);
 * takes a ref. */
static hc_status_t get_program_with(hc_device_t *d, hc_language_t lang, const char *prelude, const char *source,
                                    const char *options, hc__program_t **out, int *cached) {
  const void *parts[4] = {hc_language_name(lang), prelude, source, options ? options : ""};
  size_t sizes[4] = {0, 0, 0, 0};
  char key[33];
  hc_cache_key(key, 4, parts, sizes);
  pthread_mutex_lock(&d->lock);
  for (hc__program_t *p = d->programs; p; p = p->next)
    if (p->lang == lang && !strcmp(p->key, key)) {
      p->refs++;
      *out = p;
      *cached = 1;
      pthread_mutex_unlock(&d->lock);
      return HC_OK;
    }
  size_t plen = strlen(prelude), slen = strlen(source);
  char *full = malloc(plen + slen + 2);
  hc__program_t *p = calloc(1, sizeof *p);
  if (!full || !p) {
    pthread_mutex_unlock(&d->lock);
    free(full);
    free(p);
    return hc_error(HC_ERR_NO_MEMORY, "building a kernel: out of memory");
  }
  memcpy(full, prelude, plen);
  memcpy(full + plen, source, slen);
  full[plen + slen] = '\n';
  full[plen + slen + 1] = '\0';
  hc_status_t st = d->backend->ops.program_build(d->handle, lang, full, options ? options : "", &p->handle);
  free(full);
  if (st != HC_OK) {
    pthread_mutex_unlock(&d->lock);
    free(p);
    return st;
  }
  memcpy(p->key, key, sizeof key);
  p->lang = lang;
  p->refs = 1;
  p->next = d->programs;
  d->programs = p;
  *out = p;
  pthread_mutex_unlock(&d->lock);
  return HC_OK;
}

/* get_program_with, with the extra options of the environment. */
static hc_status_t get_program(hc_device_t *d, hc_language_t lang, const char *source, const char *options,
                               hc__program_t **out, int *cached) {
  const char *prelude = hc__dialect_prelude(lang);
  /* HC_KERNEL_OPTIONS is appended to every source kernel's options, so a
   * tuning experiment (a -D a kernel reads with #ifndef) needs no rebuild
   * of hc; it is part of the cache key like the options themselves. */
  const char *extra = NULL;
  hc_config_str("HC_KERNEL_OPTIONS", &extra);
  char *joined = NULL;
  if (extra && *extra) {
    size_t ol = options ? strlen(options) : 0, el = strlen(extra);
    if (!(joined = malloc(ol + el + 2))) return hc_error(HC_ERR_NO_MEMORY, "building a kernel: out of memory");
    memcpy(joined, options ? options : "", ol);
    joined[ol] = ' ';
    memcpy(joined + ol + 1, extra, el + 1);
    options = joined;
  }
  hc_status_t st = get_program_with(d, lang, prelude, source, options, out, cached);
  free(joined);
  return st;
}

static void put_program(hc_device_t *d, hc__program_t *p) {
  /* Programs stay cached on the device until it closes: a workload run
   * again (or a pipeline stage) reuses them without a rebuild. */
  pthread_mutex_lock(&d->lock);
  p->refs--;
  pthread_mutex_unlock(&d->lock);
}

hc_language_t hc__source_language(uint32_t languages) {
  return (languages & HC_LANG_BIT(HC_LANG_CUDA_C))     ? HC_LANG_CUDA_C
         : (languages & HC_LANG_BIT(HC_LANG_OPENCL_C)) ? HC_LANG_OPENCL_C
                                                       : HC_LANG_COUNT_;
}

HC_API hc_status_t hc_kernel_create(hc_device_t *d, const hc_kernel_desc_t *desc, hc_kernel_t **out) {
  if (!d || !desc || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_create: NULL argument");
  *out = NULL;
  if (desc->size < offsetof(hc_kernel_desc_t, host_fn) + sizeof(void *) || !desc->name)
    return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_create: desc->size or name not set");
  const hc_backend_ops_t *ops = &d->backend->ops;
  uint32_t langs = d->info.languages;
  hc_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return hc_error(HC_ERR_NO_MEMORY, "hc_kernel_create: out of memory");
  k->dev = d;
  snprintf(k->name, sizeof k->name, "%s", desc->name);
  hc__trace_t *tr = HC__TRACING(d->ctx) ? hc__trace_enter(d->ctx) : NULL;
  const double t0 = tr ? hc_now() : 0;
  int cached = 0; /* the device's program cache had it */
  const double tb = hc_now();
  hc_status_t st;
  if (desc->host_fn && (langs & HC_LANG_BIT(HC_LANG_HOST)) && ops->kernel_create_host) {
    k->lang = HC_LANG_HOST;
    st = ops->kernel_create_host(d->handle, desc->host_fn, &k->handle);
  } else if (desc->source && ops->program_build && ops->kernel_create &&
             (langs & (HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C)))) {
    k->lang = hc__source_language(langs);
    st = get_program(d, k->lang, desc->source, desc->options, &k->program, &cached);
    if (st == HC_OK) {
      st = ops->kernel_create(d->handle, k->program->handle, desc->name, &k->handle);
      if (st != HC_OK) put_program(d, k->program);
    }
    if (st != HC_OK)
      hc_error_prefix(st, "kernel '%s' on %s: ", desc->name, d->id);
    else if (!cached)
      hc__build_charge(d, hc_now() - tb);
  } else {
    free(k);
    hc__trace_leave(tr);
    return hc_error(
        HC_ERR_UNSUPPORTED, "kernel '%s': no kernel in a language %s accepts (offered:%s%s; accepted:%s%s%s)",
        desc->name, d->id, desc->host_fn ? " host" : "", desc->source ? " portable-source" : "",
        (langs & HC_LANG_BIT(HC_LANG_HOST)) ? " host" : "", (langs & HC_LANG_BIT(HC_LANG_OPENCL_C)) ? " opencl-c" : "",
        (langs & HC_LANG_BIT(HC_LANG_CUDA_C)) ? " cuda-c" : "");
  }
  if (tr) {
    char what[96];
    snprintf(what, sizeof what, "build %s on %s", desc->name, d->id);
    hc__trace_host(tr, HC__TRACE_BUILD, what, t0, "cache",
                   st != HC_OK               ? "failed"
                   : k->lang == HC_LANG_HOST ? "host function"
                   : cached                  ? "hit (device)"
                                             : "miss (built, or loaded from the disk cache)");
    hc__trace_leave(tr);
  }
  if (st != HC_OK) {
    free(k);
    return st;
  }
  hc__device_retain(d);
  *out = k;
  return HC_OK;
}

HC_API void hc_kernel_destroy(hc_kernel_t *k) {
  if (!k) return;
  k->dev->backend->ops.kernel_release(k->dev->handle, k->handle);
  if (k->program) put_program(k->dev, k->program);
  hc_device_t *d = k->dev;
  free(k);
  hc_device_close(d);
}

HC_API hc_language_t hc_kernel_language(const hc_kernel_t *k) { return k ? k->lang : HC_LANG_HOST; }

HC_API size_t hc_kernel_max_group_size(const hc_kernel_t *k) {
  if (!k) return 0;
  if (k->dev->backend->ops.kernel_max_group_size)
    return k->dev->backend->ops.kernel_max_group_size(k->dev->handle, k->handle);
  return k->dev->info.max_work_group_size ? k->dev->info.max_work_group_size : 1;
}

HC_API hc_status_t hc_kernel_launch(hc_kernel_t *k, uint32_t dims, const size_t *global, const size_t *local,
                                    uint32_t nargs, const hc_arg_t *args) {
  if (!k || !global) return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: NULL argument");
  if (dims < 1 || dims > 3) return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: dims %u (must be 1..3)", dims);
  if (nargs > HC_MAX_KERNEL_ARGS || (nargs && !args))
    return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: %u arguments (at most %d)", nargs, HC_MAX_KERNEL_ARGS);
  hc_launch_arg_t la[HC_MAX_KERNEL_ARGS];
  for (uint32_t i = 0; i < nargs; i++) {
    la[i].kind = args[i].kind;
    la[i].size = args[i].size;
    la[i].value = args[i].value;
    la[i].mem = NULL;
    if (args[i].kind == HC_ARG_KIND_BUFFER) {
      const hc_buffer_t *b = args[i].value;
      if (!b) return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: argument %u is a NULL buffer", i);
      if (b->dev != k->dev)
        return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: argument %u is a buffer on %s, kernel on %s", i,
                        b->dev->id, k->dev->id);
      la[i].mem = b->mem;
    } else if (args[i].kind == HC_ARG_KIND_SCALAR) {
      if (!args[i].value || !args[i].size || args[i].size > 16)
        return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: argument %u: scalar of size %u", i, args[i].size);
    } else {
      return hc_error(HC_ERR_INVALID_ARG, "hc_kernel_launch: argument %u has unknown kind %u", i, args[i].kind);
    }
  }
  hc_launch_t l;
  memset(&l, 0, sizeof l);
  l.size = sizeof l;
  l.dims = dims;
  for (uint32_t d = 0; d < 3; d++) {
    l.global[d] = d < dims ? global[d] : 1;
    l.local[d] = local ? (d < dims ? local[d] : 1) : 0;
    if (l.global[d] == 0) return HC_OK; /* empty range: nothing to do */
  }
  l.nargs = nargs;
  l.args = la;
  hc_status_t st = hc__cmd_begin(k->dev);
  if (st != HC_OK) return st;
  st = hc__launch_measured(k, &l);
  hc__cmd_end(k->dev);
  return st;
}
