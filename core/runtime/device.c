/* Devices: lookup by spec, opening (one shared handle per device), timers. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hc/config.h"
#include "internal.h"

/* Enumerating devices starts every backend; an index below the devices
 * started so far needs none started. */
HC_API uint32_t hc_device_count(const hc_context_t *ctx) {
  if (!ctx) return 0;
  hc__backends_start_all(ctx);
  return hc__ndevices(ctx);
}

static int have_index(const hc_context_t *ctx, uint32_t i) {
  if (i < hc__ndevices(ctx)) return 1;
  hc__backends_start_all(ctx);
  return i < hc__ndevices(ctx);
}

HC_API const char *hc_device_id(const hc_context_t *ctx, uint32_t i) {
  return ctx && have_index(ctx, i) ? ctx->devices[i].id : NULL;
}

HC_API const char *hc_device_pci_bus_id(const hc_context_t *ctx, uint32_t i) {
  return ctx && have_index(ctx, i) ? ctx->devices[i].pci_bus_id : NULL;
}

HC_API hc_status_t hc_device_query(const hc_context_t *ctx, uint32_t i, hc_device_info_t *info) {
  if (!ctx || !info || !have_index(ctx, i))
    return hc_error(HC_ERR_INVALID_ARG, "hc_device_query: device index %u out of range", i);
  *info = ctx->devices[i].info;
  return HC_OK;
}

/* The one ranking behind --device=auto (a performance history would be
 * consulted here). Kinds first: GPU, then accelerator, then CPU, and a
 * device of type OTHER last, below the CPU: an unknown kind of device has
 * declared nothing that says it is faster than the host. Within a kind, the
 * native backend of that device (CUDA on an NVIDIA GPU, host-language
 * kernels on a CPU), then the declared capability: the fp32 peak where the
 * backend gives one, else compute units x clock, with the memory bandwidth
 * breaking ties. */
static double auto_score(const hc__device_slot_t *s) {
  static const double type_rank[] = {
      [HC_DEVICE_CPU] = 1, [HC_DEVICE_GPU] = 3, [HC_DEVICE_ACCELERATOR] = 2, [HC_DEVICE_OTHER] = 0};
  double r = s->info.type < HC_DEVICE_TYPE_COUNT_ ? type_rank[s->info.type] : 0;
  /* GFLOP/s-like either way: the peak, or cores x GHz when it is unknown. */
  double speed = s->info.peak_fp32_gflops > 0
                     ? s->info.peak_fp32_gflops
                     : (double)s->info.compute_units * (s->info.clock_mhz ? s->info.clock_mhz : 1000) * 1e-3;
  double native = !strcmp(s->info.platform, "CUDA") ||
                          (s->info.type == HC_DEVICE_CPU && (s->info.languages & HC_LANG_BIT(HC_LANG_HOST)))
                      ? 0.5
                      : 0;
  double bw = s->info.peak_bandwidth_gbs > 0 ? s->info.peak_bandwidth_gbs : 0;
  if (speed > 1e9) speed = 1e9; /* keep the terms apart */
  return r * 1e13 + native * 1e12 + speed * 1e3 + (bw < 1e3 ? bw : 999);
}

