/* Device memory: cl_mem buffers (the handle hc keeps is the cl_mem itself),
 * blocking host transfers, asynchronous device copies and fills. */
#include <stdlib.h>

#include "ocl.h"

/* OpenCL allocates lazily: clCreateBuffer succeeds and the first command
 * that uses the buffer fails (or, on some drivers, a later kernel does).
 * A one-byte fill on the auxiliary queue, waited for, makes the driver
 * allocate now, so exhaustion is reported here as HC_ERR_DEVICE_MEMORY.
 * The auxiliary queue keeps this wait from draining the main queue. */
static cl_int make_resident(ocl_dev_t *d, cl_mem m, const char **call) {
  static const unsigned char zero = 0;
  cl_event ev = NULL;
  *call = "clEnqueueFillBuffer";
  cl_int err = clEnqueueFillBuffer(d->aux, m, &zero, 1, 0, 1, 0, NULL, &ev);
  if (err != CL_SUCCESS) return err;
  *call = "clWaitForEvents";
  err = clWaitForEvents(1, &ev);
  if (err != CL_SUCCESS) {
    cl_int status = CL_SUCCESS;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) == CL_SUCCESS && status < 0)
      err = status; /* the command's own error, not "an event failed" */
  }
  clReleaseEvent(ev);
  return err;
}

hc_status_t ocl_mem_alloc(void *dev, size_t bytes, void **mem) {
  ocl_dev_t *d = dev;
  cl_int err = CL_SUCCESS;
  /* A CPU device's memory is the host's, and PoCL's CPU driver asserts
   * (aborting the process) when that allocation fails at the buffer's
   * first use: ask the host first, so that a full memory (or an address
   * space limit) is a clean HC_ERR_DEVICE_MEMORY. */
  if (d->slot->info.type == HC_DEVICE_CPU) {
    void *probe = malloc(bytes ? bytes : 1);
    if (!probe)
      return hc_error(HC_ERR_DEVICE_MEMORY,
                      "opencl: out of device memory: %zu bytes on %s (its memory is the host's, "
                      "which cannot supply them)",
                      bytes, d->slot->info.name);
    free(probe);
  }
  cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (!m || err != CL_SUCCESS)
    return ocl_fail(err, err == CL_OUT_OF_HOST_MEMORY ? HC_ERR_NO_MEMORY : HC_ERR_DEVICE_MEMORY, "clCreateBuffer",
                    "%zu bytes on %s", bytes, d->slot->info.name);
  const char *call = NULL;
  err = make_resident(d, m, &call);
  if (err != CL_SUCCESS) {
    clReleaseMemObject(m);
    /* Whatever the driver calls it (CL_OUT_OF_RESOURCES on NVIDIA), a
     * buffer that cannot be placed is a device memory failure. */
    return ocl_fail(err, err == CL_OUT_OF_HOST_MEMORY ? HC_ERR_NO_MEMORY : HC_ERR_DEVICE_MEMORY, call,
                    "placing a new buffer of %zu bytes on %s: out of device memory", bytes, d->slot->info.name);
  }
  *mem = m;
  return HC_OK;
}

void ocl_mem_free(void *dev, void *mem) {
  (void)dev;
  /* The release waits for no command: OpenCL frees the memory once the
   * commands still using it are done. */
  if (mem) clReleaseMemObject((cl_mem)mem);
}

hc_status_t ocl_mem_native(void *dev, void *mem, hc_native_mem_t *out) {
  (void)dev;
  out->kind = HC_NATIVE_OPENCL;
  out->ptr = mem;
  return HC_OK;
}

/* A cl_mem of this device's context, retained while hc uses it. */
hc_status_t ocl_mem_wrap(void *dev, const hc_native_mem_t *native, size_t bytes, void **mem) {
  ocl_dev_t *d = dev;
  cl_context owner = NULL;
  size_t have = 0;
  if (native->kind != HC_NATIVE_OPENCL)
    return hc_error(HC_ERR_UNSUPPORTED, "%s: only a cl_mem of its context can be used in place", d->slot->info.name);
  cl_mem m = (cl_mem)native->ptr;
  cl_int err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
  if (err == CL_SUCCESS) err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof have, &have, NULL);
  if (err != CL_SUCCESS) return ocl_fail(err, HC_ERR_INVALID_ARG, "clGetMemObjectInfo", "the given cl_mem");
  if (owner != d->ctx)
    return hc_error(HC_ERR_UNSUPPORTED, "%s: the cl_mem belongs to another OpenCL context", d->slot->info.name);
  if (have < bytes)
    return hc_error(HC_ERR_INVALID_ARG, "%s: the cl_mem holds %zu bytes, %zu needed", d->slot->info.name, have, bytes);
  clRetainMemObject(m);
  *mem = m;
  return HC_OK;
}

void ocl_mem_unwrap(void *dev, void *mem) { ocl_mem_free(dev, mem); }

hc_status_t ocl_mem_write(void *dev, void *mem, size_t off, const void *src, size_t n) {
  ocl_dev_t *d = dev;
  cl_event ev;
  cl_int err = clEnqueueWriteBuffer(d->queue, (cl_mem)mem, CL_TRUE, off, n, src, 0, NULL, ocl_event_slot(d, &ev));
  if (err != CL_SUCCESS) return ocl_fail(err, HC_ERR_DEVICE, "clEnqueueWriteBuffer", "%zu bytes at offset %zu", n, off);
  ocl_event_track(d, ev);
  return HC_OK;
}

hc_status_t ocl_mem_read(void *dev, void *mem, size_t off, void *dst, size_t n) {
  ocl_dev_t *d = dev;
  cl_event ev;
  cl_int err = clEnqueueReadBuffer(d->queue, (cl_mem)mem, CL_TRUE, off, n, dst, 0, NULL, ocl_event_slot(d, &ev));
  if (err != CL_SUCCESS) return ocl_fail(err, HC_ERR_DEVICE, "clEnqueueReadBuffer", "%zu bytes at offset %zu", n, off);
  ocl_event_track(d, ev);
  return HC_OK;
}

hc_status_t ocl_mem_copy(void *dev, void *dst, size_t doff, void *src, size_t soff, size_t n) {
  ocl_dev_t *d = dev;
  cl_event ev;
  cl_int err = clEnqueueCopyBuffer(d->queue, (cl_mem)src, (cl_mem)dst, soff, doff, n, 0, NULL, ocl_event_slot(d, &ev));
  if (err != CL_SUCCESS)
    return ocl_fail(err, HC_ERR_DEVICE, "clEnqueueCopyBuffer", "%zu bytes from offset %zu to offset %zu%s", n, soff,
                    doff, err == CL_MEM_COPY_OVERLAP ? ": the ranges overlap in one buffer" : "");
  ocl_event_track(d, ev);
  return HC_OK;
}

hc_status_t ocl_mem_fill(void *dev, void *mem, size_t off, const void *pat, size_t psize, size_t n) {
  ocl_dev_t *d = dev;
  cl_event ev;
  /* The pattern is copied at enqueue time: the caller's may go away. */
  cl_int err = clEnqueueFillBuffer(d->queue, (cl_mem)mem, pat, psize, off, n, 0, NULL, ocl_event_slot(d, &ev));
  if (err != CL_SUCCESS)
    return ocl_fail(err, HC_ERR_DEVICE, "clEnqueueFillBuffer", "%zu bytes at offset %zu, pattern of %zu bytes", n, off,
                    psize);
  ocl_event_track(d, ev);
  return HC_OK;
}
