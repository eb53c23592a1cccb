/* What a part's run() calls: its place in the split, halo exchanges and
 * collectives. Device data is staged through host memory here and moved by
 * the transport, except between parts of one process on one backend with
 * a peer copy (those halos move device to device) and where the transport
 * takes the field's memory in place (takes_memory: a cpu device's rows
 * over MPI, CUDA memory over a CUDA-aware MPI). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

HC_API uint32_t hc_part_index(const hc_part_t *p) { return p ? p->index : 0; }
HC_API uint32_t hc_part_count(const hc_part_t *p) { return p ? p->count : 1; }
HC_API int64_t hc_part_global_rows(const hc_part_t *p) { return p ? p->rows : 0; }
HC_API uint32_t hc_part_halo_below(const hc_part_t *p) { return p ? p->below : 0; }
HC_API uint32_t hc_part_halo_above(const hc_part_t *p) { return p ? p->above : 0; }

HC_API void hc_part_range(const hc_part_t *p, int64_t *lo, int64_t *hi) {
  if (lo) *lo = p ? p->lo : 0;
  if (hi) *hi = p ? p->hi : 0;
}

void hc__part_span(hc_part_t *p) {
  const uint32_t spans = p->dev ? hc__device_timer_spans(p->dev) : 0;
  if (spans == p->spans_seen) return;
  p->spans_seen = spans;
  p->timed_base = p->stats;
  p->timed_in_ops = p->in_ops_s;
}

void hc__part_timed_stats(hc_part_t *p, hc_part_stats_t *out, double *in_ops_s) {
  hc__part_span(p); /* a span begun after the last exchange: nothing in it */
  const hc_part_stats_t *s = &p->stats, *b = &p->timed_base;
  if (in_ops_s) *in_ops_s = p->in_ops_s - p->timed_in_ops;
  *out = *s;
  out->idle_s = s->idle_s - b->idle_s;
  out->halo_s = s->halo_s - b->halo_s;
  out->halo_bytes = s->halo_bytes - b->halo_bytes;
  out->collective_s = s->collective_s - b->collective_s;
  out->collectives = s->collectives - b->collectives;
  out->halo_peer_bytes = s->halo_peer_bytes - b->halo_peer_bytes;
  out->halo_direct_bytes = s->halo_direct_bytes - b->halo_direct_bytes;
}

void hc__part_free_stage(hc_part_t *p) {
  if (p->stage) hc_host_free(p->stage_dev, p->stage);
  p->stage = NULL;
  p->stage_dev = NULL;
  p->stage_area = 0;
}

/* The end of an exchange's half or a collective that began at t0: its
 * time into the running total. */
static void op_done(hc_part_t *p, double t0) { p->in_ops_s += hc_now() - t0; }

int hc__peer_halos(hc_device_t *a, hc_device_t *b) {
  long long on = 1;
  if (hc_config_int("HC_SPLIT_PEER", &on) != HC_OK) on = 1; /* checked when the context was made */
  return on && hc__devices_peer(a, b);
}

/* Host staging for the sides that need it: page-locked where the device's
 * backend offers it, so the copies to and from the device run at the
 * link's speed. */
static hc_status_t stage_for(hc_part_t *p, hc_device_t *dev, size_t area) {
  if (area <= p->stage_area && (!area || dev == p->stage_dev)) return HC_OK;
  hc__part_free_stage(p);
  if (hc_host_alloc(dev, 4 * area, (void **)&p->stage) != HC_OK)
    return hc_error(HC_ERR_NO_MEMORY, "halo exchange: cannot stage %zu bytes", 4 * area);
  p->stage_dev = dev;
  p->stage_area = area;
  return HC_OK;
}

/* The bytes of one row of f along axis 0. */
static size_t row_bytes(const hc_field_t *f) {
  const int64_t *shape = hc_field_shape(f);
  size_t rb = hc_dtype_size(hc_field_dtype(f));
  for (uint32_t d = 1; d < hc_field_rank(f); d++) rb *= (size_t)shape[d];
  return rb;
}

