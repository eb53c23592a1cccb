/* The on-disk kernel cache under concurrency and corruption.
 *
 * - entries: every way an entry can be damaged (empty, cut short, a flipped
 *   bit in the payload, the size or the checksum, garbage, junk appended)
 *   is a miss, and the entry is removed; the next store writes it whole.
 * - store/load race: 16 processes store and load the same entry and their
 *   own, while another rewrites the shared one in place with torn and
 *   garbage contents (as a crash or a foreign writer would leave it): a
 *   load returns the exact payload or a miss, never anything else.
 * - kernels: 16 processes at once build and load kernels through
 *   hc_kernel_create on one cache directory (on opencl and on cuda where
 *   there is one), one kernel the same in every process, one shared by
 *   two, and check each kernel's results; a second round
 *   loads every kernel from the cache; then the entries are damaged on
 *   purpose (the above, plus a well-formed entry whose payload is not a
 *   binary the driver takes) and a third round of 16 processes rebuilds
 *   what is damaged, gets right results, and leaves every entry whole.
 *   No temporary file is ever left behind.
 *
 * The child processes are this program run again with --cache-child=... */
#include <dirent.h>
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
#include <unistd.h>

#include "harness.h"

extern char **environ;

#define PROCS 16
#define ROUNDS 100          /* store/load rounds per process in the race */
#define PAYLOAD (64 * 1024) /* big enough for a reader to meet a torn write */
#define N 1000              /* items each test kernel writes */

/* ---------------------------------------------------------------- helpers */

static char self[PATH_MAX];

/* This program's path (readlink, which valgrind answers with the client's
 * path: spawning /proc/self/exe itself would start valgrind again). */
static const char *self_path(void) {
  if (!self[0]) {
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return NULL;
    self[n] = '\0';
  }
  return self;
}

/* Starts this program with args, stdout to out_path; returns the pid. */
static pid_t spawn_child(char *const args[], const char *out_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, self_path(), &fa, NULL, args, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

/* Exit status of pid (-1 for a signal, printed unless quiet). */
static int wait_child(pid_t pid, int quiet) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -2;
  if (WIFSIGNALED(status)) {
    if (!quiet) fprintf(stderr, "child %d died of signal %d\n", (int)pid, WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

static char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  if (size) *size = (size_t)n;
  return buf;
}

static int write_file(const char *path, const void *data, size_t n, int flags) {
  int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
  if (fd < 0) return -1;
  int ok = n == 0 || write(fd, data, n) == (ssize_t)n;
  return close(fd) == 0 && ok ? 0 : -1;
}

/* Entry file names ("<key>.bin") of a cache kind, sorted; returns count. */
static int list_entries(const char *dir, char names[][40], int cap, int *tmp_files) {
  DIR *d = opendir(dir);
  int n = 0;
  if (tmp_files) *tmp_files = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strstr(e->d_name, ".tmp.")) {
      if (tmp_files) (*tmp_files)++;
      fprintf(stderr, "temporary file left behind: %s/%s\n", dir, e->d_name);
      continue;
    }
    size_t l = strlen(e->d_name);
    if (l == 36 && !strcmp(e->d_name + 32, ".bin") && n < cap) snprintf(names[n++], 40, "%s", e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
  return n;
}

/* ------------------------------------------------------- damaging entries */

enum {
  DAMAGE_EMPTY,
  DAMAGE_HALF,
  DAMAGE_HEADER_ONLY,
  DAMAGE_PAYLOAD_BIT,
  DAMAGE_SIZE_FIELD,
  DAMAGE_HASH_FIELD,
  DAMAGE_GARBAGE,
  DAMAGE_APPENDED,
  DAMAGE_COUNT_,
  /* Only for kernels: checksum right, payload no binary (the driver must
   * refuse it and the backend rebuild). */
  DAMAGE_NOT_A_BINARY = DAMAGE_COUNT_
};
static const char *const damage_names[] = {"empty",      "half",    "header only", "payload bit", "size field",
                                           "hash field", "garbage", "appended",    "not a binary"};

/* Damages the entry file path (a whole entry) in the given way. */
static int damage(const char *path, int how, const char *kind, const char *key) {
  size_t n = 0;
  char *e = slurp(path, &n);
  if (!e || n < 21) {
    free(e);
    return -1;
  }
  int rc = 0;
  switch (how) {
  case DAMAGE_EMPTY: rc = truncate(path, 0); break;
  case DAMAGE_HALF: rc = truncate(path, (off_t)(n / 2)); break;
  case DAMAGE_HEADER_ONLY: rc = truncate(path, 20); break;
  case DAMAGE_PAYLOAD_BIT:
    e[20 + (n - 20) / 2] ^= 0x10;
    rc = write_file(path, e, n, O_TRUNC);
    break;
  case DAMAGE_SIZE_FIELD:
    e[4] ^= 0x01;
    rc = write_file(path, e, n, O_TRUNC);
    break;
  case DAMAGE_HASH_FIELD:
    e[12] ^= 0x80;
    rc = write_file(path, e, n, O_TRUNC);
    break;
  case DAMAGE_GARBAGE:
    for (size_t i = 0; i < n; i++) e[i] = (char)(i * 131 + 7);
    rc = write_file(path, e, n, O_TRUNC);
    break;
  case DAMAGE_APPENDED: rc = write_file(path, "junk", 4, O_APPEND); break;
  case DAMAGE_NOT_A_BINARY: {
    /* Text a PTX parser would read on and on: no NUL inside. */
    char junk[3000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)('a' + i % 26);
    rc = hc_cache_store(kind, key, junk, sizeof junk) == HC_OK ? 0 : -1;
    break;
  }
  }
  free(e);
  return rc;
}

/* ------------------------------------------------------ the entry tests */

static void fill_payload(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 2654435761u) >> 13 ^ seed);
}

