/* Page-locked host memory (host_alloc): a buffer the driver allocates in
 * host memory (CL_MEM_ALLOC_HOST_PTR), mapped once for as long as it
 * lives. Drivers that pin such buffers (NVIDIA's among them) move reads
 * and writes from it by DMA, at the link's speed, where ordinary memory
 * goes through the driver's own bounce buffers. */
#include <stdlib.h>

#include "ocl.h"

struct ocl_pinned {
  void *ptr;
  cl_mem mem;
  struct ocl_pinned *next;
};

hc_status_t ocl_host_alloc(void *dev, size_t bytes, void **ptr) {
  ocl_dev_t *d = dev;
  ocl_pinned_t *p = calloc(1, sizeof *p);
  if (!p) return hc_error(HC_ERR_NO_MEMORY, "opencl: out of host memory");
  cl_int err = CL_SUCCESS;
  const char *call = "clCreateBuffer";
  p->mem = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes ? bytes : 1, NULL, &err);
  if (p->mem && err == CL_SUCCESS) {
    call = "clEnqueueMapBuffer";
    /* The auxiliary queue: mapping waits, and must not drain the main queue. */
    p->ptr = clEnqueueMapBuffer(d->aux, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes ? bytes : 1, 0, NULL,
                                NULL, &err);
  }
  if (!p->ptr || err != CL_SUCCESS) {
    if (p->mem) clReleaseMemObject(p->mem);
    free(p);
    if (err == CL_SUCCESS) err = CL_MAP_FAILURE;
    return ocl_fail(err, HC_ERR_NO_MEMORY, call, "%zu bytes of host memory for %s", bytes, d->slot->info.name);
  }
  pthread_mutex_lock(&d->pinned_lock);
  p->next = d->pinned;
  d->pinned = p;
  pthread_mutex_unlock(&d->pinned_lock);
  *ptr = p->ptr;
  return HC_OK;
}

/* Unmaps and releases p (taken off the device's list). */
static void release(ocl_dev_t *d, ocl_pinned_t *p) {
  if (clEnqueueUnmapMemObject(d->aux, p->mem, p->ptr, 0, NULL, NULL) == CL_SUCCESS) clFinish(d->aux);
  clReleaseMemObject(p->mem);
  free(p);
}

void ocl_host_free(void *dev, void *ptr) {
  ocl_dev_t *d = dev;
  if (!ptr) return;
  pthread_mutex_lock(&d->pinned_lock);
  ocl_pinned_t **at = &d->pinned;
  while (*at && (*at)->ptr != ptr) at = &(*at)->next;
  ocl_pinned_t *p = *at;
  if (p) *at = p->next;
  pthread_mutex_unlock(&d->pinned_lock);
  if (p) release(d, p);
}

void ocl_host_teardown(ocl_dev_t *d) {
  while (d->pinned) {
    ocl_pinned_t *p = d->pinned;
    d->pinned = p->next;
    release(d, p);
  }
}