/* Where the transport takes f's rows in place (takes_memory), the address
 * of its buffer: host memory of a device that shares it, or CUDA memory;
 * else NULL (the rows are staged). */
static char *direct_base(const hc_part_t *p, const hc_buffer_t *buf) {
  if (!TRANSPORT_HAS(p->tr, takes_memory)) return NULL;
  void *host = hc_buffer_host_ptr(buf);
  if (host) return p->tr->ops->takes_memory(p->tr, HC_NATIVE_HOST) ? host : NULL;
  hc_native_mem_t m;
  if (!p->tr->ops->takes_memory(p->tr, HC_NATIVE_CUDA) || hc_buffer_native(buf, &m) != HC_OK) return NULL;
  return m.kind == HC_NATIVE_CUDA ? m.ptr : NULL;
}

/* Whether the transport exchanges in two halves. */
static int transport_splits(const hc_transport_t *t) {
  return TRANSPORT_HAS(t, exchange_begin) && TRANSPORT_HAS(t, exchange_end);
}

/* A half's time into the part's stats (staging and copies; the waits for
 * the neighbours count as idle) and, when tracing, a span named what. */
static void half_done(hc_part_t *p, double t0, double idle0, const char *what, size_t bytes) {
  p->stats.halo_s += hc_now() - t0 - (p->stats.idle_s - idle0);
  op_done(p, t0);
  hc__trace_t *trace = hc__trace_enter(p->ctx);
  if (trace) {
    char text[32];
    snprintf(text, sizeof text, "%zu", bytes);
    hc__trace_host(trace, HC__TRACE_HALO, what, t0, "bytes", text);
    hc__trace_leave(trace);
  }
}

/* Begins filling the ghost rows of f from the neighbours: rows [lo, lo +
 * below) and [hi - above, hi) are this part's to give (read now, once the
 * device's queued work is done), rows [lo - below, lo) and [hi, hi +
 * above) take the neighbours' at the end (counted in rows of f). A
 * failure aborts the transport, so that no neighbour waits for this part. */
static hc_status_t begin_rows(hc_part_t *p, hc_field_t *f, int64_t lo, int64_t hi, uint32_t below, uint32_t above) {
  if (p->x.active)
    return hc_error(HC_ERR_INVALID_ARG, "halo exchange: part %u has begun one on field '%s' and not ended it", p->index,
                    hc_field_name(p->x.f));
  hc__part_span(p);
  const size_t rb = row_bytes(f);
  /* The device's queued work is compute, not halo: let it finish first. */
  hc_device_t *dev = hc_field_device(f);
  hc_status_t st = hc_device_finish(dev);
  if (st != HC_OK) {
    p->tr->ops->abort(p->tr, p->index);
    return st;
  }
  const double t0 = hc_now(), idle0 = p->stats.idle_s;
  size_t lo_bytes = below * rb, hi_bytes = above * rb;
  halo_sides_t h = {.lo_bytes = lo_bytes,
                    .hi_bytes = hi_bytes,
                    .peer_lo = p->peer_below,
                    .peer_hi = p->peer_above,
                    .buf = hc_field_buffer(f),
                    .own_lo_off = (size_t)lo * rb,
                    .own_hi_off = (size_t)(hi - above) * rb,
                    .halo_lo_off = (size_t)(lo - below) * rb,
                    .halo_hi_off = (size_t)hi * rb};
  /* Peer sides move device to device; the others are staged, unless the
   * transport takes them in place (then no side is a peer's). */
  char *direct = h.peer_lo || h.peer_hi ? NULL : direct_base(p, h.buf);
  size_t staged_lo = h.peer_lo || direct ? 0 : lo_bytes, staged_hi = h.peer_hi || direct ? 0 : hi_bytes;
  st = stage_for(p, dev, staged_lo > staged_hi ? staged_lo : staged_hi);
  if (st == HC_OK && direct) {
    h.to_lo = direct + h.own_lo_off, h.to_hi = direct + h.own_hi_off;
    h.from_lo = direct + h.halo_lo_off, h.from_hi = direct + h.halo_hi_off;
  } else if (st == HC_OK) {
    char *send_lo = p->stage, *send_hi = send_lo + p->stage_area, *recv_lo = send_hi + p->stage_area,
         *recv_hi = recv_lo + p->stage_area;
    h.to_lo = send_lo, h.to_hi = send_hi, h.from_lo = recv_lo, h.from_hi = recv_hi;
    /* What staged neighbours need: my first and last own rows. */
    if (staged_lo) st = hc_buffer_read(h.buf, h.own_lo_off, send_lo, staged_lo);
    if (st == HC_OK && staged_hi) st = hc_buffer_read(h.buf, h.own_hi_off, send_hi, staged_hi);
  }
  int deferred = 0;
  if (st == HC_OK) {
    if (h.peer_lo || h.peer_hi)
      st = hc__inproc_exchange_begin(p->tr, p->index, &h);
    else if (transport_splits(p->tr))
      st = p->tr->ops->exchange_begin(p->tr, p->index, h.to_lo, lo_bytes, h.to_hi, hi_bytes, h.from_lo, h.from_hi);
    else
      deferred = 1;
  }
  if (st != HC_OK) {
    /* Fail the exchange for everyone rather than leave them waiting. */
    p->tr->ops->abort(p->tr, p->index);
  } else {
    p->x.active = 1;
    p->x.deferred = deferred;
    p->x.f = f;
    p->x.h = h;
    p->x.staged_lo = staged_lo;
    p->x.staged_hi = staged_hi;
    p->x.direct = direct != NULL;
  }
  half_done(p, t0, idle0, "halo exchange begin", staged_lo + staged_hi);
  return st;
}

