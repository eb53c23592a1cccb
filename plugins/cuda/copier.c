/* The parallel memcpy of the staging path (see copier.h). */
#include "copier.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Below this per-thread share a wake-up costs more than it saves. */
#define HC_COPIER_MIN_SHARE ((size_t)256 << 10)

struct hc_cuda_copier {
  pthread_mutex_t lock;
  pthread_cond_t go, done;
  unsigned threads;  /* the caller included */
  unsigned started;  /* workers running */
  unsigned parts;    /* shares of the current job */
  unsigned pending;  /* workers still copying it */
  unsigned long gen; /* job counter: a worker runs each job once */
  int quit;
  char *dst;
  const char *src;
  size_t n;
  pthread_t tid[];
};

/* Share k of parts: page-aligned cut points, so threads never split a
 * page (and its cache lines). */
static void share(size_t n, unsigned parts, unsigned k, size_t *lo, size_t *hi) {
  size_t step = (n / parts + 4095) & ~(size_t)4095;
  *lo = (size_t)k * step < n ? (size_t)k * step : n;
  *hi = *lo + step < n && k + 1 < parts ? *lo + step : n;
}

typedef struct {
  hc_cuda_copier_t *c;
  unsigned index; /* 1..threads-1; the caller is share 0 */
} worker_arg_t;

static void *worker(void *p) {
  hc_cuda_copier_t *c = ((worker_arg_t *)p)->c;
  unsigned index = ((worker_arg_t *)p)->index;
  free(p);
  unsigned long seen = 0;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    while (c->gen == seen && !c->quit) pthread_cond_wait(&c->go, &c->lock);
    if (c->quit) break;
    seen = c->gen;
    if (index < c->parts) {
      size_t lo, hi;
      share(c->n, c->parts, index, &lo, &hi);
      char *dst = c->dst;
      const char *src = c->src;
      pthread_mutex_unlock(&c->lock);
      memcpy(dst + lo, src + lo, hi - lo);
      pthread_mutex_lock(&c->lock);
    }
    if (--c->pending == 0) pthread_cond_signal(&c->done);
  }
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

hc_cuda_copier_t *hc_cuda_copier_create(unsigned threads) {
  if (threads < 1) threads = 1;
  hc_cuda_copier_t *c = calloc(1, sizeof *c + threads * sizeof(pthread_t));
  if (!c) return NULL;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->go, NULL);
  pthread_cond_init(&c->done, NULL);
  c->threads = threads;
  for (unsigned i = 1; i < threads; i++) {
    worker_arg_t *a = malloc(sizeof *a);
    if (!a) break;
    a->c = c;
    a->index = i;
    if (pthread_create(&c->tid[c->started], NULL, worker, a) != 0) {
      free(a);
      break;
    }
    c->started++;
  }
  if (c->started + 1 < threads) {
    hc_cuda_copier_destroy(c);
    return NULL;
  }
  return c;
}

void hc_cuda_copier_destroy(hc_cuda_copier_t *c) {
  if (!c) return;
  pthread_mutex_lock(&c->lock);
  c->quit = 1;
  pthread_cond_broadcast(&c->go);
  pthread_mutex_unlock(&c->lock);
  for (unsigned i = 0; i < c->started; i++) pthread_join(c->tid[i], NULL);
  pthread_cond_destroy(&c->go);
  pthread_cond_destroy(&c->done);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

void hc_cuda_copier_memcpy(hc_cuda_copier_t *c, void *dst, const void *src, size_t n) {
  unsigned parts = c ? c->started + 1 : 1;
  while (parts > 1 && n / parts < HC_COPIER_MIN_SHARE) parts--;
  if (parts == 1) {
    memcpy(dst, src, n);
    return;
  }
  pthread_mutex_lock(&c->lock);
  c->dst = dst;
  c->src = src;
  c->n = n;
  c->parts = parts;
  c->pending = c->started; /* every worker checks in, idle ones at once */
  c->gen++;
  pthread_cond_broadcast(&c->go);
  pthread_mutex_unlock(&c->lock);
  size_t lo, hi;
  share(n, parts, 0, &lo, &hi);
  memcpy(dst, src, hi - lo);
  pthread_mutex_lock(&c->lock);
  while (c->pending) pthread_cond_wait(&c->done, &c->lock);
  pthread_mutex_unlock(&c->lock);
}
