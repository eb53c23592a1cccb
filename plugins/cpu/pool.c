#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <hc/hc.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* How long an idle worker spins before it sleeps, in seconds: long enough
 * to bridge the gap between back-to-back launches. */
#define SPIN_SECONDS 200e-6

typedef struct {
  hc_host_kernel_fn fn;
  void *const *args;
  unsigned dims;
  size_t global[3], local[3], ngroups[3];
  size_t total;
} launch_t;

struct hc_cpu_pool {
  unsigned n;            /* threads including the caller */
  atomic_uint active;    /* of them, those that launches use (ids below it) */
  unsigned long resumed; /* the generation when `active` last changed (under mu) */
  pthread_t *threads;
  launch_t job;
  atomic_ulong generation; /* bumped per launch; odd/even irrelevant */
  atomic_size_t next;      /* next group to claim */
  atomic_uint done;        /* workers finished with this generation */
  atomic_int stop;
  atomic_int sleepers;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_cond_t unused; /* where the workers left out of launches sleep */
};

typedef struct {
  hc_cpu_pool_t *pool;
  unsigned id;
  int core; /* < 0: not pinned */
} worker_arg_t;

static void run_groups(hc_cpu_pool_t *p, unsigned worker) {
  const launch_t *j = &p->job;
  hc_host_group_t g;
  memset(&g, 0, sizeof g);
  g.dims = j->dims;
  g.worker = worker;
  g.num_workers = p->n;
  for (unsigned d = 0; d < 3; d++) {
    g.num_groups[d] = j->ngroups[d];
    g.global[d] = j->global[d];
  }
  for (;;) {
    size_t idx = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (idx >= j->total) break;
    size_t rest = idx;
    for (unsigned d = 0; d < 3; d++) {
      g.group_id[d] = rest % j->ngroups[d];
      rest /= j->ngroups[d];
      g.lo[d] = g.group_id[d] * j->local[d];
      size_t hi = g.lo[d] + j->local[d];
      g.hi[d] = hi < j->global[d] ? hi : j->global[d];
    }
    j->fn(&g, j->args);
  }
}

/* A worker stays on its core (several cpu devices: each on its own). */
static void pin(int core) {
  if (core < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *worker_main(void *arg) {
  worker_arg_t *wa = arg;
  hc_cpu_pool_t *p = wa->pool;
  unsigned id = wa->id;
  pin(wa->core);
  free(wa);
  /* The generation the pool was created with (0), not the current one: a
   * launch may bump it before this thread first runs, and that launch
   * waits for this worker too. */
  unsigned long seen = 0;
  for (;;) {
    /* Left out of launches (hc_cpu_pool_set_active): its core stays free
     * until it is used again; it then waits for the next launch. */
    if (id >= atomic_load(&p->active)) {
      pthread_mutex_lock(&p->mu);
      while (id >= atomic_load(&p->active) && !atomic_load(&p->stop)) pthread_cond_wait(&p->unused, &p->mu);
      /* The launches from the change on are this worker's, even one that
       * began before it woke. */
      seen = p->resumed;
      pthread_mutex_unlock(&p->mu);
    }
    /* Spin for a while, then sleep until the generation changes. */
    double t0 = hc_now();
    unsigned spins = 0;
    while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen && !atomic_load(&p->stop) &&
           id < atomic_load(&p->active)) {
      cpu_relax();
      if (++spins % 256 == 0 && hc_now() - t0 > SPIN_SECONDS) {
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->sleepers, 1);
        while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop) && id < atomic_load(&p->active))
          pthread_cond_wait(&p->cv, &p->mu);
        atomic_fetch_sub(&p->sleepers, 1);
        pthread_mutex_unlock(&p->mu);
      }
    }
    if (atomic_load(&p->stop)) return NULL;
    if (id >= atomic_load(&p->active)) continue;
    seen = atomic_load_explicit(&p->generation, memory_order_acquire);
    run_groups(p, id);
    atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel);
  }
}

hc_cpu_pool_t *hc_cpu_pool_create(unsigned nthreads, const int *cores) {
  if (nthreads < 1) nthreads = 1;
  hc_cpu_pool_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = nthreads;
  atomic_init(&p->active, nthreads);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_cond_init(&p->unused, NULL);
  p->threads = calloc(nthreads, sizeof *p->threads);
  if (!p->threads) {
    free(p);
    return NULL;
  }
  for (unsigned i = 1; i < nthreads; i++) {
    worker_arg_t *wa = malloc(sizeof *wa);
    if (wa) wa->core = cores ? cores[i - 1] : -1;
    if (!wa || pthread_create(&p->threads[i], NULL, worker_main, wa ? (wa->pool = p, wa->id = i, wa) : NULL) != 0) {
      free(wa);
      p->n = i; /* run with the workers we have */
      atomic_store(&p->active, i);
      break;
    }
  }
  return p;
}

void hc_cpu_pool_destroy(hc_cpu_pool_t *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->cv);
  pthread_cond_broadcast(&p->unused);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  pthread_cond_destroy(&p->unused);
  free(p->threads);
  free(p);
}

unsigned hc_cpu_pool_size(const hc_cpu_pool_t *p) { return p ? atomic_load(&((hc_cpu_pool_t *)p)->active) : 0; }

void hc_cpu_pool_set_active(hc_cpu_pool_t *p, unsigned threads) {
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->active, threads && threads < p->n ? threads : p->n);
  p->resumed = atomic_load(&p->generation);
  pthread_cond_broadcast(&p->cv);     /* those left out now stop waiting for launches */
  pthread_cond_broadcast(&p->unused); /* those used again wake up */
  pthread_mutex_unlock(&p->mu);
}

void hc_cpu_pool_run(hc_cpu_pool_t *p, hc_host_kernel_fn fn, void *const *args, unsigned dims, const size_t global[3],
                     const size_t local[3]) {
  launch_t *j = &p->job;
  j->fn = fn;
  j->args = args;
  j->dims = dims;
  j->total = 1;
  for (unsigned d = 0; d < 3; d++) {
    j->global[d] = global[d];
    j->local[d] = local[d] ? local[d] : 1;
    j->ngroups[d] = (global[d] + j->local[d] - 1) / j->local[d];
    j->total *= j->ngroups[d];
  }
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  const unsigned active = atomic_load(&p->active);
  if (active == 1 || j->total == 1) {
    /* Nothing to share: run inline without waking anyone. */
    run_groups(p, 0);
    return;
  }
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  atomic_fetch_add(&p->generation, 1); /* seq_cst: pairs with the sleepers count */
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  run_groups(p, 0);
  while (atomic_load_explicit(&p->done, memory_order_acquire) < active - 1) cpu_relax();
}
