/* Plugin isolation: before a plugin is loaded into the host process, it is
 * loaded once in a child process (hc-plugin-scanner) with a timeout. The
 * child reports over a pipe (its descriptor 3) once it has read and
 * validated the descriptor and run what the host will run first; only that
 * report makes a plugin safe. A plugin that crashes, hangs or exits there
 * (even with status 0: the report never came) is rejected with the signal
 * or the reason, and the host never runs its code.
 *
 * Verdicts are remembered in <cache dir>/plugin-registry (as GStreamer's
 * registry does), each bound to the plugin file's identity (device, inode,
 * size, mtime and a hash of its contents) and to the versions (path, size,
 * mtime) of the libraries the probe saw loaded, so only new or changed
 * files are probed again. A bad verdict expires (HC__BAD_VERDICT_TTL), and a
 * "hung" verdict also no longer holds under a longer probe timeout than the
 * one it was given; hc_plugin_rescan() forgets every verdict. The registry
 * is trusted only under the cache's rules (trust.c): a registry file or
 * cache folder that another user could have written is ignored.
 *
 * HC_PLUGIN_PROBE=0 loads plugins in-process without probing;
 * HC_PLUGIN_PROBE_TIMEOUT sets the timeout in seconds (default 10);
 * HC_PLUGIN_SCANNER names the scanner (default: <libdir>/hc/hc-plugin-scanner). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

/* How long a bad verdict ("crashed", "hung", "exited") stands before the
 * plugin is probed again, in seconds: a day. */
#define HC__BAD_VERDICT_TTL (24 * 3600)

/* A file's identity: what must not change for a verdict to hold. */
typedef struct {
  long long dev, ino, size, mtime_ns;
  char hash[33];
} ident_t;

/* A library the probe saw mapped: path, size and mtime. */
typedef struct {
  char *path;
  long long size, mtime_ns;
} libver_t;

typedef struct verdict {
  char *path;
  ident_t id;
  int ok;
  long long when; /* seconds since the epoch */
  double timeout; /* the probe timeout it was given */
  char *reason;
  char limits[200]; /* the resource limits it was made under */
  libver_t *libs;
  size_t nlibs;
  struct verdict *next;
} verdict_t;

/* The process's remembered verdicts, shared by all contexts. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static verdict_t *verdicts;
static int loaded;

static void free_verdict(verdict_t *v) {
  free(v->path);
  free(v->reason);
  for (size_t i = 0; i < v->nlibs; i++) free(v->libs[i].path);
  free(v->libs);
  free(v);
}

static void forget_all(void) {
  for (verdict_t *v = verdicts, *next; v; v = next) {
    next = v->next;
    free_verdict(v);
  }
  verdicts = NULL;
}

static int registry_path(char *out, size_t n) {
  char dir[PATH_MAX];
  if (!hc__cache_dir(dir, sizeof dir)) return 0;
  return snprintf(out, n, "%s/plugin-registry", dir) < (int)n;
}

static int stat_ident(const struct stat *st, ident_t *id) {
  id->dev = (long long)st->st_dev;
  id->ino = (long long)st->st_ino;
  id->size = (long long)st->st_size;
  id->mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
  return 1;
}

/* The identity of the file at path, content hash included; 0 if unreadable. */
static int file_ident(const char *path, ident_t *id) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return 0;
  }
  stat_ident(&st, id);
  size_t n = (size_t)st.st_size;
  void *map = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (n && map == MAP_FAILED) return 0;
  const void *parts[1] = {n ? map : ""};
  size_t sizes[1] = {n};
  hc_cache_key(id->hash, 1, parts, n ? sizes : NULL);
  if (n) munmap(map, n);
  return 1;
}

/* The resource limits a plugin's init may depend on (PoCL aborts when it
 * cannot start its threads): a verdict made under others does not hold. */
static void current_limits(char *out, size_t n) {
  static const int which[] = {RLIMIT_NPROC, RLIMIT_AS, RLIMIT_DATA, RLIMIT_STACK, RLIMIT_NOFILE};
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof which / sizeof which[0] && len < n; i++) {
    struct rlimit r;
    if (getrlimit(which[i], &r) != 0) r.rlim_cur = 0;
    len += (size_t)snprintf(out + len, n - len, "%s%llx", i ? "," : "", (unsigned long long)r.rlim_cur);
  }
}

