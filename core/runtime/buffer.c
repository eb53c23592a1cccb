/* Buffers: device memory with bounds-checked transfers, counted per context. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

HC_API hc_status_t hc_buffer_create(hc_device_t *d, size_t bytes, hc_buffer_t **out) {
  if (!d || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_create: NULL argument");
  *out = NULL;
  if (bytes == 0) bytes = 1; /* a zero-size request still yields a valid handle */
  const hc_device_info_t *in = &d->info;
  if ((in->max_alloc_bytes && bytes > in->max_alloc_bytes) || (in->global_mem_bytes && bytes > in->global_mem_bytes))
    return hc_error(HC_ERR_DEVICE_MEMORY,
                    "buffer of %zu bytes exceeds %s's limit (largest allocation %llu bytes, memory "
                    "%llu bytes)",
                    bytes, d->id, (unsigned long long)in->max_alloc_bytes, (unsigned long long)in->global_mem_bytes);
  hc_buffer_t *b = hc__kept_take(d, bytes);
  if (!b) {
    if (!(b = calloc(1, sizeof *b))) return hc_error(HC_ERR_NO_MEMORY, "hc_buffer_create: out of host memory");
    hc_status_t st = d->backend->ops.mem_alloc(d->handle, bytes, &b->mem);
    if (st != HC_OK) {
      free(b);
      return hc_error_prefix(st, "allocating %zu bytes on %s: ", bytes, d->id);
    }
    b->dev = d;
    b->size = bytes;
  }
  hc__device_retain(d);
  __atomic_add_fetch(&d->ctx->live_buffers, 1, __ATOMIC_RELAXED);
  *out = b;
  return HC_OK;
}

HC_API void hc_buffer_destroy(hc_buffer_t *b) {
  if (!b) return;
  hc_device_t *d = b->dev;
  if (HC__TRACING(d->ctx)) hc__trace_forget(d, b->mem);
  __atomic_sub_fetch(&d->ctx->live_buffers, 1, __ATOMIC_RELAXED);
  if (b->wrapped) {
    if (d->backend->ops.mem_unwrap) d->backend->ops.mem_unwrap(d->handle, b->mem);
    free(b);
  } else if (!hc__kept_put(b)) {
    hc__buffer_free(b);
  }
  hc_device_close(d);
}