/* Ends the exchange begin_rows began on f: the neighbours' rows into the
 * ghost rows. `queued`: work may have been queued on the device since the
 * begin (0 when the two halves run back to back: the begin left the
 * queue empty). */
static hc_status_t end_rows(hc_part_t *p, hc_field_t *f, const char *caller, int queued) {
  if (!p->x.active || p->x.f != f)
    return hc_error(HC_ERR_INVALID_ARG, "%s: no halo exchange of field '%s' was begun on part %u", caller,
                    hc_field_name(f), p->index);
  double t0 = hc_now();
  const double idle0 = p->stats.idle_s;
  const halo_sides_t *h = &p->x.h;
  /* The work queued since the begin (the interior) is compute, not halo:
   * its wait is taken out of the exchange's time. A peer copy would wait
   * for it on the device's queue, so it is waited for first there; the
   * transport's messages arrive (MPI progresses) before it elsewhere. */
  hc_device_t *dev = hc_field_device(f);
  double busy0 = 0, busy1 = 0;
  hc_status_t st = HC_OK;
  if (h->peer_lo || h->peer_hi) {
    busy0 = hc_now();
    if (queued) st = hc_device_finish(dev);
    busy1 = hc_now();
    hc_status_t e = hc__inproc_exchange_end(p->tr, p->index, &p->stats.idle_s);
    if (st == HC_OK) st = e;
  } else {
    st = p->x.deferred ? p->tr->ops->exchange(p->tr, p->index, h->to_lo, h->lo_bytes, h->to_hi, h->hi_bytes, h->from_lo,
                                              h->from_hi, &p->stats.idle_s)
                       : p->tr->ops->exchange_end(p->tr, p->index, &p->stats.idle_s);
    busy0 = hc_now();
    if (st == HC_OK && queued) st = hc_device_finish(dev);
    busy1 = hc_now();
  }
  t0 += busy1 - busy0;
  if (st == HC_OK && p->x.staged_lo) st = hc_buffer_write(h->buf, h->halo_lo_off, h->from_lo, p->x.staged_lo);
  if (st == HC_OK && p->x.staged_hi) st = hc_buffer_write(h->buf, h->halo_hi_off, h->from_hi, p->x.staged_hi);
  const size_t bytes = h->lo_bytes + h->hi_bytes;
  if (st == HC_OK) {
    p->stats.halo_bytes += bytes;
    if (p->x.direct)
      p->stats.halo_direct_bytes += bytes;
    else
      p->stats.halo_peer_bytes += bytes - p->x.staged_lo - p->x.staged_hi;
  }
  p->x.active = 0;
  half_done(p, t0, idle0, "halo exchange", bytes);
  return st;
}