static int same_ident(const ident_t *a, const ident_t *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
         !strcmp(a->hash, b->hash);
}

/* 1 when every library the verdict names is still the version it saw. */
static int libs_unchanged(const verdict_t *v) {
  for (size_t i = 0; i < v->nlibs; i++) {
    struct stat st;
    if (stat(v->libs[i].path, &st) != 0) return 0;
    ident_t id;
    stat_ident(&st, &id);
    if (id.size != v->libs[i].size || id.mtime_ns != v->libs[i].mtime_ns) return 0;
  }
  return 1;
}

static int add_lib(verdict_t *v, const char *path, long long size, long long mtime) {
  libver_t *l = realloc(v->libs, (v->nlibs + 1) * sizeof *l);
  if (!l) return 0;
  v->libs = l;
  if (!(l[v->nlibs].path = hc__strdup(path))) return 0;
  l[v->nlibs].size = size;
  l[v->nlibs].mtime_ns = mtime;
  v->nlibs++;
  return 1;
}

/* Takes v into the list, replacing an older verdict for the same path. */
static void remember(verdict_t *v) {
  for (verdict_t **p = &verdicts; *p; p = &(*p)->next)
    if (!strcmp((*p)->path, v->path)) {
      verdict_t *old = *p;
      *p = old->next;
      free_verdict(old);
      break;
    }
  v->next = verdicts;
  verdicts = v;
}

static verdict_t *new_verdict(const char *path, const ident_t *id, int ok, long long when, double timeout,
                              const char *limits, const char *reason) {
  verdict_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->path = hc__strdup(path);
  v->reason = hc__strdup(reason ? reason : "");
  if (!v->path || !v->reason) {
    free_verdict(v);
    return NULL;
  }
  v->id = *id;
  v->ok = ok;
  v->when = when;
  v->timeout = timeout;
  snprintf(v->limits, sizeof v->limits, "%s", limits);
  return v;
}

/* 1 when the registry file may be believed: the cache folder and the file
 * are the user's and writable by no one else. */
static FILE *open_registry(hc_context_t *ctx, const char *rp) {
  char dir[PATH_MAX], why[1024];
  snprintf(dir, sizeof dir, "%s", rp);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  struct stat st;
  if (stat(dir, &st) != 0) return NULL;
  if (!hc__dir_trusted(dir, 1, why, sizeof why)) {
    hc_log(ctx, HC_LOG_WARN, "plugin registry ignored (every plugin is probed): %s", why);
    return NULL;
  }
  int fd = hc__open_trusted(rp, why, sizeof why);
  if (fd == -2) hc_log(ctx, HC_LOG_WARN, "plugin registry ignored (every plugin is probed): %s", why);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "r");
  if (!f) close(fd);
  return f;
}

/* Format, one verdict per P line followed by its L lines (tab-separated):
 *   hc-plugin-registry 2
 *   P ok|bad when timeout limits dev ino size mtime_ns hash path reason
 *   L size mtime_ns path                 (a library the probe saw loaded) */
static void load_registry(hc_context_t *ctx) {
  char rp[PATH_MAX];
  if (loaded || !registry_path(rp, sizeof rp)) return;
  loaded = 1;
  FILE *f = open_registry(ctx, rp);
  if (!f) return;
  char line[8192];
  verdict_t *cur = NULL;
  if (!fgets(line, sizeof line, f) || strcmp(line, "hc-plugin-registry 2\n") != 0) {
    fclose(f); /* an older format: probe everything again */
    return;
  }
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *save = NULL, *tag = strtok_r(line, "\t", &save);
    if (!tag) continue;
    if (!strcmp(tag, "L") && cur) {
      char *size = strtok_r(NULL, "\t", &save), *mtime = strtok_r(NULL, "\t", &save), *path = strtok_r(NULL, "", &save);
      if (size && mtime && path) add_lib(cur, path, atoll(size), atoll(mtime));
      continue;
    }
    cur = NULL;
    if (strcmp(tag, "P") != 0) continue;
    char *f_[11];
    int k = 0;
    for (; k < 10 && (f_[k] = strtok_r(NULL, "\t", &save)); k++) {
    }
    f_[10] = strtok_r(NULL, "", &save);
    if (k < 10 || strlen(f_[8]) != 32) continue;
    ident_t id = {atoll(f_[4]), atoll(f_[5]), atoll(f_[6]), atoll(f_[7]), ""};
    memcpy(id.hash, f_[8], 33);
    verdict_t *v = new_verdict(f_[9], &id, !strcmp(f_[0], "ok"), atoll(f_[1]), atof(f_[2]), f_[3], f_[10]);
    if (!v) continue;
    remember(v);
    cur = v;
  }
  fclose(f);
}

