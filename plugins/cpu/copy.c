/* Copies and fills over a device's threads (copy.h). Each thread takes a
 * contiguous range of at least COPY_CHUNK bytes, 64-byte multiples, so
 * that no two threads write one cache line and every range starts on a
 * whole pattern. */
#include <stdint.h>
#include <string.h>

#include "copy.h"

enum { COPY_MIN = 1 << 20, COPY_CHUNK = 256 << 10 };

/* The bytes each thread takes of n, or 0 when one thread should do it all. */
static size_t share_of(hc_cpu_pool_t *pool, size_t n) {
  const size_t threads = pool ? hc_cpu_pool_size(pool) : 1;
  if (n < COPY_MIN || threads < 2) return 0;
  size_t per = (n + threads - 1) / threads;
  per = per < COPY_CHUNK ? COPY_CHUNK : (per + 63) / 64 * 64;
  return per;
}

static void copy_range(const hc_host_group_t *g, void *const *args) {
  memcpy((char *)args[0] + g->lo[0], (const char *)args[1] + g->lo[0], g->hi[0] - g->lo[0]);
}

/* Fill one pattern, then double the filled prefix. */
static void fill_bytes(char *p, const void *pat, size_t psize, size_t n) {
  if (psize == 1) {
    memset(p, *(const unsigned char *)pat, n);
    return;
  }
  memcpy(p, pat, psize < n ? psize : n);
  size_t done = psize;
  while (done < n) {
    size_t c = done < n - done ? done : n - done;
    memcpy(p + done, p, c);
    done += c;
  }
}

static void fill_range(const hc_host_group_t *g, void *const *args) {
  fill_bytes((char *)args[0] + g->lo[0], args[1], *(const size_t *)args[2], g->hi[0] - g->lo[0]);
}

void hc_cpu_copy(hc_cpu_pool_t *pool, void *dst, const void *src, size_t n) {
  const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  const size_t per = share_of(pool, n);
  if (!per || (d < s + n && s < d + n)) {
    memmove(dst, src, n);
    return;
  }
  void *args[2] = {dst, (void *)src};
  const size_t global[3] = {n, 1, 1}, local[3] = {per, 1, 1};
  hc_cpu_pool_run(pool, copy_range, args, 1, global, local);
}

void hc_cpu_fill(hc_cpu_pool_t *pool, void *dst, const void *pat, size_t psize, size_t n) {
  const size_t per = share_of(pool, n);
  if (!per) {
    fill_bytes(dst, pat, psize, n);
    return;
  }
  void *args[3] = {dst, (void *)pat, &psize};
  const size_t global[3] = {n, 1, 1}, local[3] = {per, 1, 1};
  hc_cpu_pool_run(pool, fill_range, args, 1, global, local);
}