/* Checks that f is laid out as the part's [below | own rows | above]. */
static hc_status_t check_slab(const hc_part_t *p, const hc_field_t *f, const char *caller) {
  if (!p || !f) return hc_error(HC_ERR_INVALID_ARG, "%s: NULL argument", caller);
  uint32_t rank = hc_field_rank(f);
  const int64_t *shape = hc_field_shape(f);
  int64_t own = p->hi - p->lo;
  if (rank < 1 || shape[0] != own + p->below + p->above)
    return hc_error(HC_ERR_INVALID_ARG, "%s: field '%s' has %lld rows along axis 0, the part %u needs %u + %lld + %u",
                    caller, hc_field_name(f), rank ? (long long)shape[0] : 0LL, p->index, p->below, (long long)own,
                    p->above);
  return HC_OK;
}

HC_API hc_status_t hc_part_halo_exchange_begin(hc_part_t *p, hc_field_t *f) {
  hc_status_t st = check_slab(p, f, "hc_part_halo_exchange_begin");
  if (st != HC_OK) return st;
  return begin_rows(p, f, p->below, p->hi - p->lo + p->below, p->below, p->above);
}

HC_API hc_status_t hc_part_halo_exchange_end(hc_part_t *p, hc_field_t *f) {
  hc_status_t st = check_slab(p, f, "hc_part_halo_exchange_end");
  return st != HC_OK ? st : end_rows(p, f, "hc_part_halo_exchange_end", 1);
}

HC_API hc_status_t hc_part_halo_exchange(hc_part_t *p, hc_field_t *f) {
  hc_status_t st = hc_part_halo_exchange_begin(p, f);
  return st != HC_OK ? st : end_rows(p, f, "hc_part_halo_exchange", 0);
}

HC_API hc_status_t hc_part_halo_exchange_rows(hc_part_t *p, hc_field_t *f, int64_t lo, int64_t hi, uint32_t width) {
  if (!p || !f) return hc_error(HC_ERR_INVALID_ARG, "hc_part_halo_exchange_rows: NULL argument");
  const uint32_t below = p->index > 0 ? width : 0, above = p->index + 1 < p->count ? width : 0;
  const int64_t rows = hc_field_rank(f) ? hc_field_shape(f)[0] : 0;
  if (!width || lo - below < 0 || hi + above > rows || hi - lo < (int64_t)width)
    return hc_error(HC_ERR_INVALID_ARG,
                    "hc_part_halo_exchange_rows: rows [%lld, %lld) of field '%s' (%lld rows) with %u halo rows: "
                    "the part needs at least %u rows and its halo inside the field",
                    (long long)lo, (long long)hi, hc_field_name(f), (long long)rows, width, width ? width : 1);
  hc_status_t st = begin_rows(p, f, lo, hi, below, above);
  return st != HC_OK ? st : end_rows(p, f, "hc_part_halo_exchange_rows", 0);
}

/* A collective's time in the part's stats and, when tracing, a span on
 * the calling thread's track. */
static hc_status_t collective_done(hc_part_t *p, const char *what, double t0, hc_status_t st) {
  p->stats.collective_s += hc_now() - t0;
  op_done(p, t0);
  p->stats.collectives++;
  hc__trace_t *trace = hc__trace_enter(p->ctx);
  if (trace) {
    hc__trace_host(trace, HC__TRACE_COLLECTIVE, what, t0, "transport", p->tr->ops->name);
    hc__trace_leave(trace);
  }
  return st;
}