static void save_registry(hc_context_t *ctx) {
  char rp[PATH_MAX], dir[PATH_MAX], why[1024];
  if (!registry_path(rp, sizeof rp) || !hc__cache_dir(dir, sizeof dir)) return;
  if (hc__mkdir_private(dir, why, sizeof why) != 0) {
    hc_log(ctx, HC_LOG_WARN, "plugin registry not written: %s", why);
    return;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  hc__append(&buf, &len, &cap, "hc-plugin-registry 2\n");
  for (verdict_t *v = verdicts; v; v = v->next) {
    /* A verdict on a file that is gone (a plugin folder removed) is left
     * out, so that the registry does not grow with every folder that was
     * ever probed. */
    struct stat st;
    if (stat(v->path, &st) != 0 && errno == ENOENT) continue;
    hc__append(&buf, &len, &cap, "P\t%s\t%lld\t%g\t%s\t%lld\t%lld\t%lld\t%lld\t%s\t%s\t%s\n", v->ok ? "ok" : "bad",
               v->when, v->timeout, v->limits, v->id.dev, v->id.ino, v->id.size, v->id.mtime_ns, v->id.hash, v->path,
               v->reason);
    for (size_t i = 0; i < v->nlibs; i++)
      hc__append(&buf, &len, &cap, "L\t%lld\t%lld\t%s\n", v->libs[i].size, v->libs[i].mtime_ns, v->libs[i].path);
  }
  if (buf && hc_write_file_atomic(rp, buf, len) != HC_OK)
    hc_log(ctx, HC_LOG_WARN, "plugin registry not written: %s", hc_last_error());
  free(buf);
}

HC_API hc_status_t hc_plugin_rescan(void) {
  char rp[PATH_MAX];
  pthread_mutex_lock(&lock);
  forget_all();
  loaded = 1; /* nothing to read back: every plugin is probed again */
  hc_status_t st = HC_OK;
  if (registry_path(rp, sizeof rp) && unlink(rp) != 0 && errno != ENOENT)
    st = hc_error(HC_ERR_IO, "cannot remove the plugin registry %s: %s", rp, strerror(errno));
  pthread_mutex_unlock(&lock);
  return st;
}

static int find_scanner(char *out, size_t n) {
  const char *env = NULL;
  hc_config_str("HC_PLUGIN_SCANNER", &env);
  if (env) return snprintf(out, n, "%s", env) < (int)n && access(out, X_OK) == 0;
  Dl_info info;
  if (!dladdr((void *)hc__probe_plugin, &info) || !info.dli_fname) return 0;
  char lib[PATH_MAX];
  snprintf(lib, sizeof lib, "%s", info.dli_fname);
  char *slash = strrchr(lib, '/');
  if (!slash) return 0;
  *slash = '\0';
  return snprintf(out, n, "%s/hc/hc-plugin-scanner", lib) < (int)n && access(out, X_OK) == 0;
}

static double probe_timeout(void) {
  double t = 10.0; /* the table's default, should the value be bad */
  hc_config_double("HC_PLUGIN_PROBE_TIMEOUT", &t);
  return t;
}

/* Takes the libraries from the child's report ("lib\tsize\tmtime\tpath"
 * lines) into v; returns 1 when the report ends with the "ok" line. */
static int read_report(char *rep, verdict_t *v) {
  int ok = 0;
  for (char *save = NULL, *line = rep ? strtok_r(rep, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(line, "lib\t", 4)) {
      char *s2 = NULL, *size = strtok_r(line + 4, "\t", &s2), *mtime = strtok_r(NULL, "\t", &s2),
           *path = strtok_r(NULL, "", &s2);
      if (v && size && mtime && path) add_lib(v, path, atoll(size), atoll(mtime));
    } else {
      ok = !strcmp(line, "ok");
    }
  }
  return ok;
}

/* Runs the scanner on path; fills reason and returns 0 on a bad verdict,
 * 1 on a good one, -1 when it could not be run. */
static int run_scanner(hc_context_t *ctx, const char *scanner, const char *path, double limit, verdict_t *v,
                       char *reason, size_t n) {
  char *argv[] = {(char *)scanner, (char *)path, NULL};
  char *rep = NULL;
  int status = 0, hung = 0;
  /* the report on the scanner's descriptor 3 */
  hc_status_t st = hc_run_helper(argv, NULL, 3, limit, &rep, &status, &hung);
  if (st != HC_OK) { /* not started, or lost (the probe could not run to its end) */
    free(rep);
    hc_log(ctx, HC_LOG_WARN, "plugin %s not probed: %s", path, hc_last_error());
    return -1;
  }
  if (hung) {
    read_report(rep, v);
    free(rep);
    snprintf(reason, n, "hung while probed: no answer within %g s (init or device enumeration never returned)", limit);
    return 0;
  }
  int reported = read_report(rep, v);
  free(rep);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    snprintf(reason, n, "crashed while probed: signal %d (%s)", sig, strsignal(sig));
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    snprintf(reason, n, "exited while probed with status %d (a plugin must not exit the process)", WEXITSTATUS(status));
    return 0;
  }
  if (!reported) {
    snprintf(reason, n,
             "exited while probed with status 0 before its probe reported (a plugin must not exit "
             "the process)");
    return 0;
  }
  return 1;
}

