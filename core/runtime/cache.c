/* The on-disk kernel cache and atomic file writes.
 *
 * An entry is  "HCC1" | u64 payload size | u64 payload hash | payload,
 * written to a temporary file and renamed into place, so a reader sees a
 * whole entry or none. A reader that finds a short, oversized or mismatching
 * entry deletes it and reports a miss: a corrupt entry is never trusted.
 *
 * The cache holds code this process runs (program binaries, the grid
 * library's shared objects), so its folders and entries must be trusted
 * (trust.c): created 0700, owned by the user or root and writable by no one
 * else, no symbolic link below the cache root. A cache that fails this is
 * refused: load and store return HC_ERR_IO naming the path and the problem,
 * callers log it as a warning and run without the cache. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

/* Two independent 64-bit streams (FNV-1a with different seeds, mixed). */
typedef struct {
  uint64_t a, b;
} hash128_t;
static void h_update(hash128_t *h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h->a = (h->a ^ p[i]) * 0x100000001b3ULL;
    h->b = (h->b ^ p[i]) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
  }
}

static uint64_t payload_hash(const void *data, size_t n) {
  hash128_t h = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
  h_update(&h, data, n);
  return mix64(h.a ^ mix64(h.b));
}

HC_API void hc_cache_key(char out[33], uint32_t nparts, const void *const *parts, const size_t *sizes) {
  hash128_t h = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
  for (uint32_t i = 0; i < nparts; i++) {
    const void *p = parts[i] ? parts[i] : "";
    uint64_t n = sizes && sizes[i] ? sizes[i] : strlen(p);
    h_update(&h, &n, sizeof n); /* length first: ("ab","c") != ("a","bc") */
    h_update(&h, p, (size_t)n);
  }
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)mix64(h.a), (unsigned long long)mix64(h.b ^ h.a));
}

HC_API int hc_cache_enabled(void) {
  long long on = 1;
  hc_config_int("HC_CACHE", &on); /* a bad value failed hc_context_create */
  return on != 0;
}

int hc__cache_dir(char *out, size_t n) {
  const char *d = NULL;
  hc_config_str("HC_CACHE_DIR", &d);
  if (d) return snprintf(out, n, "%s", d) < (int)n;
  d = getenv("XDG_CACHE_HOME");
  if (d && *d) return snprintf(out, n, "%s/hc", d) < (int)n;
  d = getenv("HOME");
  if (d && *d) return snprintf(out, n, "%s/.cache/hc", d) < (int)n;
  return 0;
}

/* The entry's path after checking the folders on the way (trust.c): 1 ok,
 * 0 no cache (unset, or absent when only reading), -1 refused (why says
 * which path and what is wrong with it). The cache root may be reached
 * through a link the user made; below it nothing is followed. */
static int entry_path(char *out, size_t n, const char *kind, const char *key, int create, char *why, size_t wn) {
  char dir[3072];
  snprintf(why, wn, "kernel cache unavailable");
  if (!hc__cache_dir(dir, sizeof dir)) return 0;
  for (const char *k = kind; *k; k++)
    if (*k == '/' || *k == '.') return 0;
  for (const char *k = key; *k; k++)
    if (*k == '/' || *k == '.') return 0;
  if (snprintf(out, n, "%s/%s/%s.bin", dir, kind, key) >= (int)n) return 0;
  struct stat st;
  if (create) {
    if (hc__mkdir_private(dir, why, wn) != 0) return -1;
  } else if (stat(dir, &st) != 0) {
    return 0;
  } else if (!hc__dir_trusted(dir, 1, why, wn)) {
    return -1;
  }
  char *slash = strrchr(out, '/');
  *slash = '\0';
  int r = 1;
  if (create && mkdir(out, 0700) != 0 && errno != EEXIST) {
    snprintf(why, wn, "cannot create %s: %s", out, strerror(errno));
    r = -1;
  } else if (!create && lstat(out, &st) != 0) {
    r = 0;
  } else if (!hc__dir_trusted(out, 0, why, wn)) {
    r = -1;
  }
  *slash = '/';
  return r;
}

