/* Device memory: allocation, host transfers (synchronous from the caller's
 * view), device copies and fills (queued on the device's stream), and
 * copies between GPUs.
 *
 * Large transfers from pageable host memory can go through pinned bounce
 * buffers, double-buffered so that the host memcpy of one chunk overlaps
 * the DMA of the previous one, and the memcpy itself is split over a few
 * threads (copier.h): one thread's memcpy, not the DMA, is what bounds a
 * pageable transfer. Whether that beats the driver's own staging depends
 * on the machine, so it is a measured policy: HC_CUDA_STAGING=0 (never),
 * 1 (always), or a size such as 4M (from that size up);
 * HC_CUDA_STAGE_THREADS and HC_CUDA_STAGE_CHUNK tune it. Their defaults
 * are in the configuration table (core/runtime/config_vars.h, docs/env.md):
 * staging with one copy thread is slower than the driver's own, with a few
 * threads it wins for large transfers, and below a few MiB it loses (the
 * first chunk's memcpy overlaps nothing). Re-measure them on a machine with
 * bench/cuda_overhead (driver against staged, per size and thread count).
 * The bounce buffers are made by a thread of their own as the device opens
 * (stage_make_ahead). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* The unset HC_CUDA_STAGE_THREADS: half the cores, at most this. */
#define HC_CUDA_STAGE_THREADS_MAX_DEFAULT 8

static void stage_make_ahead(cuda_dev_t *d);

void cuda_memory_setup(cuda_dev_t *d) {
  /* hc_context_create checked the values; the presets only stand in for
   * one that has become invalid since (hc_config_* then leaves *out). */
  long long min = 16 << 20, chunk = 16 << 20, threads;
  hc_config_int("HC_CUDA_STAGING", &min);
  hc_config_int("HC_CUDA_STAGE_CHUNK", &chunk);
  d->stage_min = (size_t)min;
  d->stage_chunk = (size_t)chunk;
  /* Half the cores, at most 8: enough to approach the DMA engine's rate
   * without taking the machine from the caller's own threads (who wait
   * for the transfer anyway: it is synchronous). */
  const long long cores = hc_host_cores();
  threads = cores >= 2 ? cores / 2 : 1;
  if (threads > HC_CUDA_STAGE_THREADS_MAX_DEFAULT) threads = HC_CUDA_STAGE_THREADS_MAX_DEFAULT;
  hc_config_int("HC_CUDA_STAGE_THREADS", &threads);
  d->stage_threads = (unsigned)threads;
  stage_make_ahead(d);
}

/* Makes the bounce buffers, their events and the copy threads (without
 * its threads the copy is still correct, only slower). */
static CUresult stage_make(cuda_dev_t *d) {
  const hc_cu_api_t *cu = d->cu;
  void *p = NULL;
  CUresult r = cu->cuMemHostAlloc(&p, HC_CUDA_STAGE_SLOTS * d->stage_chunk, 0);
  d->stage = r == CUDA_SUCCESS ? p : NULL;
  for (int i = 0; i < HC_CUDA_STAGE_SLOTS && r == CUDA_SUCCESS; i++)
    r = cu->cuEventCreate(&d->stage_done[i], CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS && d->stage_threads > 1) d->copier = hc_cuda_copier_create(d->stage_threads);
  return r;
}