/* 1 when a remembered verdict still applies to the file now at path. */
static int still_holds(const verdict_t *v, const ident_t *id, double limit, const char *limits, long long now) {
  if (!same_ident(&v->id, id) || strcmp(v->limits, limits) != 0 || !libs_unchanged(v)) return 0;
  if (v->ok) return 1;
  if (now - v->when > HC__BAD_VERDICT_TTL || now < v->when) return 0;
  /* "hung" under a shorter timeout says nothing about this one. */
  if (!strncmp(v->reason, "hung", 4) && limit > v->timeout) return 0;
  return 1;
}

int hc__probe_plugin(hc_context_t *ctx, const char *path, char *reason, size_t n) {
  long long probe = 1;
  hc_config_int("HC_PLUGIN_PROBE", &probe);
  if (!probe) return 1;
  ident_t id;
  if (!file_ident(path, &id)) return 1; /* the loader reports it */
  double limit = probe_timeout();
  long long now = (long long)time(NULL);
  char limits[200];
  current_limits(limits, sizeof limits);
  pthread_mutex_lock(&lock);
  load_registry(ctx);
  for (verdict_t *v = verdicts; v; v = v->next)
    if (!strcmp(v->path, path) && still_holds(v, &id, limit, limits, now)) {
      int ok = v->ok;
      if (!ok) snprintf(reason, n, "%s (remembered verdict; hcrun --rescan probes again)", v->reason);
      pthread_mutex_unlock(&lock);
      return ok;
    }
  pthread_mutex_unlock(&lock);
  char scanner[PATH_MAX];
  if (!find_scanner(scanner, sizeof scanner)) {
    hc_log(ctx, HC_LOG_DEBUG, "no hc-plugin-scanner found: loading %s unprobed", path);
    return 1;
  }
  verdict_t *v = new_verdict(path, &id, 0, now, limit, limits, "");
  int ok = run_scanner(ctx, scanner, path, limit, v, reason, n);
  if (ok < 0) {
    /* The probe could not run (no process left under a limit, say): the
     * loader loads the file but starts no backend from it (a backend's init
     * is what the probe guards), see loader.c. */
    if (v) free_verdict(v);
    snprintf(reason, n, "%s", "");
    return 2;
  }
  if (!v) return ok;
  v->ok = ok;
  char *r = hc__strdup(ok ? "" : reason);
  if (r) {
    free(v->reason);
    v->reason = r;
  }
  pthread_mutex_lock(&lock);
  remember(v);
  save_registry(ctx);
  pthread_mutex_unlock(&lock);
  return ok;
}

/* Frees the remembered verdicts at exit (keeps leak checkers quiet). */
__attribute__((destructor)) static void free_verdicts(void) { forget_all(); }
