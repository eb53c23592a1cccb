/* The transport of a process that drives several devices in a split over
 * an outer transport (MPI ranks; rank_devices.c). Its parts are threads of
 * this process, parts first .. first + n - 1 of the whole split's total.
 *
 * Every call is collective over the process's parts: each part posts its
 * call and waits. The thread that started the run serves the calls
 * (hc__bridge_serve), since it is the only thread that may talk to the
 * outer transport (MPI_THREAD_FUNNELED): once every part has posted, it
 * copies the halos between this process's own parts, moves the halos at
 * its ends and the collectives through the outer transport, and releases
 * the parts. A reduction gathers every part's values everywhere and
 * combines them in part order (hc_reduce_combine), so its bits are those
 * of any other transport over the same parts. exchange_begin posts and
 * returns: the exchange is served while the part computes its interior. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

typedef enum { CALL_BARRIER = 1, CALL_EXCHANGE, CALL_ALLREDUCE, CALL_ALLGATHER, CALL_GATHER } call_kind_t;

static const char *const call_names[] = {"", "barrier", "halo exchange", "all-reduce", "all-gather", "gather"};

/* One part's posted call. */
typedef struct {
  call_kind_t kind;
  uint64_t posted, served;   /* calls posted, and of them served */
  hc_status_t status;        /* of the last one served */
  const void *to_lo, *to_hi; /* exchange */
  void *from_lo, *from_hi;
  size_t lo_bytes, hi_bytes;
  hc_reduce_op_t op; /* allreduce */
  double *values;
  uint32_t nvalues;
  const void *mine; /* allgather, gather */
  size_t bytes, capacity, total;
  void *all;
} call_t;

typedef struct {
  hc_transport_t base;
  hc_transport_t *outer;
  uint32_t outer_self; /* this process's part of the outer transport */
  uint32_t first, n, total;
  pthread_mutex_t mu;
  pthread_cond_t to_server, to_parts;
  uint32_t nposted, ndone;
  int aborted; /* a part or a served call failed: every call fails from now on */
  int told;    /* the outer transport has been told */
  char message[1024];
  call_t *calls;
  /* The serving thread's staging for packed gathers and reductions; it
   * only grows, so a run's steps (nbody's all-gather each step) do not
   * allocate. */
  void *scratch;
  size_t scratch_bytes;
} bridge_t;

static uint32_t br_count(hc_transport_t *t) { return ((bridge_t *)t)->total; }
static uint32_t br_self(hc_transport_t *t) {
  (void)t;
  return HC_TRANSPORT_ALL;
}

/* The error of a call once the transport is aborted: what failed when a
 * served call did, else another part's failure. */
static hc_status_t aborted_error(bridge_t *b) {
  return b->message[0] ? hc_error(HC_ERR_DEVICE, "%s", b->message)
                       : hc_error(HC_ERR_DEVICE, "another part of the split run failed");
}

static hc_status_t post(bridge_t *b, uint32_t part, const call_t *c) {
  pthread_mutex_lock(&b->mu);
  const int ok = !b->aborted;
  if (ok) {
    call_t *me = &b->calls[part - b->first];
    const uint64_t posted = me->posted, served = me->served;
    *me = *c;
    me->posted = posted + 1;
    me->served = served;
    if (++b->nposted == b->n) pthread_cond_signal(&b->to_server);
  }
  pthread_mutex_unlock(&b->mu);
  return ok ? HC_OK : aborted_error(b);
}

/* Waits until the part's last posted call is served (or the transport is
 * aborted), and counts the wait as waited. */
static hc_status_t wait_served(bridge_t *b, uint32_t part, double *waited_s) {
  const double t0 = hc_now();
  pthread_mutex_lock(&b->mu);
  call_t *me = &b->calls[part - b->first];
  while (me->served < me->posted && !b->aborted) pthread_cond_wait(&b->to_parts, &b->mu);
  const int served = me->served >= me->posted;
  const hc_status_t st = served ? me->status : HC_ERR_DEVICE;
  if (waited_s) *waited_s += hc_now() - t0;
  pthread_mutex_unlock(&b->mu);
  if (!served || st != HC_OK) return aborted_error(b);
  return HC_OK;
}

static hc_status_t call(bridge_t *b, uint32_t part, const call_t *c, double *waited_s) {
  hc_status_t st = post(b, part, c);
  return st == HC_OK ? wait_served(b, part, waited_s) : st;
}