static void *stage_maker_main(void *arg) {
  cuda_dev_t *d = arg;
  CUresult r = d->cu->cuCtxSetCurrent(d->ctx);
  d->stage_made = r == CUDA_SUCCESS ? stage_make(d) : r;
  __atomic_store_n(&d->stage_maker_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Page-locking the bounce buffers takes longer than moving their size
 * several times over the link (docs/performance/history.md), which a
 * one-off transfer (a pipeline's hand-over) would pay in full: so opening
 * the device starts a thread making them (two HC_CUDA_STAGE_CHUNK of
 * page-locked memory), and until they are made transfers go direct rather
 * than wait. */
static void stage_make_ahead(cuda_dev_t *d) {
  if (!d->stage_min || d->stage_maker_state) return;
  d->stage_maker_state = pthread_create(&d->stage_maker, NULL, stage_maker_main, d) == 0 ? 1 : 2;
}

/* Waits for the maker thread: CUDA_SUCCESS, or what failed in it. */
static CUresult stage_join(cuda_dev_t *d) {
  if (d->stage_maker_state != 1) return CUDA_SUCCESS;
  pthread_join(d->stage_maker, NULL);
  d->stage_maker_state = 2;
  return d->stage_made;
}

void cuda_memory_teardown(cuda_dev_t *d) {
  (void)stage_join(d);
  hc_cuda_copier_destroy(d->copier);
  d->copier = NULL;
  for (int i = 0; i < HC_CUDA_STAGE_SLOTS; i++)
    if (d->stage_done[i]) d->cu->cuEventDestroy(d->stage_done[i]);
  if (d->stage) d->cu->cuMemFreeHost(d->stage);
  d->stage = NULL;
}

/* The bounce buffers and copy threads: 1 when they are there (made ahead,
 * or now when nothing was); 0 while the maker thread is still at work
 * (this transfer goes direct) or when they cannot be had (staging is then
 * switched off). */
static int stage_ready(cuda_dev_t *d) {
  if (d->stage_checked) return 1;
  if (d->stage_maker_state == 1 && !__atomic_load_n(&d->stage_maker_done, __ATOMIC_ACQUIRE)) return 0;
  CUresult r = stage_join(d);
  if (r == CUDA_SUCCESS && !d->stage) r = stage_make(d);
  if (r != CUDA_SUCCESS) {
    char desc[256];
    hc_cu_describe(d->cu, r, desc, sizeof desc);
    hc_log(d->s->ctx, HC_LOG_WARN, "cuda:%u: no pinned staging buffers (%s): transfers go direct", d->index, desc);
    cuda_memory_teardown(d);
    memset(d->stage_done, 0, sizeof d->stage_done);
    d->stage_min = 0;
    return 0;
  }
  if (d->stage_threads > 1 && !d->copier)
    hc_log(d->s->ctx, HC_LOG_WARN, "cuda:%u: cannot start %u staging threads: copying on one", d->index,
           d->stage_threads);
  d->stage_checked = 1;
  return 1;
}

/* Pinned (page-locked or registered) host memory needs no staging. */
static int is_pinned(cuda_dev_t *d, const void *p) {
  unsigned int type = 0;
  return d->cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) ==
             CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST;
}

static int use_staging(cuda_dev_t *d, size_t n, const void *host) {
  return d->stage_min && n >= d->stage_min && !is_pinned(d, host) && stage_ready(d);
}

hc_status_t cuda_mem_alloc(void *dev, size_t bytes, void **mem) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUdeviceptr p = 0;
  CUresult r = d->cu->cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    size_t free_b = 0, total = 0;
    d->cu->cuMemGetInfo(&free_b, &total);
    /* The core prefixes "allocating N bytes on cuda:i". */
    return hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuMemAlloc (%.3g GB; %zu of %zu bytes free)", bytes / 1e9, free_b,
                      total);
  }
  *mem = (void *)(uintptr_t)p;
  return HC_OK;
}

/* Page-locked, portable (every context may use it for DMA). */
hc_status_t cuda_host_alloc(void *dev, size_t bytes, void **ptr) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUresult r = d->cu->cuMemHostAlloc(ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
  return r == CUDA_SUCCESS ? HC_OK : hc_cu_fail(d->cu, HC_ERR_NO_MEMORY, r, "cuMemHostAlloc (%zu bytes)", bytes);
}

void cuda_host_free(void *dev, void *ptr) {
  cuda_dev_t *d = dev;
  if (cuda_use(d) == HC_OK) d->cu->cuMemFreeHost(ptr);
}

