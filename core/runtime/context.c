/* Contexts: search path, logging, registry queries. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hc_config.h"
#include "hc/trace.h"
#include "internal.h"

/* Adds a search-path entry. A directory that exists must be trusted
 * (trust.c: the user's or root's, writable by no one else, after following
 * links); one that is not is kept on the path with the reason, so that the
 * loader lists it as refused. */
static void add_entry(hc_context_t *ctx, const char *dir, const char *source, const char *refused) {
  if (!dir || !*dir) return;
  char real[PATH_MAX], why[1024];
  const char *use = realpath(dir, real) ? real : dir;
  for (uint32_t i = 0; i < ctx->nsearch_dirs; i++)
    if (!strcmp(ctx->search_dirs[i], use)) return;
  if (!refused && !access(use, F_OK) && !hc__dir_trusted(use, 1, why, sizeof why)) refused = why;
  uint32_t k = ctx->nsearch_dirs;
  char **n = realloc(ctx->search_dirs, (k + 1) * sizeof *n);
  if (n) ctx->search_dirs = n;
  const char **src = realloc(ctx->search_sources, (k + 1) * sizeof *src);
  if (src) ctx->search_sources = src;
  char **ref = realloc(ctx->search_refused, (k + 1) * sizeof *ref);
  if (ref) ctx->search_refused = ref;
  if (!n || !src || !ref) return;
  n[k] = hc__strdup(use);
  ref[k] = refused ? hc__strdup(refused) : NULL;
  src[k] = source;
  if (!n[k] || (refused && !ref[k])) {
    free(n[k]);
    free(ref[k]);
    return;
  }
  ctx->nsearch_dirs++;
}

static void add_dir(hc_context_t *ctx, const char *dir, const char *source) { add_entry(ctx, dir, source, NULL); }

/* dir/../lib/hc/plugins relative to a file. */
static void add_relative(hc_context_t *ctx, const char *file, const char *rel, const char *source) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", file);
  char *slash = strrchr(buf, '/');
  if (!slash) return;
  *slash = '\0';
  char dir[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/%s", buf, rel);
  add_dir(ctx, dir, source);
}

/* The order: the caller's directories, HC_PLUGIN_PATH, then the plugins
 * that belong to the libhc in use (beside it: the build tree's own plugins
 * when run from a build, $PREFIX/lib/hc/plugins when installed) and to the
 * running binary, and only then the configured install directory, so that
 * an older installed copy never shadows what was just built. */
static void build_search_path(hc_context_t *ctx, const hc_context_options_t *o) {
  for (uint32_t i = 0; o && o->plugin_dirs && i < o->plugin_dir_count; i++)
    add_dir(ctx, o->plugin_dirs[i], "caller (--plugin-dir)");
  const char *env = NULL;
  hc_config_str("HC_PLUGIN_PATH", &env);
  if (env && !(o && o->no_env_path)) {
    char *copy = hc__strdup(env), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save))
      add_entry(ctx, tok, "HC_PLUGIN_PATH",
                tok[0] == '/' ? NULL
                              : "a relative HC_PLUGIN_PATH entry (it would be resolved against the working "
                                "directory): give an absolute path");
    free(copy);
  }
  if (o && o->no_default_dirs) return;
  /* Beside the library itself. */
  Dl_info info;
  if (dladdr((void *)hc_context_create, &info) && info.dli_fname)
    add_relative(ctx, info.dli_fname, "hc/plugins", "beside libhc");
  /* The build tree next to the running binary (build/bin -> build/lib). */
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    add_relative(ctx, exe, "../lib/hc/plugins", "beside the program");
  }
  add_dir(ctx, HC_INSTALL_PLUGIN_DIR, "install directory");
}

static void stderr_log(void *user, hc_log_level_t level, const char *msg) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  (void)user;
  fprintf(stderr, "hc %s: %s\n", names[level <= HC_LOG_DEBUG ? level : 0], msg);
}

/* Starts a backend: init, then its devices appended to the context's
 * (slots reserved at creation, so a slot never moves under a reader). A
 * backend whose init fails stays listed, with the reason as its status,
 * and shows no device. */
