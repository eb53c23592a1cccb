/* Plugin discovery and loading through libltdl.
 *
 * Every *.so file in the search directories is examined in order (sorted by
 * name within a directory). A file that cannot be used is recorded with the
 * reason and skipped; nothing a plugin file contains can make this fail. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ltdl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "descriptor.h"
#include "internal.h"

/* libltdl keeps global state and is not thread-safe: every use goes through
 * this lock, and lt_dlinit/lt_dlexit are reference counted under it. */
static pthread_mutex_t ltdl_lock = PTHREAD_MUTEX_INITIALIZER;

#define reject hc__reject
void hc__reject(hc_context_t *ctx, const char *path, const char *fmt, ...) {
  char reason[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  hc__rejected_t *r = realloc(ctx->rejected, (ctx->nrejected + 1) * sizeof *r);
  if (!r) return;
  ctx->rejected = r;
  r[ctx->nrejected].path = hc__strdup(path);
  r[ctx->nrejected].reason = hc__strdup(reason);
  if (r[ctx->nrejected].path && r[ctx->nrejected].reason) {
    ctx->nrejected++;
  } else {
    free(r[ctx->nrejected].path);
    free(r[ctx->nrejected].reason);
  }
  hc_log(ctx, HC_LOG_WARN, "plugin %s rejected: %s", path, reason);
}

/* NULL for a file that starts like a shared object, else why it cannot be
 * one: a file that cannot be opened says why (a symlink loop is named as
 * such), not that it lacks an ELF header. */
static const char *not_elf(const char *path, char *why, size_t n) {
  unsigned char magic[4] = {0};
  int fd;
  if (hc_open_regular(path, &fd) != HC_OK) { /* a FIFO named *.so would block: say what it is */
    const char *msg = hc_last_error();
    size_t pl = strlen(path);
    if (!strncmp(msg, path, pl) && msg[pl] == ':') msg += pl + 2; /* reject() names the path */
    snprintf(why, n, "%s", msg);
    return why;
  }
  ssize_t got = read(fd, magic, 4);
  close(fd);
  if (got == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F') return NULL;
  snprintf(why, n, "not a shared object (no ELF header)");
  return why;
}

static void unload_handle(void *h) {
  if (!h) return;
  pthread_mutex_lock(&ltdl_lock);
  lt_dlclose((lt_dlhandle)h);
  pthread_mutex_unlock(&ltdl_lock);
}

static int name_taken(hc_context_t *ctx, uint32_t kind, const char *name, const char **first) {
  if (kind == HC_PLUGIN_BACKEND) {
    for (uint32_t i = 0; i < ctx->nbackends; i++)
      if (!strcmp(ctx->backends[i].plugin.desc->name, name)) {
        *first = ctx->backends[i].plugin.path;
        return 1;
      }
  } else {
    for (uint32_t i = 0; i < ctx->nworkloads; i++)
      if (!strcmp(ctx->workloads[i].plugin.desc->name, name)) {
        *first = ctx->workloads[i].plugin.path;
        return 1;
      }
  }
  return 0;
}

static void add_backend(hc_context_t *ctx, const char *path, lt_dlhandle h, const hc_plugin_descriptor_t *d) {
  const hc_backend_ops_t *ops = d->ops;
  hc__backend_t b;
  memset(&b, 0, sizeof b);
  memcpy(&b.ops, ops, hc__ops_copy_bytes(ops->size, sizeof b.ops));
  /* Not started here: init runs when the backend is first needed
   * (hc__backend_start), so a run that needs one backend never starts (or
   * crashes in) another. */
  hc__backend_t *nb = realloc(ctx->backends, (ctx->nbackends + 1) * sizeof *nb);
  if (!nb) {
    unload_handle(h);
    return;
  }
  b.plugin.path = hc__strdup(path);
  b.plugin.handle = h;
  b.plugin.desc = d;
  ctx->backends = nb;
  ctx->backends[ctx->nbackends++] = b;
}

static void add_workload(hc_context_t *ctx, const char *path, lt_dlhandle h, const hc_plugin_descriptor_t *d) {
  const hc_workload_ops_t *ops = d->ops;
  hc__workload_t *nw = realloc(ctx->workloads, (ctx->nworkloads + 1) * sizeof *nw);
  if (!nw) {
    unload_handle(h);
    return;
  }
  ctx->workloads = nw;
  hc__workload_t *w = &ctx->workloads[ctx->nworkloads];
  memset(w, 0, sizeof *w);
  memcpy(&w->ops, ops, hc__ops_copy_bytes(ops->size, sizeof w->ops));
  w->plugin.path = hc__strdup(path);
  w->plugin.handle = h;
  w->plugin.desc = d;
  ctx->nworkloads++;
}

static void load_file(hc_context_t *ctx, const char *path) {
  struct stat st;
  char why[512];
  if (stat(path, &st) == 0 && !hc__stat_trusted(&st, path, why, sizeof why)) {
    reject(ctx, path, "not trusted: %s", why);
    return;
  }
  if (not_elf(path, why, sizeof why)) {
    reject(ctx, path, "%s", why);
    return;
  }
  int probed = hc__probe_plugin(ctx, path, why, sizeof why);
  if (!probed) {
    reject(ctx, path, "%s", why);
    return;
  }
  pthread_mutex_lock(&ltdl_lock);
  lt_dladvise advise;
  lt_dlhandle h = NULL;
  if (lt_dladvise_init(&advise) == 0) {
    lt_dladvise_local(&advise);
    h = lt_dlopenadvise(path, advise);
    lt_dladvise_destroy(&advise);
  }
  const char *err = h ? NULL : lt_dlerror();
  char errbuf[512];
  snprintf(errbuf, sizeof errbuf, "%s", err ? err : "unknown error");
  const hc_plugin_descriptor_t *d = h ? lt_dlsym(h, HC_PLUGIN_SYMBOL) : NULL;
  pthread_mutex_unlock(&ltdl_lock);
  if (!h) {
    reject(ctx, path, "cannot be loaded: %s", errbuf);
    return;
  }
  if (!d) {
    reject(ctx, path, "no descriptor symbol '%s'", HC_PLUGIN_SYMBOL);
    unload_handle(h);
    return;
  }
  if (probed == 2 && d->kind == HC_PLUGIN_BACKEND) {
    /* A workload runs nothing until it is used; a backend's init is what
     * can take the process down (PoCL aborts when it cannot start threads
     * under a process limit), and the probe that guards it could not run. */
    reject(ctx, path, "backend not started: its isolation probe could not be run (%s)", hc_last_error());
    unload_handle(h);
    return;
  }
  hc__register_plugin(ctx, path, h, d);
}

void hc__register_plugin(hc_context_t *ctx, const char *path, void *handle, const hc_plugin_descriptor_t *d) {
  lt_dlhandle h = handle;
  char why[512];
  if (hc__descriptor_problem(d, why, sizeof why)) {
    reject(ctx, path, "%s", why);
    unload_handle(h);
    return;
  }
  const char *first = NULL;
  if (name_taken(ctx, d->kind, d->name, &first)) {
    reject(ctx, path, "duplicate %s name '%s' (first loaded from %s)",
           d->kind == HC_PLUGIN_BACKEND ? "backend" : "workload", d->name, first);
    unload_handle(h);
    return;
  }
  if (hc__descriptor_ops_problem(d, why, sizeof why)) {
    reject(ctx, path, "%s", why);
    unload_handle(h);
    return;
  }
  if (d->kind == HC_PLUGIN_BACKEND)
    add_backend(ctx, path, h, d);
  else
    add_workload(ctx, path, h, d);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void scan_dir(hc_context_t *ctx, const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(dp))) {
    size_t len = strlen(de->d_name);
    if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    if ((names[n] = hc__strdup(de->d_name))) n++;
  }
  closedir(dp);
  qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    load_file(ctx, path);
    free(names[i]);
  }
  free(names);
}