/* Portable, like host_alloc's: is_pinned then sends its transfers direct. */
hc_status_t cuda_host_register(void *dev, void *ptr, size_t bytes) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUresult r = d->cu->cuMemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE);
  return r == CUDA_SUCCESS ? HC_OK : hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuMemHostRegister (%zu bytes)", bytes);
}

void cuda_host_unregister(void *dev, void *ptr) {
  cuda_dev_t *d = dev;
  if (cuda_use(d) == HC_OK) d->cu->cuMemHostUnregister(ptr);
}

void cuda_mem_free(void *dev, void *mem) {
  cuda_dev_t *d = dev;
  if (cuda_use(d) != HC_OK) return;
  CUresult r = d->cu->cuMemFree(HC_CUDA_PTR(mem));
  if (r != CUDA_SUCCESS) {
    char desc[256];
    hc_cu_describe(d->cu, r, desc, sizeof desc);
    hc_log(d->s->ctx, HC_LOG_WARN, "cuda:%u: cuMemFree: %s", d->index, desc);
  }
}

hc_status_t cuda_mem_native(void *dev, void *mem, hc_native_mem_t *out) {
  cuda_dev_t *d = dev;
  out->kind = HC_NATIVE_CUDA;
  out->ptr = mem;
  out->ordinal = (int32_t)d->dev;
  return HC_OK;
}

/* Memory of the same device, allocated in its primary context (the one
 * the CUDA runtime, CuPy and PyTorch use), is used as is. */
hc_status_t cuda_mem_wrap(void *dev, const hc_native_mem_t *native, size_t bytes, void **mem) {
  cuda_dev_t *d = dev;
  (void)bytes;
  if (native->kind != HC_NATIVE_CUDA)
    return hc_error(HC_ERR_UNSUPPORTED, "cuda:%u: only CUDA device memory can be used in place", d->index);
  if (native->ordinal != (int32_t)d->dev)
    return hc_error(HC_ERR_UNSUPPORTED, "cuda:%u: the memory belongs to CUDA device %d", d->index,
                    (int)native->ordinal);
  *mem = native->ptr;
  return HC_OK;
}

/* Waits for the stream; the error names the operation that queued work. */
static hc_status_t stream_sync(cuda_dev_t *d, const char *what) {
  CUresult r = d->cu->cuStreamSynchronize(d->stream);
  return r == CUDA_SUCCESS ? HC_OK
                           : hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuda:%u: %s (cuStreamSynchronize)", d->index, what);
}

static hc_status_t staged_write(cuda_dev_t *d, CUdeviceptr dst, const char *src, size_t n) {
  const hc_cu_api_t *cu = d->cu;
  CUresult r = CUDA_SUCCESS;
  const char *what = "";
  size_t chunk = d->stage_chunk;
  for (size_t i = 0, off = 0; off < n && r == CUDA_SUCCESS; i++, off += chunk) {
    size_t len = n - off < chunk ? n - off : chunk;
    unsigned slot = (unsigned)(i % HC_CUDA_STAGE_SLOTS);
    char *buf = d->stage + slot * chunk;
    /* The slot's previous DMA must be done before it is overwritten. */
    if (i >= HC_CUDA_STAGE_SLOTS && (r = cu->cuEventSynchronize(d->stage_done[slot])) != CUDA_SUCCESS) {
      what = "cuEventSynchronize";
      break;
    }
    hc_cuda_copier_memcpy(d->copier, buf, src + off, len);
    what = "cuMemcpyHtoDAsync";
    r = cu->cuMemcpyHtoDAsync(dst + off, buf, len, d->stream);
    if (r == CUDA_SUCCESS) r = cu->cuEventRecord(d->stage_done[slot], d->stream);
  }
  hc_status_t st = stream_sync(d, "host-to-device copy");
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: staged write of %zu bytes: %s", d->index, n, what);
  return st;
}

