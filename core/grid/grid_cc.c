/* Run-time compilation of generated host kernels with the system C
 * compiler: cc (or $HC_GRID_CC) is spawned on the C text in a private
 * temporary directory, the shared object is stored in the on-disk kernel
 * cache (kind "grid-host", keyed by compiler, flags, machine and source;
 * checksummed, written atomically) and dlopen'ed. A compiler that cannot be
 * run, or a TMPDIR that is missing or where a compiled object cannot be
 * mapped (a noexec mount), is HC_ERR_UNSUPPORTED (host=auto falls back to
 * the evaluator); a compiler that rejects the code is HC_ERR_BUILD with its
 * output. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grid_internal.h"

extern char **environ;

static const char *const cc_flags[] = {"-O3", "-std=c11", "-fPIC", "-shared", "-fno-math-errno", NULL};

/* HC_GRID_CFLAGS (the grid's tune.cflags): extra flags (space-separated,
 * at most 8), e.g. "-march=native"; part of the cache key. */
static int extra_flags(const hc_grid_t *g, char *buf, size_t n, const char **out, int max) {
  int k = 0;
  snprintf(buf, n, "%s", g->tune.cflags);
  for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t && k < max; t = strtok_r(NULL, " \t", &save))
    out[k++] = t;
  return k;
}

static const char *tmp_root(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

static char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      size_t nc = cap ? cap * 2 : 65536;
      char *n = realloc(buf, nc + 1);
      if (!n) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = n;
      cap = nc;
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  fclose(f);
  buf[len] = '\0';
  *size = len;
  return buf;
}

static int write_all(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return close(fd);
}

static hc_status_t open_object(const char *path, hc_host_kernel_fn *fn, void **dl) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return hc_error(HC_ERR_BUILD, "grid host kernel: dlopen %s: %s", path, dlerror());
  void *sym = dlsym(h, "hcg_kernel");
  if (!sym) {
    dlclose(h);
    return hc_error(HC_ERR_BUILD, "grid host kernel: %s has no hcg_kernel", path);
  }
  memcpy(fn, &sym, sizeof *fn); /* object pointer to function pointer (POSIX) */
  *dl = h;
  return HC_OK;
}

/* 1 when the compiler names an executable file (a path, or a name found on
 * $PATH): checked before spawning, because a child that fails to exec is
 * not always told apart from a compiler that fails (e.g. under valgrind). */
static int compiler_exists(const char *cc) {
  if (strchr(cc, '/')) return access(cc, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/bin:/bin";
  char buf[4096];
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n > 0 && n + strlen(cc) + 2 < sizeof buf) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, cc);
      if (access(buf, X_OK) == 0) return 1;
    }
    path += n;
    if (*path == ':') path++;
  }
  return 0;
}

/* Runs the compiler; returns HC_OK, HC_ERR_UNSUPPORTED (cannot run it) or
 * HC_ERR_BUILD (it failed: log in the message). */
static hc_status_t run_cc(const hc_grid_t *g, const char *dir, const char *src, const char *obj) {
  char logpath[4096];
  snprintf(logpath, sizeof logpath, "%s/cc.log", dir);
  const char *argv[24];
  char extra[512];
  int n = 0;
  argv[n++] = g->tune.cc;
  for (int i = 0; cc_flags[i]; i++) argv[n++] = cc_flags[i];
  n += extra_flags(g, extra, sizeof extra, argv + n, 8);
  argv[n++] = "-o";
  argv[n++] = obj;
  argv[n++] = src;
  argv[n++] = "-lm";
  argv[n] = NULL;
  if (!compiler_exists(argv[0]))
    return hc_error(HC_ERR_UNSUPPORTED, "cannot run the C compiler '%s': not found%s", argv[0],
                    strchr(argv[0], '/') ? "" : " on PATH");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) return hc_error(HC_ERR_UNSUPPORTED, "cannot run the C compiler '%s': %s", argv[0], strerror(e));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return hc_error(HC_ERR_UNSUPPORTED, "waiting for '%s': %s", argv[0], strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return HC_OK;
  size_t sz = 0;
  char *log = read_all(logpath, &sz);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    hc_status_t st =
        hc_error(HC_ERR_UNSUPPORTED, "cannot run the C compiler '%s' (exit 127): %.300s", argv[0], log ? log : "");
    free(log);
    return st;
  }
  hc_status_t st = hc_error(HC_ERR_BUILD, "grid host kernel: '%s' failed (%s %d):\n%.3000s", argv[0],
                            WIFEXITED(status) ? "exit" : "signal",
                            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), log ? log : "(no output)");
  free(log);
  return st;
}

static const char *const dir_files[] = {"k.c", "k.so", "cc.log", "cached.so"};
#define NFILES (sizeof dir_files / sizeof dir_files[0])

/* The compile directory, hcgrid-<pid>-XXXXXX in TMPDIR, and its files are
 * registered as temporaries (hc.h) while they exist, so that a signal
 * handler can remove them; a process killed outright leaves them to the
 * next process's sweep_stale(). */
typedef struct {
  char dir[3000];
  int slots[1 + NFILES];
} work_dir_t;

static void remove_dir(work_dir_t *w) {
  char path[4200];
  for (size_t i = 0; i < NFILES; i++) {
    snprintf(path, sizeof path, "%s/%s", w->dir, dir_files[i]);
    unlink(path);
  }
  rmdir(w->dir);
  for (size_t i = 0; i <= NFILES; i++) hc_temp_unregister(w->slots[i]);
}