static char cache_root[PATH_MAX];

static void use_cache(const char *name) {
  snprintf(cache_root, sizeof cache_root, "%s/%s", th_tmpdir(), name);
  mkdir(cache_root, 0755);
  setenv("HC_CACHE_DIR", cache_root, 1);
}

static void test_damaged_entries(void) {
  use_cache("entries");
  unsigned char *p = malloc(PAYLOAD);
  CU_ASSERT_FATAL(p != NULL);
  fill_payload(p, PAYLOAD, 1);
  char path[PATH_MAX + 64];
  for (int how = 0; how < DAMAGE_COUNT_; how++) {
    const char *key = "0123456789abcdef0123456789abcdef";
    snprintf(path, sizeof path, "%s/unit/%s.bin", cache_root, key);
    TH_ASSERT_OK(hc_cache_store("unit", key, p, PAYLOAD));
    CU_ASSERT_EQUAL_FATAL(damage(path, how, "unit", key), 0);
    void *back = (void *)1;
    size_t n = 1;
    hc_status_t st = hc_cache_load("unit", key, &back, &n);
    if (st != HC_ERR_NOT_FOUND) fprintf(stderr, "damage '%s' was not noticed\n", damage_names[how]);
    CU_ASSERT_EQUAL(st, HC_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NULL(back);
    CU_ASSERT_EQUAL(n, 0);
    free(st == HC_OK ? back : NULL);
    CU_ASSERT_EQUAL(access(path, F_OK), -1); /* removed, not kept around */
    /* Written again whole, it loads. */
    TH_ASSERT_OK(hc_cache_store("unit", key, p, PAYLOAD));
    TH_ASSERT_OK(hc_cache_load("unit", key, &back, &n));
    CU_ASSERT(n == PAYLOAD && !memcmp(back, p, PAYLOAD));
    CU_ASSERT_EQUAL(((char *)back)[n], '\0'); /* a NUL after the payload */
    free(back);
  }
  /* An empty payload is an entry too. */
  void *back = NULL;
  size_t n = 1;
  TH_ASSERT_OK(hc_cache_store("unit", "empty", "", 0));
  TH_ASSERT_OK(hc_cache_load("unit", "empty", &back, &n));
  CU_ASSERT_EQUAL(n, 0);
  free(back);
  char names[4][40];
  int tmp = 0;
  snprintf(path, sizeof path, "%s/unit", cache_root);
  list_entries(path, names, 4, &tmp);
  CU_ASSERT_EQUAL(tmp, 0);
  free(p);
}

/* Child: ROUNDS of store+load of the shared key and of its own. Exit 0,
 * or 1 when a load returned anything but the exact payload or a miss. */
static int child_race(int id) {
  unsigned char *shared = malloc(PAYLOAD), *own = malloc(PAYLOAD);
  if (!shared || !own) return 3;
  fill_payload(shared, PAYLOAD, 0xAB);
  fill_payload(own, PAYLOAD, (unsigned)id);
  char key[33];
  snprintf(key, sizeof key, "%032d", 1000 + id);
  int hits = 0, misses = 0, bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    if (hc_cache_store("race", "shared", shared, PAYLOAD) != HC_OK ||
        hc_cache_store("race", key, own, PAYLOAD) != HC_OK) {
      fprintf(stderr, "child %d: store failed: %s\n", id, hc_last_error());
      return 2;
    }
    void *b = NULL;
    size_t n = 0;
    if (hc_cache_load("race", "shared", &b, &n) == HC_OK) {
      hits++;
      if (n != PAYLOAD || memcmp(b, shared, PAYLOAD)) bad++;
      free(b);
    } else {
      misses++;
    }
    /* Nobody damages this one: it must always be there. */
    if (hc_cache_load("race", key, &b, &n) != HC_OK || n != PAYLOAD || memcmp(b, own, PAYLOAD)) bad++;
    free(b);
  }
  printf("hits=%d misses=%d bad=%d\n", hits, misses, bad);
  free(shared);
  free(own);
  return bad ? 1 : 0;
}