static hc_status_t staged_read(cuda_dev_t *d, char *dst, CUdeviceptr src, size_t n) {
  const hc_cu_api_t *cu = d->cu;
  size_t chunk = d->stage_chunk, nchunks = (n + chunk - 1) / chunk;
  CUresult r = CUDA_SUCCESS;
  const char *what = "cuMemcpyDtoHAsync";
#define HC_ISSUE_(i)                                                            \
  do {                                                                          \
    size_t o_ = (i)*chunk, l_ = n - o_ < chunk ? n - o_ : chunk;                \
    unsigned s_ = (unsigned)((i) % HC_CUDA_STAGE_SLOTS);                        \
    r = cu->cuMemcpyDtoHAsync(d->stage + s_ * chunk, src + o_, l_, d->stream);  \
    if (r == CUDA_SUCCESS) r = cu->cuEventRecord(d->stage_done[s_], d->stream); \
  } while (0)
  for (size_t i = 0; i < nchunks && i < HC_CUDA_STAGE_SLOTS && r == CUDA_SUCCESS; i++) HC_ISSUE_(i);
  for (size_t i = 0; i < nchunks && r == CUDA_SUCCESS; i++) {
    size_t off = i * chunk, len = n - off < chunk ? n - off : chunk;
    unsigned slot = (unsigned)(i % HC_CUDA_STAGE_SLOTS);
    if ((r = cu->cuEventSynchronize(d->stage_done[slot])) != CUDA_SUCCESS) {
      what = "cuEventSynchronize";
      break;
    }
    hc_cuda_copier_memcpy(d->copier, dst + off, d->stage + slot * chunk, len);
    if (i + HC_CUDA_STAGE_SLOTS < nchunks) HC_ISSUE_(i + HC_CUDA_STAGE_SLOTS);
  }
#undef HC_ISSUE_
  hc_status_t st = stream_sync(d, "device-to-host copy");
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: staged read of %zu bytes: %s", d->index, n, what);
  return st;
}

hc_status_t cuda_mem_write(void *dev, void *mem, size_t off, const void *src, size_t n) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUdeviceptr dst = HC_CUDA_PTR(mem) + off;
  if (use_staging(d, n, src)) return staged_write(d, dst, src, n);
  /* Queued on the stream, so ordered after the kernels before it. */
  CUresult r = d->cu->cuMemcpyHtoDAsync(dst, src, n, d->stream);
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuda:%u: cuMemcpyHtoDAsync of %zu bytes", d->index, n);
  return stream_sync(d, "host-to-device copy");
}

hc_status_t cuda_mem_read(void *dev, void *mem, size_t off, void *dst, size_t n) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUdeviceptr src = HC_CUDA_PTR(mem) + off;
  if (use_staging(d, n, dst)) return staged_read(d, dst, src, n);
  CUresult r = d->cu->cuMemcpyDtoHAsync(dst, src, n, d->stream);
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuda:%u: cuMemcpyDtoHAsync of %zu bytes", d->index, n);
  return stream_sync(d, "device-to-host copy");
}

/* Same device: queued, not waited for (like a launch). Overlapping ranges
 * (one buffer, shifted) go through a temporary, or, when none can be had,
 * in pieces no larger than the shift, in the safe direction. */
hc_status_t cuda_mem_copy(void *dev, void *dstm, size_t doff, void *srcm, size_t soff, size_t n) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  const hc_cu_api_t *cu = d->cu;
  CUdeviceptr dst = HC_CUDA_PTR(dstm) + doff, src = HC_CUDA_PTR(srcm) + soff;
  if (dst == src) return HC_OK;
  CUresult r;
  if (dst < src + n && src < dst + n) {
    CUdeviceptr tmp = 0;
    if (cu->cuMemAlloc(&tmp, n) == CUDA_SUCCESS) {
      r = cu->cuMemcpyDtoDAsync(tmp, src, n, d->stream);
      if (r == CUDA_SUCCESS) r = cu->cuMemcpyDtoDAsync(dst, tmp, n, d->stream);
      cu->cuMemFree(tmp); /* waits for the copies */
    } else {
      size_t gap = dst < src ? src - dst : dst - src;
      r = CUDA_SUCCESS;
      for (size_t done = 0; done < n && r == CUDA_SUCCESS; done += gap) {
        size_t len = n - done < gap ? n - done : gap;
        size_t at = dst < src ? done : n - done - len; /* forward or backward */
        r = cu->cuMemcpyDtoDAsync(dst + at, src + at, len, d->stream);
      }
    }
  } else {
    r = cu->cuMemcpyDtoDAsync(dst, src, n, d->stream);
  }
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: cuMemcpyDtoDAsync of %zu bytes", d->index, n);
  return HC_OK;
}