static hc_status_t make_dir(work_dir_t *w) {
  if (snprintf(w->dir, sizeof w->dir, "%s/hcgrid-%ld-XXXXXX", tmp_root(), (long)getpid()) >= (int)sizeof w->dir)
    return hc_error(HC_ERR_UNSUPPORTED, "grid host kernel: TMPDIR is too long");
  if (!mkdtemp(w->dir))
    return hc_error(HC_ERR_UNSUPPORTED, "grid host kernel: cannot create a directory in TMPDIR=%s: %s", tmp_root(),
                    strerror(errno));
  w->slots[0] = hc_temp_register(w->dir);
  char path[4200];
  for (size_t i = 0; i < NFILES; i++) {
    snprintf(path, sizeof path, "%s/%s", w->dir, dir_files[i]);
    w->slots[1 + i] = hc_temp_register(path);
  }
  return HC_OK;
}

/* Remembers that compiled host kernels cannot run in this grid (no
 * compiler, no usable TMPDIR): host=auto uses the evaluator from now on. */
static hc_status_t cannot_compile(hc_grid_t *g, hc_status_t st) {
  g->cc_state = -1;
  snprintf(g->cc_why, sizeof g->cc_why, "%s", hc_last_error());
  return st;
}

static void sweep_stale_once(void) {
  const char *root = tmp_root();
  DIR *dp = opendir(root);
  if (!dp) return;
  struct dirent *de;
  while ((de = readdir(dp))) {
    char *end = NULL;
    if (strncmp(de->d_name, "hcgrid-", 7) != 0) continue;
    long pid = strtol(de->d_name + 7, &end, 10);
    if (end == de->d_name + 7 || *end != '-' || pid <= 0 || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to ask */
    work_dir_t w;
    struct stat st;
    if (snprintf(w.dir, sizeof w.dir, "%s/%s", root, de->d_name) >= (int)sizeof w.dir) continue;
    if (lstat(w.dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    for (size_t i = 0; i <= NFILES; i++) w.slots[i] = -1;
    remove_dir(&w);
  }
  closedir(dp);
}

/* Removes the compile directories of processes that no longer run (killed
 * during a compile): only ours, only hcgrid-<pid>-XXXXXX whose pid is gone,
 * only the files this code puts there. Once per process. */
static void sweep_stale(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, sweep_stale_once);
}

hc_status_t hcg_cc_build(hc_grid_t *g, const char *source, hc_host_kernel_fn *fn, void **dl) {
  *fn = NULL;
  *dl = NULL;
  if (g->cc_state < 0) return hc_error(HC_ERR_UNSUPPORTED, "%s", g->cc_why);
  sweep_stale();
  struct utsname u;
  if (uname(&u) != 0) memset(&u, 0, sizeof u);
  char flags[1024] = "";
  for (int i = 0; cc_flags[i]; i++) {
    strncat(flags, cc_flags[i], sizeof flags - strlen(flags) - 2);
    strncat(flags, " ", sizeof flags - strlen(flags) - 1);
  }
  strncat(flags, g->tune.cflags, sizeof flags - strlen(flags) - 1);
  const void *parts[5] = {"grid-host-v1", g->tune.cc, flags, u.machine, source};
  char key[33];
  hc_cache_key(key, 5, parts, NULL);
  hc_context_t *ctx = hc_device_context(g->dev);

  work_dir_t w;
  hc_status_t st = make_dir(&w);
  if (st != HC_OK) return cannot_compile(g, st);
  /* No shared object can be mapped from a noexec mount (dlopen: "failed to
   * map segment"): no compiled kernel can run from this TMPDIR. */
  struct statvfs vfs;
  if (statvfs(w.dir, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC)) {
    remove_dir(&w);
    return cannot_compile(g, hc_error(HC_ERR_UNSUPPORTED,
                                      "grid host kernel: TMPDIR=%s is mounted noexec, so "
                                      "compiled kernels cannot be loaded from it",
                                      tmp_root()));
  }
  char src[4200], obj[4200];
  snprintf(src, sizeof src, "%s/k.c", w.dir);
  snprintf(obj, sizeof obj, "%s/k.so", w.dir);
  void *bytes = NULL;
  size_t nbytes = 0;
  st = hc_cache_load("grid-host", key, &bytes, &nbytes);
  if (st == HC_OK) {
    char cached[4200];
    snprintf(cached, sizeof cached, "%s/cached.so", w.dir);
    st = write_all(cached, bytes, nbytes) == 0 ? open_object(cached, fn, dl)
                                               : hc_error(HC_ERR_IO, "cannot write %s: %s", cached, strerror(errno));
    free(bytes);
    if (st == HC_OK) {
      g->cc_state = 1;
      remove_dir(&w);
      return HC_OK;
    }
  } else if (st != HC_ERR_NOT_FOUND) {
    hc_log(ctx, HC_LOG_WARN, "grid expressions: %s", hc_last_error());
  }
  if (write_all(src, source, strlen(source)) != 0) {
    st = hc_error(HC_ERR_IO, "grid host kernel: cannot write %s: %s", src, strerror(errno));
    remove_dir(&w);
    return st;
  }
  st = run_cc(g, w.dir, src, obj);
  if (st == HC_ERR_UNSUPPORTED) {
    g->cc_state = -1;
    snprintf(g->cc_why, sizeof g->cc_why, "%s", hc_last_error());
  }
  if (st == HC_OK) {
    bytes = read_all(obj, &nbytes);
    st = open_object(obj, fn, dl);
    if (st == HC_OK) {
      g->cc_state = 1;
      if (bytes && hc_cache_store("grid-host", key, bytes, nbytes) != HC_OK) /* best effort */
        hc_log(ctx, HC_LOG_WARN, "grid expressions: %s", hc_last_error());
    }
    free(bytes);
  }
  remove_dir(&w);
  return st == HC_ERR_UNSUPPORTED ? cannot_compile(g, st) : st;
}

void hcg_cc_close(void *dl) {
  if (dl) dlclose(dl);
}
