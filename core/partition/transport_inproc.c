/* The in-process transport: parts are threads of one process. A collective
 * is "post what I give, meet at a barrier, take what I need from the
 * others' posts, meet again" (the second meeting keeps a post alive until
 * every part has read it). Reductions combine the posts in rank order, so
 * every part gets the same bits. A halo exchange involves neighbours only:
 * each part posts its sides under the exchange's number, takes each
 * neighbour's post of the same number, says so, and waits until both
 * neighbours have taken its own. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

typedef struct {
  halo_sides_t halo;         /* exchange: the sides posted ... */
  uint64_t posted;           /* ... by this part's exchange number posted */
  uint64_t took_lo, took_hi; /* the exchanges whose neighbour's side it has taken */
  const void *mine;          /* allgather */
  hc_buffer_t *rows_buf;     /* allgather of rows between peers: rows_buf[rows_off, + bytes) */
  size_t rows_off;
  size_t bytes;
  double values[HC_PART_REDUCE_MAX];
} post_t;

typedef struct {
  hc_transport_t base;
  uint32_t n;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t arrived;
  uint64_t generation;
  int aborted;
  post_t *posts;
} inproc_t;

static hc_status_t aborted_error(void) { return hc_error(HC_ERR_DEVICE, "another part of the split run failed"); }

static uint32_t ip_count(hc_transport_t *t) { return ((inproc_t *)t)->n; }
static uint32_t ip_self(hc_transport_t *t) {
  (void)t;
  return HC_TRANSPORT_ALL;
}

/* Meets the other parts; HC_ERR_DEVICE once any part has aborted. */
static hc_status_t meet(inproc_t *t, double *waited_s) {
  double t0 = hc_now();
  pthread_mutex_lock(&t->mu);
  int ok = !t->aborted;
  if (ok) {
    uint64_t gen = t->generation;
    if (++t->arrived == t->n) {
      t->arrived = 0;
      t->generation++;
      pthread_cond_broadcast(&t->cv);
    } else {
      while (gen == t->generation && !t->aborted) pthread_cond_wait(&t->cv, &t->mu);
      ok = gen != t->generation;
    }
  }
  pthread_mutex_unlock(&t->mu);
  if (waited_s) *waited_s += hc_now() - t0;
  return ok ? HC_OK : aborted_error();
}

static hc_status_t ip_barrier(hc_transport_t *tr, uint32_t rank, double *waited_s) {
  (void)rank;
  return meet((inproc_t *)tr, waited_s);
}

/* My halo from the neighbour `from` (its side facing me is `theirs`). */
static hc_status_t take_side(const halo_sides_t *me, int lo, uint32_t rank, uint32_t from, const halo_sides_t *theirs) {
  size_t want = lo ? me->lo_bytes : me->hi_bytes, sent = lo ? theirs->hi_bytes : theirs->lo_bytes;
  int peer = lo ? me->peer_lo : me->peer_hi, their_peer = lo ? theirs->peer_hi : theirs->peer_lo;
  if (sent != want || peer != their_peer)
    return hc_error(HC_ERR_INTERNAL, "halo exchange: part %u sends %zu bytes%s, part %u expects %zu%s", from, sent,
                    their_peer ? " device to device" : "", rank, want, peer ? " device to device" : "");
  if (!want) return HC_OK;
  if (!peer) {
    memcpy(lo ? me->from_lo : me->from_hi, lo ? theirs->to_hi : theirs->to_lo, want);
    return HC_OK;
  }
  return hc_buffer_copy(me->buf, lo ? me->halo_lo_off : me->halo_hi_off, theirs->buf,
                        lo ? theirs->own_hi_off : theirs->own_lo_off, want);
}