/* Child: rewrites the shared entry in place (no rename) with torn and
 * garbage contents until its parent stops it. */
static int child_vandal(void) {
  unsigned char *p = malloc(PAYLOAD + 20);
  if (!p) return 3;
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/race/shared.bin", getenv("HC_CACHE_DIR"));
  for (unsigned r = 0;; r++) {
    size_t n = 0;
    char *e = slurp(path, &n);
    if (e && n > 20) {
      memcpy(p, e, n < PAYLOAD + 20 ? n : PAYLOAD + 20);
      /* Each damage is idempotent, so damaging a damaged file never
       * turns it back into a whole one. */
      if (r % 3 == 0)
        n = n / 2 + r % 17; /* torn */
      else if (r % 3 == 1)
        memset(p + 12, 0x5a, 8); /* a wrong checksum */
      else
        memset(p + 4, 0xff, 8); /* a huge size */
      int fd = open(path, O_WRONLY | O_TRUNC);
      if (fd >= 0) {
        for (size_t off = 0; off < n;) { /* in pieces, so readers meet it half done */
          size_t piece = n - off < 4096 ? n - off : 4096;
          if (write(fd, p + off, piece) != (ssize_t)piece) break;
          off += piece;
        }
        close(fd);
      }
    }
    free(e);
    usleep(200);
  }
  return 0;
}

/* A load of "trust" entry key: HC_OK or, refused, HC_ERR_IO naming what. */
static hc_status_t load_trust(const char *key, const char *expect_in_message) {
  void *back = NULL;
  size_t n = 0;
  hc_status_t st = hc_cache_load("trust", key, &back, &n);
  if (st == HC_OK) free(back);
  if (expect_in_message && (st != HC_ERR_IO || !strstr(hc_last_error(), expect_in_message)))
    fprintf(stderr, "load_trust(%s): %s '%s' lacks '%s'\n", key, hc_status_name(st), hc_last_error(),
            expect_in_message);
  return st;
}

/* The cache holds code: what someone else could have written is refused,
 * as ssh refuses such keys, and a symbolic link is never followed. */