HC_API hc_status_t hc_device_find(const hc_context_t *ctx, const char *spec, uint32_t *index) {
  if (!ctx || !spec || !index) return hc_error(HC_ERR_INVALID_ARG, "hc_device_find: NULL argument");
  if (!strcmp(spec, "auto")) {
    const uint32_t n = hc_device_count(ctx);
    if (!n) return hc_error(HC_ERR_NO_DEVICE, "no device available (no backend reports a device)");
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
      if (auto_score(&ctx->devices[i]) > auto_score(&ctx->devices[best])) best = i;
    *index = best;
    return HC_OK;
  }
  const char *colon = strchr(spec, ':');
  size_t blen = colon ? (size_t)(colon - spec) : strlen(spec);
  long want = 0;
  if (colon) {
    char *end = NULL;
    want = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || want < 0)
      return hc_error(HC_ERR_INVALID_ARG, "device '%s': expected BACKEND or BACKEND:INDEX or auto", spec);
  }
  int backend_known = 0;
  for (uint32_t b = 0; b < ctx->nbackends; b++) {
    hc__backend_t *be = &ctx->backends[b];
    if (strlen(be->plugin.desc->name) != blen || strncmp(be->plugin.desc->name, spec, blen)) continue;
    backend_known = 1;
    hc__backend_start(ctx, be); /* this one only */
    uint32_t n = 0;
    const uint32_t total = hc__ndevices(ctx);
    for (uint32_t i = 0; i < total; i++) {
      if (ctx->devices[i].backend != be) continue;
      if ((long)n == want) {
        *index = i;
        return HC_OK;
      }
      n++;
    }
    const char *why = hc_backend_status(ctx, b);
    if (n == 0)
      return hc_error(HC_ERR_NO_DEVICE, "backend '%.*s' has no device%s%s", (int)blen, spec, why ? ": " : "",
                      why ? why : "");
    return hc_error(HC_ERR_NO_DEVICE, "device '%s' does not exist: backend '%.*s' has %u device(s)", spec, (int)blen,
                    spec, n);
  }
  if (!backend_known) {
    char names[512] = "";
    size_t len = 0;
    for (uint32_t b = 0; b < ctx->nbackends && len < sizeof names - 70; b++)
      len +=
          (size_t)snprintf(names + len, sizeof names - len, "%s%s", b ? ", " : "", ctx->backends[b].plugin.desc->name);
    return hc_error(HC_ERR_NO_DEVICE, "unknown backend '%.*s' (loaded backends: %s)", (int)blen, spec,
                    len ? names : "none");
  }
  return hc_error(HC_ERR_NO_DEVICE, "device '%s' not found", spec);
}

HC_API hc_status_t hc_device_find_auto(hc_context_t *ctx, const char *workload, uint32_t *index) {
  if (!ctx || !index) return hc_error(HC_ERR_INVALID_ARG, "hc_device_find_auto: NULL argument");
  int found = 0;
  uint32_t best = 0;
  const uint32_t n = hc_device_count(ctx);
  for (uint32_t i = 0; i < n; i++) {
    if (workload && !hc_workload_can_run(ctx, workload, i, NULL)) continue;
    if (!found || auto_score(&ctx->devices[i]) > auto_score(&ctx->devices[best])) best = i;
    found = 1;
  }
  if (!found)
    return hc_error(HC_ERR_NO_DEVICE, "no device available%s%s%s", workload ? " that can run workload '" : "",
                    workload ? workload : "", workload ? "'" : "");
  *index = best;
  return HC_OK;
}

HC_API hc_status_t hc_device_open(hc_context_t *ctx, uint32_t index, hc_device_t **out) {
  if (!ctx || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_device_open: NULL argument");
  *out = NULL;
  if (!have_index(ctx, index))
    return hc_error(HC_ERR_NO_DEVICE, "device index %u out of range (%u devices)", index, hc__ndevices(ctx));
  pthread_mutex_lock(&ctx->lock);
  hc__device_slot_t *s = &ctx->devices[index];
  if (s->open) {
    s->open->refs++;
    *out = s->open;
    pthread_mutex_unlock(&ctx->lock);
    return HC_OK;
  }
  hc_device_t *d = calloc(1, sizeof *d);
  if (!d) {
    pthread_mutex_unlock(&ctx->lock);
    return hc_error(HC_ERR_NO_MEMORY, "hc_device_open: out of memory");
  }
  hc_status_t st = s->backend->ops.device_open(s->backend->state, s->local_index, &d->handle);
  if (st != HC_OK) {
    pthread_mutex_unlock(&ctx->lock);
    free(d);
    return hc_error_prefix(st, "opening %s: ", s->id);
  }
  d->ctx = ctx;
  d->backend = s->backend;
  d->index = index;
  d->local_index = s->local_index;
  d->refs = 1;
  d->info = s->info;
  snprintf(d->id, sizeof d->id, "%s", s->id);
  pthread_mutex_init(&d->lock, NULL);
  pthread_mutexattr_t ra;
  pthread_mutexattr_init(&ra);
  pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&d->run_lock, &ra);
  pthread_mutex_init(&d->cmd_lock, NULL);
  pthread_mutexattr_destroy(&ra);
  hc__host_pin_config(d);
  s->open = d;
  *out = d;
  pthread_mutex_unlock(&ctx->lock);
  return HC_OK;
}

HC_API uint32_t hc_device_index(const hc_device_t *d) { return d ? d->index : UINT32_MAX; }