HC_API hc_status_t hc_buffer_native(const hc_buffer_t *b, hc_native_mem_t *out) {
  if (!b || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_native: NULL argument");
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->ordinal = -1;
  if (!b->dev->backend->ops.mem_native)
    return hc_error(HC_ERR_UNSUPPORTED, "%s: the backend does not describe its memory", b->dev->id);
  hc_status_t st = b->dev->backend->ops.mem_native(b->dev->handle, b->mem, out);
  return st == HC_OK ? HC_OK : hc_error_prefix(st, "%s: ", b->dev->id);
}

HC_API hc_status_t hc_buffer_wrap(hc_device_t *d, const hc_native_mem_t *mem, size_t bytes, hc_buffer_t **out) {
  if (!d || !mem || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_wrap: NULL argument");
  *out = NULL;
  if (mem->size < sizeof *mem) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_wrap: hc_native_mem_t.size not set");
  if (!mem->ptr || !bytes) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_wrap: no memory given");
  if (!d->backend->ops.mem_wrap)
    return hc_error(HC_ERR_UNSUPPORTED, "%s cannot use memory allocated outside hc", d->id);
  hc_buffer_t *b = calloc(1, sizeof *b);
  if (!b) return hc_error(HC_ERR_NO_MEMORY, "hc_buffer_wrap: out of host memory");
  hc_status_t st = d->backend->ops.mem_wrap(d->handle, mem, bytes, &b->mem);
  if (st != HC_OK) {
    free(b);
    return hc_error_prefix(st, "%s: ", d->id);
  }
  b->dev = d;
  b->size = bytes;
  b->wrapped = 1;
  hc__device_retain(d);
  __atomic_add_fetch(&d->ctx->live_buffers, 1, __ATOMIC_RELAXED);
  *out = b;
  return HC_OK;
}

HC_API uint64_t hc_context_live_buffers(const hc_context_t *ctx) {
  return ctx ? __atomic_load_n(&ctx->live_buffers, __ATOMIC_RELAXED) : 0;
}

HC_API size_t hc_buffer_size(const hc_buffer_t *b) { return b ? b->size : 0; }
HC_API hc_device_t *hc_buffer_device(const hc_buffer_t *b) { return b ? b->dev : NULL; }

HC_API void *hc_buffer_host_ptr(const hc_buffer_t *b) {
  if (!b || !b->dev->backend->ops.mem_host_ptr) return NULL;
  return b->dev->backend->ops.mem_host_ptr(b->dev->handle, b->mem);
}

static hc_status_t check_range(const char *what, const hc_buffer_t *b, size_t off, size_t bytes) {
  if (!b) return hc_error(HC_ERR_INVALID_ARG, "%s: NULL buffer", what);
  if (off > b->size || bytes > b->size - off)
    return hc_error(HC_ERR_INVALID_ARG, "%s: range [%zu, %zu+%zu) outside buffer of %zu bytes", what, off, off, bytes,
                    b->size);
  return HC_OK;
}

/* A traced command writes b (NULL: nothing a launch reads). */
static void flow_into(hc__trace_cmd_t *c, const hc_buffer_t *b) {
  if (!b) return;
  c->flow_dev = b->dev;
  c->flow_mem = b->mem;
}

HC_API hc_status_t hc_buffer_write(hc_buffer_t *b, size_t off, const void *src, size_t bytes) {
  hc_status_t st = check_range("hc_buffer_write", b, off, bytes);
  if (st != HC_OK) return st;
  if (!bytes) return HC_OK;
  if (!src) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_write: NULL source");
  if ((st = hc__cmd_begin(b->dev)) != HC_OK) return st;
  hc__trace_cmd_t tc;
  const int traced = HC__TRACING(b->dev->ctx) && hc__trace_cmd_begin(b->dev->ctx, b->dev, &tc);
  double t0 = hc_now();
  st = b->dev->backend->ops.mem_write(b->dev->handle, b->mem, off, src, bytes);
  hc__cmd_end(b->dev);
  if (st == HC_OK) hc__count_transfer(b->dev->ctx, HC__TO_DEVICE, bytes, hc_now() - t0);
  if (traced) {
    flow_into(&tc, b);
    hc__trace_cmd_end(&tc, st, HC__TRACE_TO_DEVICE, "write", bytes, NULL);
  }
  return st;
}

HC_API hc_status_t hc_buffer_read(const hc_buffer_t *b, size_t off, void *dst, size_t bytes) {
  hc_status_t st = check_range("hc_buffer_read", b, off, bytes);
  if (st != HC_OK) return st;
  if (!bytes) return HC_OK;
  if (!dst) return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_read: NULL destination");
  if ((st = hc__cmd_begin(b->dev)) != HC_OK) return st;
  hc__trace_cmd_t tc;
  const int traced = HC__TRACING(b->dev->ctx) && hc__trace_cmd_begin(b->dev->ctx, b->dev, &tc);
  double t0 = hc_now();
  st = b->dev->backend->ops.mem_read(b->dev->handle, b->mem, off, dst, bytes);
  hc__cmd_end(b->dev);
  if (st == HC_OK) hc__count_transfer(b->dev->ctx, HC__TO_HOST, bytes, hc_now() - t0);
  if (traced) {
    hc__trace_cmd_end(&tc, st, HC__TRACE_TO_HOST, "read", bytes, NULL);
    hc__trace_device_sync(b->dev); /* a read waits for the queue anyway */
  }
  return st;
}

/* One backend command that writes buffer `into`, traced on dev's track. */
#define TRACED_(dev, into, kind, what, peer, call)                                               \
  do {                                                                                           \
    hc__trace_cmd_t tc_;                                                                         \
    const int traced_ = HC__TRACING((dev)->ctx) && hc__trace_cmd_begin((dev)->ctx, (dev), &tc_); \
    st = (call);                                                                                 \
    if (traced_) {                                                                               \
      flow_into(&tc_, (into));                                                                   \
      hc__trace_cmd_end(&tc_, st, (kind), (what), bytes, (peer));                                \
    }                                                                                            \
  } while (0)

int hc__devices_peer(const hc_device_t *a, const hc_device_t *b) {
  return a != b && a->backend == b->backend && a->backend->ops.peer_copy;
}

HC_API hc_status_t hc_buffer_copy(hc_buffer_t *dst, size_t doff, const hc_buffer_t *src, size_t soff, size_t bytes) {
  hc_status_t st = check_range("hc_buffer_copy (destination)", dst, doff, bytes);
  if (st == HC_OK) st = check_range("hc_buffer_copy (source)", src, soff, bytes);
  if (st != HC_OK || !bytes) return st;
  hc_device_t *dd = dst->dev, *sd = src->dev;
  if (dd == sd) {
    if ((st = hc__cmd_begin(dd)) != HC_OK) return st;
    TRACED_(dd, dst, HC__TRACE_COPY, "copy", NULL,
            dd->backend->ops.mem_copy(dd->handle, dst->mem, doff, src->mem, soff, bytes));
    hc__cmd_end(dd);
    return st;
  }
  /* Two devices: both command locks, in one global (address) order. */
  hc_device_t *first = (uintptr_t)dd < (uintptr_t)sd ? dd : sd, *second = first == dd ? sd : dd;
  if ((st = hc__cmd_begin(first)) != HC_OK) return st;
  if ((st = hc__cmd_begin(second)) != HC_OK) {
    hc__cmd_end(first);
    return st;
  }
  double t0 = hc_now();
  if (hc__devices_peer(dd, sd)) {
    TRACED_(dd, dst, HC__TRACE_PEER, "peer copy", sd->id,
            dd->backend->ops.peer_copy(dd->handle, dst->mem, doff, sd->handle, src->mem, soff, bytes));
  } else {
    /* Stage through the host; a host-addressable side is used directly.
     * Each side's command is an event on its own track. */
    void *sp = hc_buffer_host_ptr(src), *dp = hc_buffer_host_ptr(dst);
    /* (src's bookkeeping of its hand-overs changes, not its contents) */
    if (sp && !dp) hc__handover((hc_buffer_t *)src, dd);
    if (dp && !sp) hc__handover(dst, sd);
    if (sp)
      TRACED_(dd, dst, HC__TRACE_PEER, "receive", sd->id,
              dd->backend->ops.mem_write(dd->handle, dst->mem, doff, (char *)sp + soff, bytes));
    else if (dp)
      TRACED_(sd, dst, HC__TRACE_PEER, "send", dd->id,
              sd->backend->ops.mem_read(sd->handle, src->mem, soff, (char *)dp + doff, bytes));
    else {
      void *tmp = malloc(bytes);
      if (!tmp)
        st = hc_error(HC_ERR_NO_MEMORY, "hc_buffer_copy: cannot stage %zu bytes", bytes);
      else
        TRACED_(sd, NULL, HC__TRACE_PEER, "send", dd->id,
                sd->backend->ops.mem_read(sd->handle, src->mem, soff, tmp, bytes));
      if (tmp && st == HC_OK)
        TRACED_(dd, dst, HC__TRACE_PEER, "receive", sd->id,
                dd->backend->ops.mem_write(dd->handle, dst->mem, doff, tmp, bytes));
      free(tmp);
    }
  }
  hc__cmd_end(second);
  hc__cmd_end(first);
  if (st == HC_OK) hc__count_transfer(dd->ctx, HC__CROSS_DEVICE, bytes, hc_now() - t0);
  return st;
}

HC_API hc_status_t hc_buffer_fill(hc_buffer_t *b, size_t off, const void *pattern, size_t psize, size_t bytes) {
  hc_status_t st = check_range("hc_buffer_fill", b, off, bytes);
  if (st != HC_OK) return st;
  if (!pattern || !(psize == 1 || psize == 2 || psize == 4 || psize == 8 || psize == 16))
    return hc_error(HC_ERR_INVALID_ARG, "hc_buffer_fill: pattern size %zu (must be 1, 2, 4, 8 or 16)", psize);
  if (off % psize || bytes % psize)
    return hc_error(HC_ERR_INVALID_ARG,
                    "hc_buffer_fill: offset %zu and size %zu must be multiples of the pattern size %zu", off, bytes,
                    psize);
  if (!bytes) return HC_OK;
  if ((st = hc__cmd_begin(b->dev)) != HC_OK) return st;
  TRACED_(b->dev, b, HC__TRACE_FILL, "fill", NULL,
          b->dev->backend->ops.mem_fill(b->dev->handle, b->mem, off, pattern, psize, bytes));
  hc__cmd_end(b->dev);
  return st;
}