static void test_untrusted_cache_refused(void) {
  char path[PATH_MAX * 2], other[PATH_MAX * 2], kind[PATH_MAX + 64];
  const char *key = "00000000000000000000000000000001";
  snprintf(kind, sizeof kind, "%s/trust", cache_root);
  snprintf(path, sizeof path, "%s/%s.bin", kind, key);
  TH_ASSERT_OK(hc_cache_store("trust", key, "payload", 7));
  struct stat st;
  CU_ASSERT_EQUAL(stat(kind, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 0777, 0700); /* folders hc creates are private */
  TH_ASSERT_OK(load_trust(key, NULL));
  /* An entry writable by others: refused, named, removed. */
  CU_ASSERT_EQUAL(chmod(path, 0666), 0);
  CU_ASSERT_EQUAL(load_trust(key, path), HC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "writable by others"));
  CU_ASSERT_EQUAL(access(path, F_OK), -1);
  /* Another user's entry (root can make one). */
  if (geteuid() == 0) {
    TH_ASSERT_OK(hc_cache_store("trust", key, "payload", 7));
    CU_ASSERT_EQUAL(chown(path, 65534, 65534), 0);
    CU_ASSERT_EQUAL(load_trust(key, "owned by uid 65534"), HC_ERR_IO);
  }
  /* An entry that is a link to a whole entry elsewhere: not followed. */
  TH_ASSERT_OK(hc_cache_store("trust", "00000000000000000000000000000002", "payload", 7));
  snprintf(other, sizeof other, "%s/00000000000000000000000000000002.bin", kind);
  CU_ASSERT_EQUAL(symlink(other, path), 0);
  CU_ASSERT_EQUAL(load_trust(key, "is a symbolic link"), HC_ERR_IO);
  unlink(path);
  /* A kind folder that is a link out of the cache: refused for load and store. */
  char outside[PATH_MAX + 64];
  snprintf(outside, sizeof outside, "%s/outside", th_tmpdir());
  CU_ASSERT_EQUAL(mkdir(outside, 0700), 0);
  snprintf(kind, sizeof kind, "%s/linked", cache_root);
  CU_ASSERT_EQUAL(symlink(outside, kind), 0);
  CU_ASSERT_EQUAL(hc_cache_store("linked", key, "x", 1), HC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "is a symbolic link"));
  CU_ASSERT_EQUAL(hc_cache_load("linked", key, &(void *){NULL}, &(size_t){0}), HC_ERR_IO);
  CU_ASSERT_TRUE(th_dir_empty(outside));
  unlink(kind);
  /* A cache root writable by group or others: refused as a whole. */
  TH_ASSERT_OK(hc_cache_store("trust", key, "payload", 7));
  CU_ASSERT_EQUAL(chmod(cache_root, 0775), 0);
  CU_ASSERT_EQUAL(load_trust(key, "writable by its group"), HC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), cache_root));
  CU_ASSERT_EQUAL(hc_cache_store("trust", key, "payload", 7), HC_ERR_IO);
  CU_ASSERT_EQUAL(chmod(cache_root, 0700), 0);
  TH_ASSERT_OK(load_trust(key, NULL));
}

static void test_store_load_race(void) {
  use_cache("race");
  if (!self_path()) {
    CU_FAIL("cannot find this program's path");
    return;
  }
  pid_t pids[PROCS];
  char outs[PROCS][PATH_MAX + 32];
  for (int i = 0; i < PROCS; i++) {
    char arg[64];
    snprintf(arg, sizeof arg, "--cache-child=race:%d", i);
    char *args[] = {self, arg, NULL};
    snprintf(outs[i], sizeof outs[i], "%s/race-%d.out", th_tmpdir(), i);
    pids[i] = spawn_child(args, outs[i]);
    CU_ASSERT_FATAL(pids[i] > 0);
  }
  char vout[PATH_MAX + 32];
  snprintf(vout, sizeof vout, "%s/vandal.out", th_tmpdir());
  char *vargs[] = {self, "--cache-child=vandal", NULL};
  pid_t vandal = spawn_child(vargs, vout);
  CU_ASSERT_FATAL(vandal > 0);
  long hits = 0, misses = 0;
  for (int i = 0; i < PROCS; i++) {
    int rc = wait_child(pids[i], 0);
    char *out = slurp(outs[i], NULL);
    int h = 0, m = 0, b = 0;
    if (out && sscanf(out, "hits=%d misses=%d bad=%d", &h, &m, &b) == 3) hits += h, misses += m;
    if (rc != 0) fprintf(stderr, "race child %d: exit %d: %s\n", i, rc, out ? out : "");
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(b, 0);
    free(out);
  }
  kill(vandal, SIGKILL);
  wait_child(vandal, 1);
  printf("\n    %d processes x %d rounds: shared entry %ld hits, %ld misses (damaged in place), 0 wrong\n", PROCS,
         ROUNDS, hits, misses);
  CU_ASSERT(hits > 0);
  char dir[PATH_MAX + 16], names[PROCS + 4][40];
  snprintf(dir, sizeof dir, "%s/race", cache_root);
  int tmp = 0;
  list_entries(dir, names, PROCS + 4, &tmp);
  CU_ASSERT_EQUAL(tmp, 0);
}