void hc__device_retain(hc_device_t *d) {
  pthread_mutex_lock(&d->ctx->lock);
  d->refs++;
  pthread_mutex_unlock(&d->ctx->lock);
}

HC_API void hc_device_close(hc_device_t *d) {
  if (!d) return;
  hc_context_t *ctx = d->ctx;
  pthread_mutex_lock(&ctx->lock);
  if (--d->refs > 0) {
    pthread_mutex_unlock(&ctx->lock);
    return;
  }
  ctx->devices[d->index].open = NULL;
  pthread_mutex_unlock(&ctx->lock);
  hc__kept_flush(d);
  hc__trace_device_sync(d); /* its commands' records go before it does */
  for (hc__program_t *p = d->programs, *next; p; p = next) {
    next = p->next;
    if (p->refs > 0) hc_log(ctx, HC_LOG_WARN, "%s closed with %d kernel(s) still alive", d->id, p->refs);
    if (d->backend->ops.program_release) d->backend->ops.program_release(d->handle, p->handle);
    free(p);
  }
  d->backend->ops.device_close(d->handle);
  pthread_mutex_destroy(&d->lock);
  pthread_mutex_destroy(&d->run_lock);
  pthread_mutex_destroy(&d->cmd_lock);
  free(d->launched);
  free(d);
}

HC_API const hc_device_info_t *hc_device_info(const hc_device_t *d) { return d ? &d->info : NULL; }
HC_API const char *hc_device_name(const hc_device_t *d) { return d ? d->id : "?"; }
HC_API hc_context_t *hc_device_context(const hc_device_t *d) { return d ? d->ctx : NULL; }

HC_API void hc_device_lock(hc_device_t *d) {
  if (d) pthread_mutex_lock(&d->run_lock);
}

HC_API void hc_device_unlock(hc_device_t *d) {
  if (d) pthread_mutex_unlock(&d->run_lock);
}

HC_API hc_status_t hc_device_finish(hc_device_t *d) {
  if (!d) return hc_error(HC_ERR_INVALID_ARG, "hc_device_finish: NULL device");
  hc_status_t st = d->backend->ops.finish(d->handle);
  if (HC__TRACING(d->ctx)) hc__trace_device_sync(d);
  return st;
}

hc_status_t hc__device_bind_thread(hc_device_t *d, int bind) {
  return d->backend->ops.device_bind_thread ? d->backend->ops.device_bind_thread(d->handle, bind) : HC_ERR_UNSUPPORTED;
}

hc_status_t hc__device_set_workers(hc_device_t *d, uint32_t workers) {
  if (!d->backend->ops.device_set_workers) return HC_ERR_UNSUPPORTED;
  pthread_mutex_lock(&d->cmd_lock); /* between commands */
  hc_status_t st = d->backend->ops.device_set_workers(d->handle, workers);
  if (st == HC_OK) {
    if (!d->all_units) d->all_units = d->info.compute_units;
    d->info.compute_units = workers && workers < d->all_units ? workers : d->all_units;
  }
  pthread_mutex_unlock(&d->cmd_lock);
  return st;
}

/* A header before the memory hc_host_alloc gives says where it came from,
 * so that hc_host_free gives it back the same way. */
enum { HOST_HEAD = 64, HOST_PINNED = 0x68637069, HOST_PLAIN = 0x68636d61 };

