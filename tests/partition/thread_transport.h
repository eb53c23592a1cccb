/* A transport whose "processes" are threads of the test (hc/transport.h),
 * so that a split over processes runs, and is checked under the
 * sanitizers, without MPI: tt_create(n) gives n transports over shared
 * state, the k-th with self k, each for one thread's device set. Every
 * call meets the others, takes what it needs from their posts, and meets
 * them again; reductions combine in part order (hc_reduce_combine). */
#ifndef HC_TEST_THREAD_TRANSPORT_H
#define HC_TEST_THREAD_TRANSPORT_H

#include <hc/transport.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TT_MAX 8

typedef struct {
  const void *to_lo, *to_hi, *mine;
  size_t lo_bytes, hi_bytes, bytes;
  double values[HC_PART_REDUCE_MAX];
  hc_status_t status;
  int secondary;
  char message[1024];
} tt_post_t;

typedef struct {
  uint32_t arrived;
  uint64_t generation;
} tt_meeting_t;

/* Two meeting points, as MPI's data and control communicators: the
 * collectives' (left at an abort) and agree's (which works after one), so
 * that an agree never completes a meeting of collectives. */
typedef struct {
  uint32_t n;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tt_meeting_t data, ctl;
  int aborted;
  tt_post_t posts[TT_MAX];
} tt_shared_t;

typedef struct {
  hc_transport_t base;
  tt_shared_t *sh;
  uint32_t self;
  int aborted_here;
} tt_t;

/* Meets the others at the data meeting (watch: left once a part aborted)
 * or the control one. */