/* ------------------------------------------------------- the kernel tests */

static const char kernel_src[] = "HC_KERNEL void fill(HC_GLOBAL float *y, int n, float a) {\n"
                                 "  long i = hc_global_id(0);\n"
                                 "  if (i < n) y[i] = a * (float)i + (float)(OFFSET);\n"
                                 "}\n";

/* Kernels of child id: one all processes share, one it shares with the
 * next (they differ in OFFSET). Every build is a real compile (a fresh PoCL
 * cache too), so two per process keep the test affordable. */
#define KERNELS_PER_CHILD 2
static int kernel_offset(int id, int which) { return which == 0 ? 0 : 100 + id / 2; }
#define DISTINCT_KERNELS (1 + PROCS / 2)

typedef struct {
  int hits;
} log_count_t;

static void count_hits(void *user, hc_log_level_t level, const char *msg) {
  (void)level;
  if (strstr(msg, "from the kernel cache")) ((log_count_t *)user)->hits++;
}

/* Child: builds its kernels on device spec with only that backend's plugin
 * (plugin dir given), runs and checks each. Prints "hits=H builds=B".
 * Exit 0 ok, 1 wrong results, 2 an hc error, 77 no such device. */
static int child_kernels(int id, const char *spec, const char *plugin_dir) {
  /* PoCL's own kernel cache (POCL_CACHE_DIR, below hc's) is not safe for
   * processes that share it: they crash in pocl_check_kernel_disk_cache
   * (pocl/pocl#430 and #1480; seen here as a child's SIGSEGV). What is under
   * test is hc's cache, so each child gets PoCL a directory of its own. */
  const char *pocl = getenv("POCL_CACHE_DIR");
  if (pocl) {
    char own[PATH_MAX];
    snprintf(own, sizeof own, "%s/child-%d", pocl, id);
    setenv("POCL_CACHE_DIR", own, 1);
  }
  log_count_t lc = {0};
  hc_context_options_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  const char *dirs[] = {plugin_dir};
  o.plugin_dirs = dirs;
  o.plugin_dir_count = 1;
  o.no_env_path = 1;
  o.no_default_dirs = 1;
  o.log = count_hits;
  o.log_user = &lc;
  o.log_level = HC_LOG_DEBUG;
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  hc_buffer_t *buf = NULL;
  float *y = malloc(N * sizeof *y);
  int rc = 2;
  uint32_t idx = 0;
  if (!y || hc_context_create(&o, &ctx) != HC_OK) goto out;
  if (hc_device_find(ctx, spec, &idx) != HC_OK) {
    rc = 77;
    goto out;
  }
  if (hc_device_open(ctx, idx, &dev) != HC_OK || hc_buffer_create(dev, N * sizeof *y, &buf) != HC_OK) goto out;
  rc = 0;
  for (int w = 0; w < KERNELS_PER_CHILD && rc == 0; w++) {
    int off = kernel_offset(id, w);
    char opts[64];
    snprintf(opts, sizeof opts, "-DOFFSET=%d", off);
    hc_kernel_desc_t kd = {sizeof kd, "fill", kernel_src, opts, NULL};
    hc_kernel_t *k = NULL;
    int32_t n = N;
    float a = 0.5f;
    hc_arg_t args[] = {HC_ARG_BUF(buf), HC_ARG_VAL(n), HC_ARG_VAL(a)};
    size_t global = N;
    if (hc_kernel_create(dev, &kd, &k) != HC_OK || hc_kernel_launch(k, 1, &global, NULL, 3, args) != HC_OK ||
        hc_device_finish(dev) != HC_OK || hc_buffer_read(buf, 0, y, N * sizeof *y) != HC_OK) {
      fprintf(stderr, "child %d kernel %d: %s\n", id, w, hc_last_error());
      rc = 2;
    } else {
      for (int i = 0; i < N; i++)
        if (y[i] != 0.5f * (float)i + (float)off) {
          fprintf(stderr, "child %d kernel OFFSET=%d: y[%d] = %g, want %g\n", id, off, i, y[i],
                  0.5f * (float)i + (float)off);
          rc = 1;
          break;
        }
    }
    hc_kernel_destroy(k);
  }
  printf("hits=%d builds=%d\n", lc.hits, KERNELS_PER_CHILD - lc.hits);
out:
  if (rc == 2) fprintf(stderr, "child %d: %s\n", id, hc_last_error());
  hc_buffer_destroy(buf);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  free(y);
  return rc;
}