HC_API hc_status_t hc_host_alloc(hc_device_t *d, size_t bytes, void **out) {
  if (!d || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_host_alloc: NULL argument");
  *out = NULL;
  if (bytes > SIZE_MAX - HOST_HEAD) return hc_error(HC_ERR_NO_MEMORY, "hc_host_alloc: %zu bytes", bytes);
  const hc_backend_ops_t *ops = &d->backend->ops;
  char *p = NULL;
  uint32_t kind = HOST_PINNED;
  long long pinned = 1;
  hc_config_int("HC_HOST_PINNED", &pinned); /* a bad value fails the context first */
  if (pinned && ops->host_alloc && ops->host_alloc(d->handle, bytes + HOST_HEAD, (void **)&p) == HC_OK && p &&
      (uintptr_t)p % HOST_HEAD) {
    ops->host_free(d->handle, p); /* not aligned as promised: ordinary memory instead */
    p = NULL;
  }
  if (!p) {
    kind = HOST_PLAIN;
    if (posix_memalign((void **)&p, HOST_HEAD, bytes + HOST_HEAD) != 0) p = NULL;
  }
  if (!p) return hc_error(HC_ERR_NO_MEMORY, "cannot allocate %zu bytes of host memory for %s", bytes, d->id);
  memcpy(p, &kind, sizeof kind);
  *out = p + HOST_HEAD;
  return HC_OK;
}

HC_API void hc_host_free(hc_device_t *d, void *mem) {
  if (!d || !mem) return;
  char *p = (char *)mem - HOST_HEAD;
  uint32_t kind;
  memcpy(&kind, p, sizeof kind);
  if (kind == HOST_PINNED && d->backend->ops.host_free)
    d->backend->ops.host_free(d->handle, p);
  else
    free(p);
}

/* The backend's span begins at the span's first command (hc__timer_mark):
 * a start event recorded at hc_device_timer_begin would count the host's
 * work before the first launch (e.g. planning a grid assignment) as device
 * time, where OpenCL's span, from its first command's start, does not. */
HC_API hc_status_t hc_device_timer_begin(hc_device_t *d) {
  if (!d) return hc_error(HC_ERR_INVALID_ARG, "hc_device_timer_begin: NULL device");
  pthread_mutex_lock(&d->cmd_lock);
  d->timer = 1; /* a new span replaces one left open */
  __atomic_add_fetch(&d->timer_spans, 1, __ATOMIC_RELAXED);
  d->timer_t0 = HC__TRACING(d->ctx) ? hc_now() : 0;
  d->timer_owner = pthread_self();
  pthread_mutex_unlock(&d->cmd_lock);
  return HC_OK;
}

uint32_t hc__device_timer_spans(const hc_device_t *d) { return __atomic_load_n(&d->timer_spans, __ATOMIC_RELAXED); }

/* With cmd_lock held: opens the span at the owner's first command. */
hc_status_t hc__timer_mark(hc_device_t *d) {
  if (d->timer != 1 || !pthread_equal(d->timer_owner, pthread_self())) return HC_OK;
  hc_status_t st = d->backend->ops.timer_begin(d->handle);
  if (st == HC_OK) d->timer = 2;
  return st;
}

hc_status_t hc__cmd_begin(hc_device_t *d) {
  pthread_mutex_lock(&d->cmd_lock);
  hc_status_t st = hc__timer_mark(d);
  if (st != HC_OK) pthread_mutex_unlock(&d->cmd_lock);
  return st;
}

void hc__cmd_end(hc_device_t *d) { pthread_mutex_unlock(&d->cmd_lock); }

HC_API hc_status_t hc_device_timer_end(hc_device_t *d, double *seconds) {
  if (!d || !seconds) return hc_error(HC_ERR_INVALID_ARG, "hc_device_timer_end: NULL argument");
  pthread_mutex_lock(&d->cmd_lock);
  const int state = d->timer;
  d->timer = 0;
  *seconds = 0;
  hc_status_t st = HC_OK;
  if (!state)
    st = hc_error(HC_ERR_INVALID_ARG, "hc_device_timer_end: no span is open on %s (call hc_device_timer_begin first)",
                  d->id);
  else if (state == 2) /* 1: nothing was queued, an empty span */
    st = d->backend->ops.timer_end(d->handle, seconds);
  const double t0 = d->timer_t0;
  d->timer_t0 = 0;
  pthread_mutex_unlock(&d->cmd_lock);
  if (HC__TRACING(d->ctx) && state) {
    hc__trace_device_sync(d); /* the span's end waited for the queue */
    if (st == HC_OK && state == 2 && t0 > 0) hc__trace_timer(d, t0, *seconds);
  }
  return st;
}

HC_API hc_status_t hc_device_check_memory(hc_device_t *d, uint64_t bytes, const char *what) {
  if (!d) return hc_error(HC_ERR_INVALID_ARG, "hc_device_check_memory: NULL device");
  uint64_t avail = d->info.global_mem_bytes;
  if (avail && bytes > avail)
    return hc_error(HC_ERR_DEVICE_MEMORY, "%s needs %.3g GB (%llu bytes) but %s has %.3g GB (%llu bytes) of memory",
                    what ? what : "this run", (double)bytes / 1e9, (unsigned long long)bytes, d->id,
                    (double)avail / 1e9, (unsigned long long)avail);
  return HC_OK;
}
