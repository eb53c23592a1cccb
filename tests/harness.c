#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static hc_context_t *ctx;
static char tmpdir[PATH_MAX];
static char builddir[PATH_MAX];
static hc_device_t *opened[64];
static int nopened;

hc_context_t *th_context(void) {
  if (!ctx && hc_context_create(NULL, &ctx) != HC_OK) {
    fprintf(stderr, "cannot create context: %s\n", hc_last_error());
    exit(3);
  }
  return ctx;
}

void th_skip(const char *why) {
  static char seen[32][600];
  static int n;
  for (int i = 0; i < n; i++)
    if (!strcmp(seen[i], why)) return;
  if (n < 32) snprintf(seen[n++], sizeof seen[0], "%s", why);
  printf("\nskipped: %s\n", why);
}

hc_device_t *th_device(const char *spec) {
  hc_context_t *c = th_context();
  uint32_t idx;
  if (hc_device_find(c, spec, &idx) != HC_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "no %s device (%s)", spec, hc_last_error());
    th_skip(msg);
    return NULL;
  }
  hc_device_t *d = NULL;
  if (hc_device_open(c, idx, &d) != HC_OK) {
    fprintf(stderr, "cannot open %s: %s\n", spec, hc_last_error());
    return NULL;
  }
  if (nopened < 64)
    opened[nopened++] = d;
  else
    hc_device_close(d);
  return d;
}

const char *th_build_dir(void) {
  if (!builddir[0]) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return ".";
    exe[n] = '\0';
    /* build/bin/tests/<prog> -> build */
    for (int up = 0; up < 3; up++) {
      char *s = strrchr(exe, '/');
      if (s) *s = '\0';
    }
    snprintf(builddir, sizeof builddir, "%s", exe);
  }
  return builddir;
}

int th_slow_tool(void) {
  const char *s = getenv("HC_SANITIZED"), *p = getenv("LD_PRELOAD");
  return (s && *s && strcmp(s, "0")) || (p && strstr(p, "vgpreload"));
}

const char *th_tmpdir(void) {
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hc-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
      perror("mkdtemp");
      exit(4);
    }
  }
  return tmpdir;
}

static void cleanup(void) {
  for (int i = 0; i < nopened; i++) hc_device_close(opened[i]);
  nopened = 0;
  hc_context_destroy(ctx);
  ctx = NULL;
  if (tmpdir[0]) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    tmpdir[0] = '\0';
  }
}

static void drain(int fd, char *buf, size_t cap, size_t *len, int *open_) {
  char tmp[4096];
  ssize_t r = read(fd, tmp, sizeof tmp);
  if (r <= 0) {
    *open_ = 0;
    return;
  }
  if (buf && *len + 1 < cap) {
    size_t c = (size_t)r < cap - 1 - *len ? (size_t)r : cap - 1 - *len;
    memcpy(buf + *len, tmp, c);
    *len += c;
    buf[*len] = '\0';
  }
}

int th_run(const char *cmd, char *out, size_t out_cap, char *err, size_t err_cap) {
  int po[2], pe[2];
  if (out && out_cap) out[0] = '\0';
  if (err && err_cap) err[0] = '\0';
  if (pipe(po) || pipe(pe)) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(po[1], 1);
    dup2(pe[1], 2);
    close(po[0]);
    close(pe[0]);
    close(po[1]);
    close(pe[1]);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  close(po[1]);
  close(pe[1]);
  size_t lo = 0, le = 0;
  int oo = 1, eo = 1;
  while (oo || eo) {
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (oo && (fds[0].revents & (POLLIN | POLLHUP))) drain(po[0], out, out_cap, &lo, &oo);
    if (eo && (fds[1].revents & (POLLIN | POLLHUP))) drain(pe[0], err, err_cap, &le, &eo);
  }
  close(po[0]);
  close(pe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double th_rel(double a, double b) {
  double d = fabs(b) > 1e-300 ? fabs(b) : 1e-300;
  return fabs(a - b) / d;
}

int th_dir_empty(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 1;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n == 0;
}

void th_expect_usage_error(const char *workload, const char *device, const char *args, const char *needle) {
  static int count;
  char out[PATH_MAX + 32], cmd[PATH_MAX * 2 + 2048], err[4096];
  snprintf(out, sizeof out, "%s/usage-out%d", th_tmpdir(), count++);
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --device=%s --workload=%s --output=%s %s", th_build_dir(), device, workload,
           out, args);
  int rc = th_run(cmd, NULL, 0, err, sizeof err);
  if (rc != 2 || !strstr(err, needle)) fprintf(stderr, "%s\n -> exit %d, stderr: %s\n", cmd, rc, err);
  CU_ASSERT_EQUAL(rc, 2);
  CU_ASSERT(strstr(err, needle) != NULL);
  CU_ASSERT(th_dir_empty(out));
}

int th_main(int argc, char **argv, void (*register_tests)(void)) {
  (void)argc;
  (void)argv;
  atexit(cleanup);
  if (CU_initialize_registry() != CUE_SUCCESS) return 4;
  register_tests();
  if (CU_get_error() != CUE_SUCCESS) {
    fprintf(stderr, "CUnit registration failed: %s\n", CU_get_error_msg());
    return 4;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  /* a suite whose setup failed ran none of its tests: a failure too */
  unsigned fails = CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
  CU_cleanup_registry();
  /* Close devices and the context before returning: at exit(), the
   * drivers' own exit handlers (PoCL's) may already have torn down their
   * worker threads. The atexit hook stays for tests that call exit(). */
  cleanup();
  return fails ? 1 : 0;
}

hc_field_t *th_random_field(hc_device_t *dev, hc_dtype_t dt, uint32_t rank, const int64_t *shape, unsigned seed) {
  hc_field_t *f = NULL;
  if (hc_field_create(dev, dt, rank, shape, &f) != HC_OK) return NULL;
  const size_t n = hc_field_count(f);
  void *host = malloc(hc_field_bytes(f));
  for (size_t i = 0; host && i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    const double v = (double)(seed >> 8 & 0xffff) / 32768.0 - 1.0;
    if (dt == HC_F64)
      ((double *)host)[i] = v;
    else
      ((float *)host)[i] = (float)v;
  }
  if (!host || hc_field_write(f, host) != HC_OK) {
    hc_field_destroy(f);
    f = NULL;
  }
  free(host);
  return f;
}

hc_job_t *th_job(hc_context_t *in, const char *workload, const char *params) {
  hc_job_t *job = NULL;
  if (hc_job_create(in, workload, &job) != HC_OK) return NULL;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", params ? params : "");
  for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
    if (hc_job_set_kv(job, kv) != HC_OK) {
      hc_job_destroy(job);
      return NULL;
    }
  return job;
}