static hc_status_t br_barrier(hc_transport_t *t, uint32_t part, double *waited_s) {
  const call_t c = {.kind = CALL_BARRIER};
  return call((bridge_t *)t, part, &c, waited_s);
}

static hc_status_t br_exchange_begin(hc_transport_t *t, uint32_t part, const void *to_lo, size_t lo_bytes,
                                     const void *to_hi, size_t hi_bytes, void *from_lo, void *from_hi) {
  const call_t c = {.kind = CALL_EXCHANGE,
                    .to_lo = to_lo,
                    .to_hi = to_hi,
                    .from_lo = from_lo,
                    .from_hi = from_hi,
                    .lo_bytes = lo_bytes,
                    .hi_bytes = hi_bytes};
  return post((bridge_t *)t, part, &c);
}

static hc_status_t br_exchange_end(hc_transport_t *t, uint32_t part, double *waited_s) {
  return wait_served((bridge_t *)t, part, waited_s);
}

static hc_status_t br_exchange(hc_transport_t *t, uint32_t part, const void *to_lo, size_t lo_bytes, const void *to_hi,
                               size_t hi_bytes, void *from_lo, void *from_hi, double *waited_s) {
  hc_status_t st = br_exchange_begin(t, part, to_lo, lo_bytes, to_hi, hi_bytes, from_lo, from_hi);
  return st == HC_OK ? br_exchange_end(t, part, waited_s) : st;
}

static hc_status_t br_allreduce(hc_transport_t *t, uint32_t part, hc_reduce_op_t op, double *values, uint32_t n,
                                double *waited_s) {
  if (n > HC_PART_REDUCE_MAX)
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_allreduce: %u values (at most %d)", n, HC_PART_REDUCE_MAX);
  const call_t c = {.kind = CALL_ALLREDUCE, .op = op, .values = values, .nvalues = n};
  return call((bridge_t *)t, part, &c, waited_s);
}

/* allgather and gather: the same call but for who receives. */
static hc_status_t gathers(hc_transport_t *t, call_kind_t kind, uint32_t part, const void *mine, size_t bytes,
                           void *all, size_t capacity, size_t *total, double *waited_s) {
  bridge_t *b = (bridge_t *)t;
  const call_t c = {.kind = kind, .mine = mine, .bytes = bytes, .all = all, .capacity = capacity};
  hc_status_t st = call(b, part, &c, waited_s);
  if (st == HC_OK && total) *total = b->calls[part - b->first].total;
  return st;
}

static hc_status_t br_allgather(hc_transport_t *t, uint32_t part, const void *mine, size_t bytes, void *all,
                                size_t capacity, size_t *total, double *waited_s) {
  return gathers(t, CALL_ALLGATHER, part, mine, bytes, all, capacity, total, waited_s);
}

static hc_status_t br_gather(hc_transport_t *t, uint32_t part, const void *mine, size_t bytes, void *all,
                             size_t capacity, size_t *total, double *waited_s) {
  return gathers(t, CALL_GATHER, part, mine, bytes, all, capacity, total, waited_s);
}

static void br_abort(hc_transport_t *t, uint32_t part) {
  (void)part;
  bridge_t *b = (bridge_t *)t;
  pthread_mutex_lock(&b->mu);
  b->aborted = 1;
  pthread_cond_broadcast(&b->to_parts);
  pthread_cond_signal(&b->to_server);
  pthread_mutex_unlock(&b->mu);
}

/* The halos between this process's parts, by copying. */
static hc_status_t serve_local_halos(bridge_t *b) {
  for (uint32_t i = 1; i < b->n; i++) {
    call_t *lo = &b->calls[i - 1], *hi = &b->calls[i];
    if (lo->hi_bytes != hi->lo_bytes)
      return hc_error(HC_ERR_INTERNAL, "halo exchange: part %u sends %zu bytes, part %u expects %zu", b->first + i - 1,
                      lo->hi_bytes, b->first + i, hi->lo_bytes);
    if (hi->lo_bytes) memcpy(hi->from_lo, lo->to_hi, hi->lo_bytes);
    if (lo->hi_bytes) memcpy(lo->from_hi, hi->to_lo, lo->hi_bytes);
  }
  return HC_OK;
}

/* The serving thread's staging, at least `bytes` of it. */
static void *scratch(bridge_t *b, size_t bytes, const char *what) {
  if (bytes == 0) bytes = 1; /* a buffer even for nothing to stage */
  if (bytes <= b->scratch_bytes) return b->scratch;
  void *grown = realloc(b->scratch, bytes);
  if (!grown) {
    hc_error(HC_ERR_NO_MEMORY, "split run: cannot stage %zu bytes for the processes' %s", bytes, what);
    return NULL;
  }
  b->scratch = grown;
  b->scratch_bytes = bytes;
  return grown;
}