/* Runs PROCS kernel children at once; sums their hits and builds. Returns
 * the number that failed, or -1 when the device is absent. */
static int kernel_round(const char *spec, const char *plugin_dir, int *hits, int *builds) {
  pid_t pids[PROCS];
  char outs[PROCS][PATH_MAX + 32];
  *hits = *builds = 0;
  for (int i = 0; i < PROCS; i++) {
    char a1[64], a2[PATH_MAX + 16];
    snprintf(a1, sizeof a1, "--cache-child=kernels:%d:%s", i, spec);
    snprintf(a2, sizeof a2, "--plugin-dir=%s", plugin_dir);
    char *args[] = {self, a1, a2, NULL};
    snprintf(outs[i], sizeof outs[i], "%s/kernels-%s-%d.out", th_tmpdir(), spec, i);
    pids[i] = spawn_child(args, outs[i]);
    if (pids[i] <= 0) return PROCS;
  }
  int failed = 0, absent = 0;
  for (int i = 0; i < PROCS; i++) {
    int rc = wait_child(pids[i], 0);
    char *out = slurp(outs[i], NULL);
    int h = 0, b = 0;
    if (out && sscanf(out, "hits=%d builds=%d", &h, &b) == 2) *hits += h, *builds += b;
    if (rc == 77)
      absent++;
    else if (rc != 0) {
      fprintf(stderr, "kernel child %d on %s: exit %d\n", i, spec, rc);
      failed++;
    }
    free(out);
  }
  return absent == PROCS ? -1 : failed;
}

