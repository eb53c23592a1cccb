/* Host buffers that keep being handed over to a device with memory of its
 * own (a cpu buffer a GPU's output is copied into, run after run).
 *
 * A copy between pageable host memory and a GPU goes through the GPU
 * backend's page-locked bounce buffers: the host copies every byte once
 * more, so such a transfer takes three passes over host memory where a
 * page-locked buffer takes one, and the host's memory bandwidth, not the
 * link, bounds it. Page-locking a buffer costs more than one copy saves,
 * so it is done only for a buffer handed over HC_HOST_PIN_AFTER times,
 * one that is likely to be handed over again.
 *
 * A pipeline or a job run again creates its buffers again. So a destroyed
 * buffer that was handed over is kept (up to HC_HOST_CACHE bytes per
 * device) and given to the next buffer of its size on its device, with
 * its pages already in and its page-locking and count of hand-overs with
 * it. Where the GPU's backend cannot page-lock it (OpenCL), a kept
 * buffer still spares the driver's copy into it the faulting-in and
 * zeroing of new pages. */
#include <stdlib.h>

#include "internal.h"

/* Below this a transfer is short enough that neither costs much. */
#define HC_PIN_MIN_BYTES ((size_t)4 << 20)

void hc__host_pin_config(hc_device_t *d) {
  long long after = 2, keep = 512ll << 20;
  (void)hc_config_int("HC_HOST_PIN_AFTER", &after); /* the defaults where unset or refused */
  (void)hc_config_int("HC_HOST_CACHE", &keep);
  d->pin_after = (unsigned)after;
  d->keep_limit = (size_t)keep;
}

static int can_pin(const hc_device_t *d) { return d->backend->ops.host_register && d->backend->ops.host_unregister; }

void hc__handover(hc_buffer_t *host, hc_device_t *other) {
  const unsigned after = host->dev->pin_after;
  if (host->wrapped || host->pinned_by || host->size < HC_PIN_MIN_BYTES) return;
  if (host->handovers < UINT32_MAX) host->handovers++;
  if (!after || host->handovers < after || host->pin_refused || !can_pin(other)) return;
  void *p = hc_buffer_host_ptr(host);
  const double t0 = hc_now();
  if (!p || other->backend->ops.host_register(other->handle, p, host->size) != HC_OK) {
    host->pin_refused = 1;
    hc_log(other->ctx, HC_LOG_DEBUG, "%s: a buffer of %zu bytes on %s stays pageable: %s", other->id, host->size,
           host->dev->id, p ? hc_last_error() : "no host address");
    return;
  }
  hc__device_retain(other);
  host->pinned_by = other;
  hc_log(other->ctx, HC_LOG_DEBUG, "%s: page-locked a buffer of %zu bytes on %s at its hand-over %u (%.3f ms)",
         other->id, host->size, host->dev->id, host->handovers, (hc_now() - t0) * 1e3);
}

void hc__buffer_free(hc_buffer_t *b) {
  hc_device_t *d = b->dev;
  if (b->pinned_by) {
    b->pinned_by->backend->ops.host_unregister(b->pinned_by->handle, hc_buffer_host_ptr(b));
    hc_device_close(b->pinned_by);
  }
  d->backend->ops.mem_free(d->handle, b->mem);
  free(b);
}

hc_buffer_t *hc__kept_take(hc_device_t *d, size_t bytes) {
  pthread_mutex_lock(&d->lock);
  hc_buffer_t **at = &d->kept;
  while (*at && (*at)->size != bytes) at = &(*at)->kept_next;
  hc_buffer_t *b = *at;
  if (b) {
    *at = b->kept_next;
    b->kept_next = NULL;
    d->kept_bytes -= b->size;
  }
  pthread_mutex_unlock(&d->lock);
  return b;
}

int hc__kept_put(hc_buffer_t *b) {
  hc_device_t *d = b->dev;
  if (!b->handovers || b->size > d->keep_limit) return 0;
  /* The newest goes last; the oldest make room for it. */
  hc_buffer_t *evicted = NULL;
  pthread_mutex_lock(&d->lock);
  while (d->kept && d->kept_bytes + b->size > d->keep_limit) {
    hc_buffer_t *old = d->kept;
    d->kept = old->kept_next;
    d->kept_bytes -= old->size;
    old->kept_next = evicted;
    evicted = old;
  }
  hc_buffer_t **end = &d->kept;
  while (*end) end = &(*end)->kept_next;
  *end = b;
  d->kept_bytes += b->size;
  pthread_mutex_unlock(&d->lock);
  for (hc_buffer_t *next; evicted; evicted = next) {
    next = evicted->kept_next;
    hc__buffer_free(evicted);
  }
  return 1;
}

void hc__kept_flush(hc_device_t *d) {
  pthread_mutex_lock(&d->lock);
  hc_buffer_t *b = d->kept;
  d->kept = NULL;
  d->kept_bytes = 0;
  pthread_mutex_unlock(&d->lock);
  for (hc_buffer_t *next; b; b = next) {
    next = b->kept_next;
    hc__buffer_free(b);
  }
}