/* The parts' bytes in part order: the one part's own buffer, or several
 * concatenated in the staging. */
static hc_status_t pack(bridge_t *b, const void **out, size_t *bytes) {
  size_t sum = 0;
  for (uint32_t i = 0; i < b->n; i++) sum += b->calls[i].bytes;
  *bytes = sum;
  if (b->n == 1) {
    *out = b->calls[0].mine;
    return HC_OK;
  }
  char *p = scratch(b, sum, "gather");
  if (!p) return HC_ERR_NO_MEMORY;
  size_t at = 0;
  for (uint32_t i = 0; i < b->n; i++) {
    if (b->calls[i].bytes) memcpy(p + at, b->calls[i].mine, b->calls[i].bytes);
    at += b->calls[i].bytes;
  }
  *out = p;
  return HC_OK;
}

static hc_status_t serve_allreduce(bridge_t *b, double *waited) {
  const uint32_t n = b->calls[0].nvalues;
  for (uint32_t i = 1; i < b->n; i++)
    if (b->calls[i].nvalues != n)
      return hc_error(HC_ERR_INTERNAL, "all-reduce: part %u reduces %u values, part %u %u", b->first, n, b->first + i,
                      b->calls[i].nvalues);
  double *mine = scratch(b, ((size_t)b->n + b->total) * n * sizeof *mine, "all-reduce");
  if (!mine) return HC_ERR_NO_MEMORY;
  double *all = mine + (size_t)b->n * n;
  for (uint32_t i = 0; i < b->n; i++) memcpy(mine + (size_t)i * n, b->calls[i].values, n * sizeof *mine);
  size_t got = 0, want = (size_t)b->total * n * sizeof *all;
  hc_status_t st =
      b->outer->ops->allgather(b->outer, b->outer_self, mine, (size_t)b->n * n * sizeof *mine, all, want, &got, waited);
  if (st == HC_OK && got != want)
    st = hc_error(HC_ERR_INTERNAL, "all-reduce: the processes gave %zu bytes of values, %u parts need %zu", got,
                  b->total, want);
  if (st == HC_OK) {
    hc_reduce_combine(b->calls[0].op, all, b->total, n, mine);
    for (uint32_t i = 0; i < b->n; i++) memcpy(b->calls[i].values, mine, n * sizeof *mine);
  }
  return st;
}

static hc_status_t serve_gathers(bridge_t *b, int everywhere, double *waited) {
  const void *packed = NULL;
  size_t bytes = 0, total = 0;
  call_t *c0 = &b->calls[0];
  hc_status_t st = pack(b, &packed, &bytes);
  if (st == HC_OK && everywhere)
    st = b->outer->ops->allgather(b->outer, b->outer_self, packed, bytes, c0->all, c0->capacity, &total, waited);
  else if (st == HC_OK)
    st = b->outer->ops->gather(b->outer, b->outer_self, packed, bytes, c0->all, c0->capacity, &total, waited);
  for (uint32_t i = 1; st == HC_OK && everywhere && i < b->n; i++) {
    if (total > b->calls[i].capacity)
      st = hc_error(HC_ERR_INVALID_ARG, "hc_part_allgather: %zu bytes do not fit %zu", total, b->calls[i].capacity);
    else if (total && b->calls[i].all != c0->all)
      memcpy(b->calls[i].all, c0->all, total);
  }
  for (uint32_t i = 0; i < b->n; i++) b->calls[i].total = total;
  return st;
}

/* Serves the call every part has posted (outside the lock: the parts wait
 * for it). */
static hc_status_t serve(bridge_t *b) {
  const call_kind_t kind = b->calls[0].kind;
  for (uint32_t i = 1; i < b->n; i++)
    if (b->calls[i].kind != kind)
      return hc_error(HC_ERR_INTERNAL, "split run: part %u calls the transport's %s while part %u calls its %s",
                      b->first, call_names[kind], b->first + i, call_names[b->calls[i].kind]);
  double waited = 0;
  hc_transport_t *o = b->outer;
  const call_t *lo = &b->calls[0], *hi = &b->calls[b->n - 1];
  switch (kind) {
  case CALL_BARRIER: return o->ops->barrier(o, b->outer_self, &waited);
  case CALL_EXCHANGE: {
    hc_status_t st = serve_local_halos(b);
    return st == HC_OK ? o->ops->exchange(o, b->outer_self, lo->to_lo, lo->lo_bytes, hi->to_hi, hi->hi_bytes,
                                          lo->from_lo, hi->from_hi, &waited)
                       : st;
  }
  case CALL_ALLREDUCE: return serve_allreduce(b, &waited);
  case CALL_ALLGATHER: return serve_gathers(b, 1, &waited);
  case CALL_GATHER: return serve_gathers(b, 0, &waited);
  }
  return hc_error(HC_ERR_INTERNAL, "split run: unknown transport call %d", (int)kind);
}