static hc_status_t tt_meet(tt_t *t, int watch) {
  tt_shared_t *s = t->sh;
  tt_meeting_t *m = watch ? &s->data : &s->ctl;
  pthread_mutex_lock(&s->mu);
  int ok = !(watch && s->aborted);
  if (ok) {
    const uint64_t gen = m->generation;
    if (++m->arrived == s->n) {
      m->arrived = 0;
      m->generation++;
      pthread_cond_broadcast(&s->cv);
    } else {
      while (gen == m->generation && !(watch && s->aborted)) pthread_cond_wait(&s->cv, &s->mu);
      ok = gen != m->generation;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return ok ? HC_OK : hc_error(HC_ERR_DEVICE, "another part of the split run failed");
}

static uint32_t tt_count(hc_transport_t *t) { return ((tt_t *)t)->sh->n; }
static uint32_t tt_self(hc_transport_t *t) { return ((tt_t *)t)->self; }

static hc_status_t tt_barrier(hc_transport_t *tr, uint32_t part, double *waited_s) {
  (void)part, (void)waited_s;
  return tt_meet((tt_t *)tr, 1);
}

static hc_status_t tt_exchange(hc_transport_t *tr, uint32_t part, const void *to_lo, size_t lo_bytes, const void *to_hi,
                               size_t hi_bytes, void *from_lo, void *from_hi, double *waited_s) {
  (void)part, (void)waited_s;
  tt_t *t = (tt_t *)tr;
  tt_post_t *me = &t->sh->posts[t->self];
  me->to_lo = to_lo, me->to_hi = to_hi, me->lo_bytes = lo_bytes, me->hi_bytes = hi_bytes;
  hc_status_t st = tt_meet(t, 1);
  if (st != HC_OK) return st;
  if (lo_bytes) memcpy(from_lo, t->sh->posts[t->self - 1].to_hi, lo_bytes);
  if (hi_bytes) memcpy(from_hi, t->sh->posts[t->self + 1].to_lo, hi_bytes);
  return tt_meet(t, 1);
}

static hc_status_t tt_allreduce(hc_transport_t *tr, uint32_t part, hc_reduce_op_t op, double *values, uint32_t n,
                                double *waited_s) {
  (void)part, (void)waited_s;
  tt_t *t = (tt_t *)tr;
  memcpy(t->sh->posts[t->self].values, values, n * sizeof *values);
  hc_status_t st = tt_meet(t, 1);
  if (st != HC_OK) return st;
  double all[TT_MAX * HC_PART_REDUCE_MAX];
  for (uint32_t r = 0; r < t->sh->n; r++) memcpy(all + r * n, t->sh->posts[r].values, n * sizeof *values);
  hc_reduce_combine(op, all, t->sh->n, n, values);
  return tt_meet(t, 1);
}

static hc_status_t tt_gathers(tt_t *t, int everywhere, const void *mine, size_t bytes, void *all, size_t capacity,
                              size_t *total) {
  t->sh->posts[t->self].mine = mine;
  t->sh->posts[t->self].bytes = bytes;
  hc_status_t st = tt_meet(t, 1);
  if (st != HC_OK) return st;
  size_t sum = 0;
  for (uint32_t r = 0; r < t->sh->n; r++) sum += t->sh->posts[r].bytes;
  const int receives = everywhere || t->self == 0;
  if (receives && sum > capacity) st = hc_error(HC_ERR_INVALID_ARG, "%zu bytes do not fit %zu", sum, capacity);
  size_t at = 0;
  for (uint32_t r = 0; st == HC_OK && receives && r < t->sh->n; r++) {
    if (t->sh->posts[r].bytes) memcpy((char *)all + at, t->sh->posts[r].mine, t->sh->posts[r].bytes);
    at += t->sh->posts[r].bytes;
  }
  if (total) *total = sum;
  hc_status_t st2 = tt_meet(t, 1);
  return st != HC_OK ? st : st2;
}

static hc_status_t tt_allgather(hc_transport_t *tr, uint32_t part, const void *mine, size_t bytes, void *all,
                                size_t capacity, size_t *total, double *waited_s) {
  (void)part, (void)waited_s;
  return tt_gathers((tt_t *)tr, 1, mine, bytes, all, capacity, total);
}

static hc_status_t tt_gather(hc_transport_t *tr, uint32_t part, const void *mine, size_t bytes, void *all,
                             size_t capacity, size_t *total, double *waited_s) {
  (void)part, (void)waited_s;
  return tt_gathers((tt_t *)tr, 0, mine, bytes, all, capacity, total);
}

/* Works after an abort too (meets without watching for one). */
static hc_status_t tt_agree(hc_transport_t *tr, uint32_t part, hc_status_t *status, char *message, size_t cap,
                            uint32_t *from) {
  (void)part;
  tt_t *t = (tt_t *)tr;
  tt_post_t *me = &t->sh->posts[t->self];
  me->status = *status;
  me->secondary = *status != HC_OK && !t->aborted_here;
  snprintf(me->message, sizeof me->message, "%s", message ? message : "");
  tt_meet(t, 0);
  int pick = -1;
  for (int pass = 0; pass < 3 && pick < 0; pass++)
    for (uint32_t r = 0; r < t->sh->n && pick < 0; r++) {
      const tt_post_t *p = &t->sh->posts[r];
      if ((pass == 0 && p->status != HC_OK && p->status != HC_ERR_VERIFY && !p->secondary) ||
          (pass == 1 && p->status != HC_OK && p->status != HC_ERR_VERIFY) || (pass == 2 && p->status != HC_OK))
        pick = (int)r;
    }
  const tt_post_t *d = &t->sh->posts[pick < 0 ? 0 : pick];
  *status = pick < 0 ? HC_OK : d->status;
  if (message && cap) snprintf(message, cap, "%s", pick < 0 ? "" : d->message);
  if (from) *from = pick < 0 ? 0 : (uint32_t)pick;
  tt_meet(t, 0);
  return HC_OK;
}

static void tt_abort(hc_transport_t *tr, uint32_t part) {
  (void)part;
  tt_t *t = (tt_t *)tr;
  pthread_mutex_lock(&t->sh->mu);
  if (!t->sh->aborted) t->aborted_here = 1;
  t->sh->aborted = 1;
  pthread_cond_broadcast(&t->sh->cv);
  pthread_mutex_unlock(&t->sh->mu);
}

static void tt_destroy(hc_transport_t *tr) { (void)tr; }

/* Host memory in place, as MPI takes it (the exchange is a memcpy). */
static int tt_takes_memory(hc_transport_t *tr, uint32_t kind) {
  (void)tr;
  return kind == HC_NATIVE_HOST;
}

static const hc_transport_ops_t tt_ops = {
    .size = sizeof(hc_transport_ops_t),
    .name = "test threads",
    .count = tt_count,
    .self = tt_self,
    .barrier = tt_barrier,
    .exchange = tt_exchange,
    .allreduce = tt_allreduce,
    .allgather = tt_allgather,
    .gather = tt_gather,
    .agree = tt_agree,
    .abort = tt_abort,
    .destroy = tt_destroy,
    .takes_memory = tt_takes_memory,
};

/* n transports over one shared state (tt_free frees them). */
static tt_t *tt_create(uint32_t n) {
  tt_shared_t *sh = calloc(1, sizeof *sh);
  tt_t *t = calloc(n, sizeof *t);
  sh->n = n;
  pthread_mutex_init(&sh->mu, NULL);
  pthread_cond_init(&sh->cv, NULL);
  for (uint32_t i = 0; i < n; i++) t[i] = (tt_t){.base = {&tt_ops}, .sh = sh, .self = i};
  return t;
}

static void tt_free(tt_t *t) {
  pthread_mutex_destroy(&t[0].sh->mu);
  pthread_cond_destroy(&t[0].sh->cv);
  free(t[0].sh);
  free(t);
}

#endif