/* Loading (probing, dlopen) and backend starts (context.c) are serialised
 * process-wide: plugin inits touch process state (PoCL calls setenv, for
 * one; two of its inits at once in two contexts crash) that must not race
 * with another context's loading or with a probe's posix_spawn. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
void hc__plugins_lock(void) { pthread_mutex_lock(&load_lock); }
void hc__plugins_unlock(void) { pthread_mutex_unlock(&load_lock); }

void hc__load_plugins(hc_context_t *ctx) {
  pthread_mutex_lock(&load_lock);
  pthread_mutex_lock(&ltdl_lock);
  lt_dlinit();
  pthread_mutex_unlock(&ltdl_lock);
  for (uint32_t i = 0; i < ctx->nsearch_dirs; i++) {
    if (ctx->search_refused[i])
      reject(ctx, ctx->search_dirs[i], "plugin directory refused: %s", ctx->search_refused[i]);
    else
      scan_dir(ctx, ctx->search_dirs[i]);
  }
  pthread_mutex_unlock(&load_lock);
}

void hc__unload_plugins(hc_context_t *ctx) {
  for (uint32_t i = 0; i < ctx->nbackends; i++) {
    hc__backend_t *b = &ctx->backends[i];
    if (b->started == 1 && b->ops.fini) b->ops.fini(b->state);
    unload_handle(b->plugin.handle);
    free(b->plugin.path);
    free(b->failed_why);
  }
  for (uint32_t i = 0; i < ctx->nworkloads; i++) {
    unload_handle(ctx->workloads[i].plugin.handle);
    free(ctx->workloads[i].plugin.path);
  }
  for (uint32_t i = 0; i < ctx->nrejected; i++) {
    free(ctx->rejected[i].path);
    free(ctx->rejected[i].reason);
  }
  free(ctx->backends);
  free(ctx->workloads);
  free(ctx->rejected);
  ctx->backends = NULL;
  ctx->workloads = NULL;
  ctx->rejected = NULL;
  ctx->nbackends = ctx->nworkloads = ctx->nrejected = 0;
  pthread_mutex_lock(&ltdl_lock);
  lt_dlexit();
  pthread_mutex_unlock(&ltdl_lock);
}