static void start_locked(hc_context_t *ctx, hc__backend_t *be) {
  if (be->started) return;
  hc_error(HC_OK, "(no message)");
  hc_status_t st = be->ops.init(ctx, &be->state);
  if (st != HC_OK) {
    char why[1024];
    snprintf(why, sizeof why, "init failed: %s: %s", hc_status_name(st), hc_last_error());
    be->failed_why = hc__strdup(why);
    hc_log(ctx, HC_LOG_WARN, "backend '%s' (%s): %s", be->plugin.desc->name, be->plugin.path, why);
    __atomic_store_n(&be->started, -1, __ATOMIC_RELEASE);
    return;
  }
  uint32_t n = be->ops.device_count(be->state), total = ctx->ndevices;
  if (n > HC__BACKEND_MAX_DEVICES) n = HC__BACKEND_MAX_DEVICES;
  be->ndevices = 0;
  for (uint32_t i = 0; i < n; i++) {
    hc__device_slot_t *s = &ctx->devices[total];
    memset(s, 0, sizeof *s);
    s->backend = be;
    s->local_index = i;
    s->info.size = sizeof s->info;
    if (be->ops.device_info(be->state, i, &s->info) != HC_OK) {
      hc_log(ctx, HC_LOG_WARN, "%s:%u: device info failed: %s", be->plugin.desc->name, i, hc_last_error());
      continue;
    }
    s->info.size = sizeof s->info;
    s->pci_bus_id[0] = '\0';
    if (be->ops.device_pci_bus_id &&
        be->ops.device_pci_bus_id(be->state, i, s->pci_bus_id, sizeof s->pci_bus_id) != HC_OK)
      s->pci_bus_id[0] = '\0';
    s->pci_bus_id[sizeof s->pci_bus_id - 1] = '\0';
    snprintf(s->id, sizeof s->id, "%s:%u", be->plugin.desc->name, i);
    total++;
    be->ndevices++;
  }
  hc_log(ctx, HC_LOG_DEBUG, "backend '%s' started: %u device(s)", be->plugin.desc->name, be->ndevices);
  __atomic_store_n(&ctx->ndevices, total, __ATOMIC_RELEASE);
  __atomic_store_n(&be->started, 1, __ATOMIC_RELEASE);
}

void hc__backend_start(const hc_context_t *cctx, hc__backend_t *be) {
  if (__atomic_load_n(&be->started, __ATOMIC_ACQUIRE)) return;
  hc_context_t *ctx = (hc_context_t *)cctx; /* see internal.h */
  hc__plugins_lock();
  start_locked(ctx, be);
  hc__plugins_unlock();
}

void hc__backends_start_all(const hc_context_t *cctx) {
  hc_context_t *ctx = (hc_context_t *)cctx;
  if (__atomic_load_n(&ctx->all_started, __ATOMIC_ACQUIRE)) return;
  hc__plugins_lock();
  for (uint32_t b = 0; b < ctx->nbackends; b++) start_locked(ctx, &ctx->backends[b]);
  __atomic_store_n(&ctx->all_started, 1, __ATOMIC_RELEASE);
  hc__plugins_unlock();
}

HC_API hc_status_t hc_context_create(const hc_context_options_t *opts, hc_context_t **out) {
  if (!out) return hc_error(HC_ERR_INVALID_ARG, "hc_context_create: out is NULL");
  *out = NULL;
  if (opts && opts->size < sizeof(uint32_t) * 2)
    return hc_error(HC_ERR_INVALID_ARG, "hc_context_create: opts->size not set");
  /* Every HC_* variable, checked once: a bad value fails here, naming
   * itself, rather than being ignored wherever it is read. */
  hc_status_t cst = hc_config_check();
  if (cst != HC_OK) return cst;
  hc_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return hc_error(HC_ERR_NO_MEMORY, "hc_context_create: out of memory");
  pthread_mutex_init(&ctx->lock, NULL);
  hc_context_options_t o;
  memset(&o, 0, sizeof o);
  if (opts) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
  ctx->log = o.log;
  ctx->log_user = o.log_user;
  ctx->log_level = o.log_level;
  ctx->progress = o.progress;
  ctx->progress_user = o.progress_user;
  long long lv = -1;
  hc_config_int("HC_LOG", &lv); /* checked above */
  if (lv >= 0) {
    ctx->log_level = (hc_log_level_t)lv;
    if (!ctx->log) ctx->log = stderr_log;
  }
  build_search_path(ctx, opts ? &o : NULL);
  for (uint32_t i = 0; i < ctx->nsearch_dirs; i++)
    hc_log(ctx, HC_LOG_DEBUG, "plugin search dir %u: %s", i, ctx->search_dirs[i]);
  hc__load_plugins(ctx);
  ctx->devices = calloc(ctx->nbackends ? ctx->nbackends * HC__BACKEND_MAX_DEVICES : 1, sizeof *ctx->devices);
  if (!ctx->devices) {
    hc_context_destroy(ctx);
    return hc_error(HC_ERR_NO_MEMORY, "hc_context_create: out of memory");
  }
  *out = ctx;
  return HC_OK;
}