hc_status_t hc__inproc_exchange_begin(hc_transport_t *tr, uint32_t rank, const halo_sides_t *h) {
  inproc_t *t = (inproc_t *)tr;
  pthread_mutex_lock(&t->mu);
  const int ok = !t->aborted;
  if (ok) {
    t->posts[rank].halo = *h;
    t->posts[rank].posted++;
    pthread_cond_broadcast(&t->cv);
  }
  pthread_mutex_unlock(&t->mu);
  return ok ? HC_OK : aborted_error();
}

/* Waits (with t->mu held) until *counter reaches `at` or a part aborted;
 * 1 when it reached it. */
static int wait_count(inproc_t *t, const uint64_t *counter, uint64_t at) {
  while (*counter < at && !t->aborted) pthread_cond_wait(&t->cv, &t->mu);
  return !t->aborted;
}

/* Takes each neighbour's side of this exchange (both have the same
 * number: every part makes the same exchanges), then waits until both
 * have taken this part's: only then may its posted rows change. A side
 * that fails to copy is still marked taken, so that the neighbour does not
 * wait for it; the error is this part's. */
hc_status_t hc__inproc_exchange_end(hc_transport_t *tr, uint32_t rank, double *waited_s) {
  inproc_t *t = (inproc_t *)tr;
  post_t *me = &t->posts[rank];
  const uint64_t at = me->posted;
  const int has_lo = rank > 0, has_hi = rank + 1 < t->n;
  double t0 = hc_now(), copying = 0;
  hc_status_t st = HC_OK;
  int ok = 1;
  for (int lo = 1; lo >= 0 && ok; lo--) {
    if (!(lo ? has_lo : has_hi)) continue;
    const uint32_t from = lo ? rank - 1 : rank + 1;
    pthread_mutex_lock(&t->mu);
    ok = wait_count(t, &t->posts[from].posted, at);
    pthread_mutex_unlock(&t->mu);
    if (!ok) break;
    /* The neighbour's post stays as it is until it sees this part's mark. */
    const double c0 = hc_now();
    hc_status_t side = take_side(&me->halo, lo, rank, from, &t->posts[from].halo);
    copying += hc_now() - c0;
    if (st == HC_OK) st = side;
    pthread_mutex_lock(&t->mu);
    *(lo ? &me->took_lo : &me->took_hi) = at;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
  }
  if (ok) {
    pthread_mutex_lock(&t->mu);
    ok = (!has_lo || wait_count(t, &t->posts[rank - 1].took_hi, at)) &&
         (!has_hi || wait_count(t, &t->posts[rank + 1].took_lo, at));
    pthread_mutex_unlock(&t->mu);
  }
  if (waited_s) *waited_s += hc_now() - t0 - copying;
  if (!ok) return aborted_error();
  return st;
}

static hc_status_t ip_exchange_begin(hc_transport_t *tr, uint32_t rank, const void *to_lo, size_t lo_bytes,
                                     const void *to_hi, size_t hi_bytes, void *from_lo, void *from_hi) {
  const halo_sides_t h = {.to_lo = to_lo,
                          .to_hi = to_hi,
                          .from_lo = from_lo,
                          .from_hi = from_hi,
                          .lo_bytes = lo_bytes,
                          .hi_bytes = hi_bytes};
  return hc__inproc_exchange_begin(tr, rank, &h);
}

static hc_status_t ip_exchange(hc_transport_t *tr, uint32_t rank, const void *to_lo, size_t lo_bytes, const void *to_hi,
                               size_t hi_bytes, void *from_lo, void *from_hi, double *waited_s) {
  hc_status_t st = ip_exchange_begin(tr, rank, to_lo, lo_bytes, to_hi, hi_bytes, from_lo, from_hi);
  return st == HC_OK ? hc__inproc_exchange_end(tr, rank, waited_s) : st;
}