HC_API void hc_reduce_combine(hc_reduce_op_t op, const double *values, uint32_t nparts, uint32_t n, double *out) {
  for (uint32_t i = 0; i < n; i++) {
    double acc = op == HC_REDUCE_L2 ? 0 : values[i];
    for (uint32_t r = op == HC_REDUCE_L2 ? 0 : 1; r < nparts; r++) {
      double v = values[(size_t)r * n + i];
      switch (op) {
      case HC_REDUCE_SUM: acc += v; break;
      case HC_REDUCE_MIN: acc = v < acc ? v : acc; break;
      case HC_REDUCE_MAX: acc = v > acc ? v : acc; break;
      case HC_REDUCE_L2: acc += v * v; break;
      }
    }
    out[i] = op == HC_REDUCE_L2 ? sqrt(acc) : acc;
  }
}

HC_API hc_status_t hc_part_allreduce(hc_part_t *p, hc_reduce_op_t op, double *values, uint32_t n) {
  if (!p || (!values && n)) return hc_error(HC_ERR_INVALID_ARG, "hc_part_allreduce: NULL argument");
  if ((unsigned)op > HC_REDUCE_L2) return hc_error(HC_ERR_INVALID_ARG, "hc_part_allreduce: unknown operation %d", op);
  hc__part_span(p);
  double t0 = hc_now();
  hc_status_t st = p->tr->ops->allreduce(p->tr, p->index, op, values, n, &p->stats.idle_s);
  return collective_done(p, "allreduce", t0, st);
}

HC_API hc_status_t hc_part_allgather(hc_part_t *p, const void *mine, size_t bytes, void *all, size_t capacity,
                                     size_t *total) {
  if (!p || (!mine && bytes) || (!all && capacity))
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_allgather: NULL argument");
  hc__part_span(p);
  double t0 = hc_now();
  hc_status_t st = p->tr->ops->allgather(p->tr, p->index, mine, bytes, all, capacity, total, &p->stats.idle_s);
  return collective_done(p, "allgather", t0, st);
}

HC_API hc_status_t hc_part_allgather_rows(hc_part_t *p, hc_buffer_t *buf, size_t row_bytes) {
  if (!p || !buf) return hc_error(HC_ERR_INVALID_ARG, "hc_part_allgather_rows: NULL argument");
  const size_t off = (size_t)p->lo * row_bytes, mine = (size_t)(p->hi - p->lo) * row_bytes,
               all = (size_t)p->rows * row_bytes;
  if (row_bytes && all / row_bytes != (size_t)p->rows)
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_allgather_rows: %lld rows of %zu bytes overflow", (long long)p->rows,
                    row_bytes);
  if (hc_buffer_size(buf) < all)
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_allgather_rows: the buffer has %zu bytes, %lld rows need %zu",
                    hc_buffer_size(buf), (long long)p->rows, all);
  hc__part_span(p);
  hc_status_t st = hc_device_finish(hc_buffer_device(buf)); /* my rows are complete */
  double t0 = hc_now();
  if (st != HC_OK) {
    p->tr->ops->abort(p->tr, p->index);
    return st;
  }
  if (p->peer_all) {
    st = hc__inproc_allgather_buffers(p->tr, p->index, buf, off, mine, &p->stats.idle_s);
    if (st != HC_OK) p->tr->ops->abort(p->tr, p->index);
    return collective_done(p, "allgather", t0, st);
  }
  char *host = malloc(mine + all);
  if (!host) st = hc_error(HC_ERR_NO_MEMORY, "hc_part_allgather_rows: cannot stage %zu bytes", mine + all);
  if (st == HC_OK) st = hc_buffer_read(buf, off, host, mine);
  if (st != HC_OK) {
    p->tr->ops->abort(p->tr, p->index);
    free(host);
    return collective_done(p, "allgather", t0, st);
  }
  size_t total = 0;
  st = p->tr->ops->allgather(p->tr, p->index, host, mine, host + mine, all, &total, &p->stats.idle_s);
  if (st == HC_OK && total != all)
    st = hc_error(HC_ERR_INTERNAL, "hc_part_allgather_rows: the parts' rows hold %zu bytes, not %zu", total, all);
  if (st == HC_OK) st = hc_buffer_write(buf, 0, host + mine, all);
  free(host);
  return collective_done(p, "allgather", t0, st);
}