HC_API void hc_context_destroy(hc_context_t *ctx) {
  if (!ctx) return;
  /* A trace still running is completed, so its file is whole. */
  if (hc_trace_active(ctx) && hc_trace_stop(ctx) != HC_OK)
    hc_log(ctx, HC_LOG_WARN, "at context destroy: %s", hc_last_error());
  free(ctx->trace_result);
  /* Kept buffers hold the devices that page-locked them: all go first. */
  for (uint32_t i = 0; i < hc__ndevices(ctx); i++)
    if (ctx->devices[i].open) hc__kept_flush(ctx->devices[i].open);
  for (uint32_t i = 0; i < hc__ndevices(ctx); i++) {
    hc_device_t *d = ctx->devices[i].open;
    if (d) {
      hc_log(ctx, HC_LOG_WARN, "device %s still open at context destroy: closing it", d->id);
      d->refs = 1;
      hc_device_close(d);
    }
  }
  free(ctx->devices);
  hc__unload_plugins(ctx);
  for (uint32_t i = 0; i < ctx->nsearch_dirs; i++) {
    free(ctx->search_dirs[i]);
    free(ctx->search_refused[i]);
  }
  free(ctx->search_dirs);
  free(ctx->search_refused);
  free(ctx->search_sources);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

HC_API void hc_log(hc_context_t *ctx, hc_log_level_t level, const char *fmt, ...) {
  if (!ctx || !ctx->log || level > ctx->log_level) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx->log(ctx->log_user, level, msg);
}

static void summarize(const hc__plugin_t *p, hc_plugin_summary_t *out) {
  out->name = p->desc->name;
  out->version = p->desc->version;
  out->summary = p->desc->summary;
  out->path = p->path;
}

HC_API uint32_t hc_backend_count(const hc_context_t *ctx) { return ctx ? ctx->nbackends : 0; }

HC_API hc_status_t hc_backend_get(const hc_context_t *ctx, uint32_t i, hc_plugin_summary_t *out) {
  if (!ctx || !out || i >= ctx->nbackends)
    return hc_error(HC_ERR_INVALID_ARG, "hc_backend_get: index %u out of range", i);
  summarize(&ctx->backends[i].plugin, out);
  return HC_OK;
}

HC_API const char *hc_backend_status(const hc_context_t *ctx, uint32_t i) {
  if (!ctx || i >= ctx->nbackends) return NULL;
  hc__backend_t *b = &ctx->backends[i];
  hc__backend_start(ctx, b);
  if (b->started < 0) return b->failed_why;
  return b->ops.status_message ? b->ops.status_message(b->state) : NULL;
}

HC_API uint32_t hc_workload_count(const hc_context_t *ctx) { return ctx ? ctx->nworkloads : 0; }

HC_API hc_status_t hc_workload_get(const hc_context_t *ctx, uint32_t i, hc_plugin_summary_t *out) {
  if (!ctx || !out || i >= ctx->nworkloads)
    return hc_error(HC_ERR_INVALID_ARG, "hc_workload_get: index %u out of range", i);
  summarize(&ctx->workloads[i].plugin, out);
  return HC_OK;
}

HC_API uint32_t hc_search_dir_count(const hc_context_t *ctx) { return ctx ? ctx->nsearch_dirs : 0; }

HC_API hc_status_t hc_search_dir_get(const hc_context_t *ctx, uint32_t i, const char **dir, const char **source,
                                     const char **refused) {
  if (!ctx || i >= ctx->nsearch_dirs)
    return hc_error(HC_ERR_INVALID_ARG, "hc_search_dir_get: index %u out of range", i);
  if (dir) *dir = ctx->search_dirs[i];
  if (source) *source = ctx->search_sources[i];
  if (refused) *refused = ctx->search_refused[i];
  return HC_OK;
}

HC_API uint32_t hc_rejected_count(const hc_context_t *ctx) { return ctx ? ctx->nrejected : 0; }

HC_API hc_status_t hc_rejected_get(const hc_context_t *ctx, uint32_t i, const char **path, const char **reason) {
  if (!ctx || i >= ctx->nrejected) return hc_error(HC_ERR_INVALID_ARG, "hc_rejected_get: index %u out of range", i);
  if (path) *path = ctx->rejected[i].path;
  if (reason) *reason = ctx->rejected[i].reason;
  return HC_OK;
}

hc__workload_t *hc__find_workload(const hc_context_t *ctx, const char *name) {
  for (uint32_t i = 0; ctx && name && i < ctx->nworkloads; i++)
    if (!strcmp(ctx->workloads[i].plugin.desc->name, name)) return &ctx->workloads[i];
  return NULL;
}

const hc_workload_ops_t *hc__workload_ops(const hc_context_t *ctx, const char *name) {
  const hc__workload_t *w = hc__find_workload(ctx, name);
  return w ? &w->ops : NULL;
}

void hc__count_transfer(hc_context_t *ctx, int kind, size_t bytes, double seconds) {
  pthread_mutex_lock(&ctx->lock);
  hc_transfer_stats_t *t = &ctx->transfers;
  if (kind == HC__TO_DEVICE)
    t->to_device_count++, t->to_device_bytes += bytes;
  else if (kind == HC__TO_HOST)
    t->to_host_count++, t->to_host_bytes += bytes;
  else
    t->cross_device_count++, t->cross_device_bytes += bytes;
  t->seconds += seconds;
  pthread_mutex_unlock(&ctx->lock);
}

HC_API void hc_transfer_stats_get(const hc_context_t *ctx, hc_transfer_stats_t *out) {
  if (!ctx || !out) return;
  pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
  *out = ctx->transfers;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
}

HC_API void hc_transfer_stats_reset(hc_context_t *ctx) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->lock);
  memset(&ctx->transfers, 0, sizeof ctx->transfers);
  pthread_mutex_unlock(&ctx->lock);
}