/* Fills with the driver's memsets: a pattern that repeats a shorter one is
 * reduced first (0.0 in any width is a byte fill); 8- and 16-byte patterns
 * write each 32-bit word as a column of a 2-D memset whose pitch is the
 * pattern size. */
hc_status_t cuda_mem_fill(void *dev, void *mem, size_t off, const void *pattern, size_t psize, size_t n) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  const hc_cu_api_t *cu = d->cu;
  unsigned char pat[16];
  memcpy(pat, pattern, psize);
  while (psize > 1 && !memcmp(pat, pat + psize / 2, psize / 2)) psize /= 2;
  CUdeviceptr dst = HC_CUDA_PTR(mem) + off;
  CUresult r;
  if (psize == 1) {
    r = cu->cuMemsetD8Async(dst, pat[0], n, d->stream);
  } else if (psize == 2) {
    unsigned short v;
    memcpy(&v, pat, 2);
    r = cu->cuMemsetD16Async(dst, v, n / 2, d->stream);
  } else if (psize == 4) {
    unsigned int v;
    memcpy(&v, pat, 4);
    r = cu->cuMemsetD32Async(dst, v, n / 4, d->stream);
  } else {
    r = CUDA_SUCCESS;
    for (size_t w = 0; w < psize / 4 && r == CUDA_SUCCESS; w++) {
      unsigned int v;
      memcpy(&v, pat + 4 * w, 4);
      r = cu->cuMemsetD2D32Async(dst + 4 * w, psize, v, 1, n / psize, d->stream);
    }
  }
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: filling %zu bytes with a %zu-byte pattern", d->index, n, psize);
  return HC_OK;
}

/* Between two GPUs of this backend: direct (NVLink / PCIe peer) when the
 * pair allows peer access, else the driver stages it. Synchronous, like
 * the host-staged copy it replaces. */
hc_status_t cuda_peer_copy(void *ddev, void *dstm, size_t doff, void *sdev, void *srcm, size_t soff, size_t n) {
  cuda_dev_t *dd = ddev, *sd = sdev;
  const hc_cu_api_t *cu = dd->cu;
  hc_status_t st = cuda_use(sd);
  if (st != HC_OK) return st;
  CUresult r = cu->cuStreamSynchronize(sd->stream); /* the source is complete */
  if (r != CUDA_SUCCESS) return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: cuStreamSynchronize", sd->index);
  if ((st = cuda_use(dd)) != HC_OK) return st;
  if (sd->index < 64 && !(dd->peers & (1ull << sd->index))) {
    dd->peers |= 1ull << sd->index; /* tried once, whatever the outcome */
    int can = 0;
    if (cu->cuDeviceCanAccessPeer(&can, dd->dev, sd->dev) == CUDA_SUCCESS && can) {
      r = cu->cuCtxEnablePeerAccess(sd->ctx, 0);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        char desc[256];
        hc_cu_describe(cu, r, desc, sizeof desc);
        hc_log(dd->s->ctx, HC_LOG_DEBUG, "cuda:%u: no peer access to cuda:%u (%s)", dd->index, sd->index, desc);
      }
    }
  }
  r = cu->cuMemcpyPeerAsync(HC_CUDA_PTR(dstm) + doff, dd->ctx, HC_CUDA_PTR(srcm) + soff, sd->ctx, n, dd->stream);
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u <- cuda:%u: cuMemcpyPeerAsync of %zu bytes", dd->index, sd->index,
                      n);
  return stream_sync(dd, "peer copy");
}