HC_API hc_status_t hc_part_barrier(hc_part_t *p) {
  if (!p) return hc_error(HC_ERR_INVALID_ARG, "hc_part_barrier: NULL part");
  hc__part_span(p);
  double t0 = hc_now();
  hc_status_t st = p->tr->ops->barrier(p->tr, p->index, &p->stats.idle_s);
  return collective_done(p, "barrier", t0, st);
}

HC_API hc_status_t hc_part_own_rows(const hc_part_t *p, hc_field_t **f) {
  if (!f || !*f || hc_field_rank(*f) < 1) return hc_error(HC_ERR_INVALID_ARG, "hc_part_own_rows: no field");
  if (!p) return HC_OK;
  const int64_t *shape = hc_field_shape(*f);
  /* Where row lo is: a whole field holds every row, a slab field starts
   * `below` ghost rows before it (the two agree where a slab is whole). */
  size_t first;
  if (shape[0] == p->rows)
    first = (size_t)p->lo;
  else if (shape[0] == p->hi - p->lo + p->below + p->above)
    first = p->below;
  else
    return hc_error(HC_ERR_INVALID_ARG,
                    "hc_part_own_rows: field '%s' has %lld rows, neither the split's %lld nor the part's %lld with "
                    "its ghost rows",
                    hc_field_name(*f), (long long)shape[0], (long long)p->rows,
                    (long long)(p->hi - p->lo + p->below + p->above));
  hc_field_t *own = NULL;
  hc_status_t st = hc__field_rows_copy(*f, p->hi - p->lo, 0, (int64_t)first, p->hi - p->lo, &own);
  if (st != HC_OK) return st;
  hc_field_destroy(*f);
  *f = own;
  return HC_OK;
}

hc_status_t hc__field_rows_copy(const hc_field_t *f, int64_t rows, int64_t at, int64_t from, int64_t n,
                                hc_field_t **out) {
  const uint32_t rank = hc_field_rank(f);
  const int64_t *shape = hc_field_shape(f);
  int64_t new_shape[HC_MAX_DIMS];
  memcpy(new_shape, shape, rank * sizeof *shape);
  new_shape[0] = rows;
  const size_t row = hc_field_bytes(f) / (size_t)shape[0];
  hc_field_t *g = NULL;
  hc_status_t st = hc_field_create(hc_field_device(f), hc_field_dtype(f), rank, new_shape, &g);
  if (st == HC_OK && n > 0)
    st = hc_buffer_copy(hc_field_buffer(g), (size_t)at * row, hc_field_buffer(f), (size_t)from * row, (size_t)n * row);
  if (st != HC_OK) {
    hc_field_destroy(g);
    return st;
  }
  hc_field_set_spacing(g, hc_field_spacing(f));
  hc_field_set_origin(g, hc_field_origin(f));
  hc_field_set_name(g, hc_field_name(f));
  *out = g;
  return HC_OK;
}

HC_API int hc_job_split_overlap(const hc_job_t *job) {
  const hc_part_t *p = hc_job_part(job);
  if (!p) return 0;
  long long mode = 0;                                              /* auto, on, off */
  if (hc_config_int("HC_SPLIT_OVERLAP", &mode) != HC_OK) mode = 0; /* checked when the context was made */
  if (mode) return mode == 1;
  /* A peer copy is queued behind the interior's kernels on the device,
   * so it gains nothing there: auto overlaps halos that go through host
   * memory (a side with a neighbour and no peer copy). */
  const int staged = (p->below && !p->peer_below) || (p->above && !p->peer_above);
  const hc_device_info_t *in = hc_device_info(hc_job_device(job));
  return staged && in && (in->type == HC_DEVICE_GPU || in->type == HC_DEVICE_ACCELERATOR);
}