static hc_status_t refused(const char *why) {
  return hc_error(HC_ERR_IO, "kernel cache refused: %s; running without the cache", why);
}

HC_API hc_status_t hc_write_file_atomic(const char *path, const void *data, size_t size) {
  char tmp[4200];
  static _Atomic unsigned counter;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), counter++);
  int slot = hc_temp_register(tmp); /* before the file exists: a signal may come at any point */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    hc_temp_unregister(slot);
    return hc_error(HC_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
  }
  const char *p = data;
  size_t left = size;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      unlink(tmp);
      hc_temp_unregister(slot);
      return hc_error(HC_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    hc_temp_unregister(slot);
    return hc_error(HC_ERR_IO, "cannot write %s: %s", path, strerror(e));
  }
  hc_temp_unregister(slot);
  return HC_OK;
}

HC_API hc_status_t hc_cache_store(const char *kind, const char *key, const void *data, size_t size) {
  char path[4096], why[1024];
  if (!hc_cache_enabled() || !kind || !key) return hc_error(HC_ERR_NOT_FOUND, "kernel cache disabled");
  int where = entry_path(path, sizeof path, kind, key, 1, why, sizeof why);
  if (where == 0) return hc_error(HC_ERR_NOT_FOUND, "%s", why);
  if (where < 0) return refused(why);
  size_t total = 4 + 16 + size;
  unsigned char *buf = malloc(total);
  if (!buf) return hc_error(HC_ERR_NO_MEMORY, "cache store: out of memory");
  uint64_t sz = size, hs = payload_hash(data, size);
  memcpy(buf, "HCC1", 4);
  memcpy(buf + 4, &sz, 8);
  memcpy(buf + 12, &hs, 8);
  memcpy(buf + 20, data, size);
  hc_status_t st = hc_write_file_atomic(path, buf, total);
  free(buf);
  return st;
}

HC_API hc_status_t hc_cache_load(const char *kind, const char *key, void **data, size_t *size) {
  char path[4096], why[1024];
  *data = NULL;
  *size = 0;
  if (!hc_cache_enabled() || !kind || !key) return HC_ERR_NOT_FOUND;
  int where = entry_path(path, sizeof path, kind, key, 0, why, sizeof why);
  if (where == 0) return HC_ERR_NOT_FOUND;
  if (where < 0) return refused(why);
  int fd = hc__open_trusted(path, why, sizeof why);
  if (fd == -2) {
    /* In a folder of ours: take the planted or loosened entry away, so the
     * next store writes one that can be trusted. */
    unlink(path);
    return refused(why);
  }
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return HC_ERR_NOT_FOUND;
  }
  unsigned char hdr[20];
  uint64_t sz = 0, hs = 0;
  int ok = fread(hdr, 1, 20, f) == 20 && !memcmp(hdr, "HCC1", 4);
  if (ok) {
    memcpy(&sz, hdr + 4, 8);
    memcpy(&hs, hdr + 12, 8);
    ok = sz < ((uint64_t)1 << 32);
  }
  /* One byte more, a NUL after the payload: a consumer that takes the
   * payload as text (a PTX image, say) stops there even when it is not. */
  void *buf = ok ? malloc(sz + 1) : NULL;
  if (buf) {
    ((char *)buf)[sz] = '\0';
    ok = fread(buf, 1, sz, f) == sz && fgetc(f) == EOF && payload_hash(buf, sz) == hs;
  } else {
    ok = 0;
  }
  fclose(f);
  if (!ok) {
    free(buf);
    unlink(path); /* corrupt or truncated: rebuild, never trust it */
    return HC_ERR_NOT_FOUND;
  }
  *data = buf;
  *size = sz;
  return HC_OK;
}