static hc_status_t ip_allreduce(hc_transport_t *tr, uint32_t rank, hc_reduce_op_t op, double *values, uint32_t n,
                                double *waited_s) {
  inproc_t *t = (inproc_t *)tr;
  if (n > HC_PART_REDUCE_MAX)
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_allreduce: %u values (at most %d)", n, HC_PART_REDUCE_MAX);
  memcpy(t->posts[rank].values, values, n * sizeof *values);
  hc_status_t st = meet(t, waited_s);
  if (st != HC_OK) return st;
  double all[HC_DEVSET_MAX * HC_PART_REDUCE_MAX];
  for (uint32_t r = 0; r < t->n; r++) memcpy(all + (size_t)r * n, t->posts[r].values, n * sizeof *values);
  hc_reduce_combine(op, all, t->n, n, values);
  return meet(t, waited_s);
}

static hc_status_t ip_allgather(hc_transport_t *tr, uint32_t rank, const void *mine, size_t bytes, void *all,
                                size_t capacity, size_t *total, double *waited_s) {
  inproc_t *t = (inproc_t *)tr;
  t->posts[rank].mine = mine;
  t->posts[rank].bytes = bytes;
  hc_status_t st = meet(t, waited_s);
  if (st != HC_OK) return st;
  size_t sum = 0;
  for (uint32_t r = 0; r < t->n; r++) sum += t->posts[r].bytes;
  if (sum > capacity) st = hc_error(HC_ERR_INVALID_ARG, "hc_part_allgather: %zu bytes do not fit %zu", sum, capacity);
  char *dst = all;
  for (uint32_t r = 0; st == HC_OK && r < t->n; r++) {
    if (t->posts[r].bytes) memcpy(dst, t->posts[r].mine, t->posts[r].bytes);
    dst += t->posts[r].bytes;
  }
  if (total) *total = sum;
  hc_status_t st2 = meet(t, waited_s);
  return st != HC_OK ? st : st2;
}

hc_status_t hc__inproc_allgather_buffers(hc_transport_t *tr, uint32_t rank, hc_buffer_t *buf, size_t off, size_t bytes,
                                         double *waited_s) {
  inproc_t *t = (inproc_t *)tr;
  post_t *me = &t->posts[rank];
  me->rows_buf = buf, me->rows_off = off, me->bytes = bytes;
  hc_status_t st = meet(t, waited_s);
  if (st != HC_OK) return st;
  for (uint32_t r = 0; r < t->n && st == HC_OK; r++)
    if (r != rank && t->posts[r].bytes)
      st = hc_buffer_copy(buf, t->posts[r].rows_off, t->posts[r].rows_buf, t->posts[r].rows_off, t->posts[r].bytes);
  hc_status_t st2 = meet(t, waited_s);
  return st != HC_OK ? st : st2;
}

static void ip_abort(hc_transport_t *tr, uint32_t rank) {
  (void)rank;
  inproc_t *t = (inproc_t *)tr;
  pthread_mutex_lock(&t->mu);
  t->aborted = 1;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static void ip_destroy(hc_transport_t *tr) {
  inproc_t *t = (inproc_t *)tr;
  if (!t) return;
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  free(t->posts);
  free(t);
}

/* Parts in one process share their results directly: gather and agree
 * (for parts in separate processes) are not needed. */
static const hc_transport_ops_t inproc_ops = {
    .size = sizeof(hc_transport_ops_t),
    .name = "in-process",
    .count = ip_count,
    .self = ip_self,
    .barrier = ip_barrier,
    .exchange = ip_exchange,
    .allreduce = ip_allreduce,
    .allgather = ip_allgather,
    .abort = ip_abort,
    .destroy = ip_destroy,
    .exchange_begin = ip_exchange_begin,
    .exchange_end = hc__inproc_exchange_end,
};

hc_status_t hc__transport_inproc_create(uint32_t nparts, hc_transport_t **out) {
  inproc_t *t = calloc(1, sizeof *t);
  if (t) t->posts = calloc(nparts, sizeof *t->posts);
  if (!t || !t->posts) {
    free(t);
    return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  }
  t->base.ops = &inproc_ops;
  t->n = nparts;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  *out = &t->base;
  return HC_OK;
}