void hc__bridge_serve(hc_transport_t *t) {
  bridge_t *b = (bridge_t *)t;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    if (b->aborted && !b->told) {
      b->told = 1;
      pthread_mutex_unlock(&b->mu);
      b->outer->ops->abort(b->outer, b->outer_self);
      pthread_mutex_lock(&b->mu);
      continue;
    }
    if (b->ndone == b->n) break;
    if (!b->aborted && b->nposted && b->nposted + b->ndone == b->n && b->ndone) {
      /* A part ended while the others wait in a call it never made. */
      snprintf(b->message, sizeof b->message,
               "split run: a part of this process ended while the others wait for it in a transport call");
      b->aborted = 1;
      pthread_cond_broadcast(&b->to_parts);
      continue;
    }
    if (!b->aborted && b->nposted == b->n) {
      pthread_mutex_unlock(&b->mu);
      const hc_status_t st = serve(b);
      char message[sizeof b->message];
      snprintf(message, sizeof message, "%s", st == HC_OK ? "" : hc_last_error());
      pthread_mutex_lock(&b->mu);
      for (uint32_t i = 0; i < b->n; i++) {
        b->calls[i].status = st;
        b->calls[i].served = b->calls[i].posted;
      }
      b->nposted = 0;
      if (st != HC_OK) {
        snprintf(b->message, sizeof b->message, "%s", message);
        b->aborted = 1;
      }
      pthread_cond_broadcast(&b->to_parts);
      continue;
    }
    pthread_cond_wait(&b->to_server, &b->mu);
  }
  pthread_mutex_unlock(&b->mu);
}

void hc__bridge_part_done(hc_transport_t *t, uint32_t part) {
  (void)part;
  bridge_t *b = (bridge_t *)t;
  pthread_mutex_lock(&b->mu);
  b->ndone++;
  pthread_cond_signal(&b->to_server);
  pthread_mutex_unlock(&b->mu);
}

static void br_destroy(hc_transport_t *t) {
  bridge_t *b = (bridge_t *)t;
  if (!b) return;
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->to_server);
  pthread_cond_destroy(&b->to_parts);
  free(b->calls);
  free(b->scratch);
  free(b);
}

/* Host memory where the outer transport takes it too: the halos between
 * this process's parts are memcpy's, and the ends go to the outer one. */
static int br_takes_memory(hc_transport_t *t, uint32_t kind) {
  hc_transport_t *outer = ((bridge_t *)t)->outer;
  return kind == HC_NATIVE_HOST && TRANSPORT_HAS(outer, takes_memory) && outer->ops->takes_memory(outer, kind);
}

static const hc_transport_ops_t bridge_ops = {
    .size = sizeof(hc_transport_ops_t),
    .name = "in-process bridge",
    .count = br_count,
    .self = br_self,
    .barrier = br_barrier,
    .exchange = br_exchange,
    .allreduce = br_allreduce,
    .allgather = br_allgather,
    .gather = br_gather,
    .abort = br_abort,
    .destroy = br_destroy,
    .exchange_begin = br_exchange_begin,
    .exchange_end = br_exchange_end,
    .takes_memory = br_takes_memory,
};

hc_status_t hc__transport_bridge_create(hc_transport_t *outer, uint32_t first, uint32_t n, uint32_t total,
                                        hc_transport_t **out) {
  bridge_t *b = calloc(1, sizeof *b);
  if (b) b->calls = calloc(n, sizeof *b->calls);
  if (!b || !b->calls) {
    free(b);
    return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  }
  b->base.ops = &bridge_ops;
  b->outer = outer;
  b->outer_self = outer->ops->self(outer);
  b->first = first;
  b->n = n;
  b->total = total;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->to_server, NULL);
  pthread_cond_init(&b->to_parts, NULL);
  *out = &b->base;
  return HC_OK;
}