static void kernels_on(const char *spec, const char *plugin_file) {
  if (!th_device(spec)) return; /* prints "skipped: ..." */
  if (!self_path()) {
    CU_FAIL("cannot find this program's path");
    return;
  }
  char name[64];
  snprintf(name, sizeof name, "kernels-%s", spec);
  use_cache(name);
  /* A plugin directory holding only this backend, so children load fast;
   * and a fresh PoCL cache, so the first round really compiles. */
  char pdir[PATH_MAX + 64], link[PATH_MAX + 128], target[PATH_MAX + 64], pocl[PATH_MAX + 64];
  snprintf(pdir, sizeof pdir, "%s/plugins-%s", th_tmpdir(), spec);
  mkdir(pdir, 0755);
  snprintf(target, sizeof target, "%s/lib/hc/plugins/%s", th_build_dir(), plugin_file);
  snprintf(link, sizeof link, "%s/%s", pdir, plugin_file);
  CU_ASSERT_EQUAL_FATAL(symlink(target, link), 0);
  snprintf(pocl, sizeof pocl, "%s/pocl-cache-%s", th_tmpdir(), spec);
  setenv("POCL_CACHE_DIR", pocl, 1);

  int hits, builds;
  double t0 = hc_now();
  int failed = kernel_round(spec, pdir, &hits, &builds);
  double t1 = hc_now();
  CU_ASSERT_EQUAL_FATAL(failed, 0);
  printf("\n    %s round 1: %d processes built or loaded %d kernels (%d distinct): %d builds, %d cache hits, %.1f s\n",
         spec, PROCS, PROCS * KERNELS_PER_CHILD, DISTINCT_KERNELS, builds, hits, t1 - t0);
  CU_ASSERT(builds >= DISTINCT_KERNELS); /* each distinct kernel built at least once */

  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/%s", cache_root, spec);
  char names[DISTINCT_KERNELS + 8][40];
  int tmp = 0;
  int n = list_entries(dir, names, DISTINCT_KERNELS + 8, &tmp);
  CU_ASSERT_EQUAL(n, DISTINCT_KERNELS);
  CU_ASSERT_EQUAL(tmp, 0);

  /* Round 2: everything from the cache. */
  failed = kernel_round(spec, pdir, &hits, &builds);
  CU_ASSERT_EQUAL(failed, 0);
  printf("    %s round 2: %d cache hits, %d builds\n", spec, hits, builds);
  CU_ASSERT_EQUAL(hits, PROCS * KERNELS_PER_CHILD);

  /* Damage every entry, each in one of the ways, and run round 3. */
  for (int i = 0; i < n; i++) {
    char path[2 * PATH_MAX], key[33];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    snprintf(key, sizeof key, "%.32s", names[i]);
    int how = i % (DAMAGE_COUNT_ + 1);
    if (damage(path, how, spec, key) != 0) fprintf(stderr, "could not damage %s (%s)\n", path, damage_names[how]);
  }
  failed = kernel_round(spec, pdir, &hits, &builds);
  CU_ASSERT_EQUAL(failed, 0);
  printf("    %s round 3 (all %d entries damaged): %d builds, %d cache hits, all results right\n", spec, n, builds,
         hits);
  CU_ASSERT(builds >= n);

  /* Every entry whole again (hc_cache_load checks and would remove it). */
  int n2 = list_entries(dir, names, DISTINCT_KERNELS + 8, &tmp);
  CU_ASSERT_EQUAL(n2, DISTINCT_KERNELS);
  CU_ASSERT_EQUAL(tmp, 0);
  for (int i = 0; i < n2; i++) {
    char key[33];
    snprintf(key, sizeof key, "%.32s", names[i]);
    void *data = NULL;
    size_t size = 0;
    hc_status_t st = hc_cache_load(spec, key, &data, &size);
    if (st != HC_OK) fprintf(stderr, "entry %s not whole after round 3\n", key);
    CU_ASSERT_EQUAL(st, HC_OK);
    CU_ASSERT(size < 10 || memcmp(data, "abcdefghij", 10) != 0); /* not the "not a binary" text */
    free(data);
  }
}

static void test_kernels_opencl(void) { kernels_on("opencl", "backend-opencl.so"); }
static void test_kernels_cuda(void) { kernels_on("cuda", "backend-cuda.so"); }

/* ------------------------------------------------------------------ main */

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("kernel cache", NULL, NULL);
  CU_ADD_TEST(s, test_damaged_entries);
  CU_ADD_TEST(s, test_untrusted_cache_refused);
  CU_ADD_TEST(s, test_store_load_race);
  CU_ADD_TEST(s, test_kernels_opencl);
  CU_ADD_TEST(s, test_kernels_cuda);
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strncmp(argv[1], "--cache-child=", 14)) {
    const char *what = argv[1] + 14;
    if (!strncmp(what, "race:", 5)) return child_race(atoi(what + 5));
    if (!strcmp(what, "vandal")) return child_vandal();
    if (!strncmp(what, "kernels:", 8) && argc >= 3 && !strncmp(argv[2], "--plugin-dir=", 13)) {
      int id = atoi(what + 8);
      const char *spec = strchr(what + 8, ':');
      return spec ? child_kernels(id, spec + 1, argv[2] + 13) : 2;
    }
    return 2;
  }
  return th_main(argc, argv, register_tests);
}
