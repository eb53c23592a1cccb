/* Plugin isolation: before a plugin is loaded into the host process, it is
 * loaded once in a child process (hc-plugin-scanner) with a timeout. A
 * plugin that crashes, hangs or exits there is rejected with the signal or
 * the reason, and the host never runs its code. Verdicts are remembered in
 * <cache dir>/plugin-registry keyed by path, size and mtime (as GStreamer's
 * registry does), so only new or changed files are probed.
 *
 * HC_PLUGIN_PROBE=0 loads plugins in-process without probing;
 * HC_PLUGIN_PROBE_TIMEOUT sets the timeout in seconds (default 10);
 * HC_PLUGIN_SCANNER names the scanner (default: <libdir>/hc/hc-plugin-scanner). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

/* The process's remembered verdicts (loaded from and saved to the registry
 * file), shared by all contexts. */
typedef struct verdict {
  char *path;
  long long size, mtime_ns;
  int ok;
  char *reason;
  struct verdict *next;
} verdict_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static verdict_t *verdicts;
static int loaded;

static int registry_path(char *out, size_t n) {
  char dir[PATH_MAX];
  if (!hc__cache_dir(dir, sizeof dir)) return 0;
  return snprintf(out, n, "%s/plugin-registry", dir) < (int)n;
}

static void remember(const char *path, long long size, long long mtime, int ok, const char *reason) {
  for (verdict_t *v = verdicts; v; v = v->next)
    if (!strcmp(v->path, path)) {
      char *r = hc__strdup(reason ? reason : "");
      if (!r) return;
      free(v->reason);
      v->reason = r;
      v->size = size;
      v->mtime_ns = mtime;
      v->ok = ok;
      return;
    }
  verdict_t *v = calloc(1, sizeof *v);
  if (!v) return;
  v->path = hc__strdup(path);
  v->reason = hc__strdup(reason ? reason : "");
  if (!v->path || !v->reason) {
    free(v->path);
    free(v->reason);
    free(v);
    return;
  }
  v->size = size;
  v->mtime_ns = mtime;
  v->ok = ok;
  v->next = verdicts;
  verdicts = v;
}

/* Lines: ok|bad <tab> size <tab> mtime_ns <tab> path <tab> reason */
static void load_registry(void) {
  char rp[PATH_MAX];
  if (loaded || !registry_path(rp, sizeof rp)) return;
  loaded = 1;
  FILE *f = fopen(rp, "r");
  if (!f) return;
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *save = NULL, *verdict = strtok_r(line, "\t", &save), *size = strtok_r(NULL, "\t", &save),
         *mtime = strtok_r(NULL, "\t", &save), *path = strtok_r(NULL, "\t", &save), *reason = strtok_r(NULL, "", &save);
    if (!verdict || !size || !mtime || !path) continue;
    remember(path, atoll(size), atoll(mtime), !strcmp(verdict, "ok"), reason);
  }
  fclose(f);
}

static void save_registry(void) {
  char rp[PATH_MAX], dir[PATH_MAX];
  if (!registry_path(rp, sizeof rp) || !hc__cache_dir(dir, sizeof dir) || hc__mkdir_p(dir) != 0) return;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (verdict_t *v = verdicts; v; v = v->next)
    hc__append(&buf, &len, &cap, "%s\t%lld\t%lld\t%s\t%s\n", v->ok ? "ok" : "bad", v->size, v->mtime_ns, v->path,
               v->reason);
  if (buf) hc_write_file_atomic(rp, buf, len);
  free(buf);
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

/* Runs the scanner on path; fills reason and returns 0 on a bad verdict. */
static int run_scanner(hc_context_t *ctx, const char *scanner, const char *path, char *reason, size_t n) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  /* Its own process group, so a hung probe and anything it started can be
   * killed together. */
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  char *argv[] = {(char *)scanner, (char *)path, NULL};
  pid_t pid;
  int err = posix_spawn(&pid, scanner, &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    hc_log(ctx, HC_LOG_WARN, "cannot run %s (%s): loading %s unprobed", scanner, strerror(err), path);
    return 1;
  }
  double limit = probe_timeout(), t0 = hc_now();
  int status = 0;
  struct timespec nap = {0, 1000000};
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      snprintf(reason, n, "probe failed: waitpid: %s", strerror(errno));
      return 0;
    }
    if (hc_now() - t0 > limit) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      snprintf(reason, n, "hung while probed: no answer within %g s (init or device enumeration never returned)",
               limit);
      return 0;
    }
    nanosleep(&nap, NULL);
    if (nap.tv_nsec < 20000000) nap.tv_nsec *= 2;
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    snprintf(reason, n, "crashed while probed: signal %d (%s)", sig, strsignal(sig));
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    snprintf(reason, n, "exited while probed with status %d (a plugin must not exit the process)",
             WEXITSTATUS(status));
    return 0;
  }
  return 1;
}

int hc__probe_plugin(hc_context_t *ctx, const char *path, char *reason, size_t n) {
  long long probe = 1;
  hc_config_int("HC_PLUGIN_PROBE", &probe);
  if (!probe) return 1;
  struct stat st;
  if (stat(path, &st) != 0) return 1; /* the loader reports it */
  long long size = (long long)st.st_size;
  long long mtime = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  pthread_mutex_lock(&lock);
  load_registry();
  for (verdict_t *v = verdicts; v; v = v->next)
    if (!strcmp(v->path, path) && v->size == size && v->mtime_ns == mtime) {
      int ok = v->ok;
      if (!ok) snprintf(reason, n, "%s (remembered verdict)", v->reason);
      pthread_mutex_unlock(&lock);
      return ok;
    }
  pthread_mutex_unlock(&lock);
  char scanner[PATH_MAX];
  if (!find_scanner(scanner, sizeof scanner)) {
    hc_log(ctx, HC_LOG_DEBUG, "no hc-plugin-scanner found: loading %s unprobed", path);
    return 1;
  }
  int ok = run_scanner(ctx, scanner, path, reason, n);
  pthread_mutex_lock(&lock);
  remember(path, size, mtime, ok, ok ? "" : reason);
  save_registry();
  pthread_mutex_unlock(&lock);
  return ok;
}

/* Frees the remembered verdicts at exit (keeps leak checkers quiet). */
__attribute__((destructor)) static void free_verdicts(void) {
  for (verdict_t *v = verdicts, *next; v; v = next) {
    next = v->next;
    free(v->path);
    free(v->reason);
    free(v);
  }
  verdicts = NULL;
}
