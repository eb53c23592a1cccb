/* hc-mpi-cuda-check [--device=ID] [--bytes=N]: does this MPI library take
 * CUDA device memory? It writes a pattern into one buffer of a device
 * whose memory is CUDA memory, sends it by MPI_Sendrecv straight from that
 * buffer into a second one, and compares what arrived: to itself when it
 * runs alone (MPI as a singleton), or each rank to the next under a
 * launcher (mpirun -n 2 hc-mpi-cuda-check: between processes).
 *
 * The compile-time and run-time queries of CUDA support are known to
 * answer wrongly both ways, so only a transfer says. An MPI that does not
 * take device memory usually crashes reading it, which is why libhc-mpi
 * runs this in a process of its own (plugins/mpi/cuda_check.c,
 * HC_MPI_CUDA_AWARE=1) with the launcher's environment removed; users can
 * run it by hand too. One line on stdout, and the exit status:
 *   0  "ok: ..."    the bytes arrived intact;
 *   1  "no: ..."    wrong bytes, or MPI refused the buffers;
 *   2  usage;
 *   3  "none: ..."  no device with CUDA memory (nothing to check);
 *   4  "error: ..." hc failed before the transfer (the message says why). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/hc.h>

enum { CHECK_OK = 0, CHECK_NO = 1, CHECK_USAGE = 2, CHECK_NONE = 3, CHECK_ERROR = 4 };

/* LeakSanitizer off in this process (sanitizer builds): it is thrown away
 * after one check, and what MPI and the CUDA driver keep until exit would
 * turn its exit status into a false verdict. */
__attribute__((visibility("default"))) int __lsan_is_turned_off(void);
__attribute__((visibility("default"))) int __lsan_is_turned_off(void) { return 1; }

/* A buffer of n bytes on dev and its CUDA address; HC_ERR_UNSUPPORTED
 * (buffer freed) when dev's memory is not CUDA memory. */
static hc_status_t cuda_buffer(hc_device_t *dev, size_t n, hc_buffer_t **buf, void **addr) {
  hc_status_t st = hc_buffer_create(dev, n, buf);
  if (st != HC_OK) return st;
  hc_native_mem_t m;
  if (hc_buffer_native(*buf, &m) == HC_OK && m.kind == HC_NATIVE_CUDA && m.ptr) {
    *addr = m.ptr;
    return HC_OK;
  }
  hc_buffer_destroy(*buf);
  *buf = NULL;
  return HC_ERR_UNSUPPORTED;
}

/* Opens the device named id, or else the first whose memory is CUDA
 * memory; its first buffer into *buf. *dev stays NULL unless it worked. */
static int open_device(hc_context_t *ctx, const char *id, size_t n, hc_device_t **dev, hc_buffer_t **buf, void **addr) {
  for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
    if (id && strcmp(hc_device_id(ctx, i), id)) continue;
    *dev = NULL;
    if (hc_device_open(ctx, i, dev) != HC_OK) {
      *dev = NULL;
      if (id) {
        printf("error: %s: %s\n", id, hc_last_error());
        return CHECK_ERROR;
      }
      continue;
    }
    hc_status_t st = cuda_buffer(*dev, n, buf, addr);
    if (st == HC_OK) return CHECK_OK;
    if (id) {
      if (st == HC_ERR_UNSUPPORTED)
        printf("none: %s: its memory is not CUDA memory\n", id);
      else
        printf("error: %s: %s\n", id, hc_last_error());
      hc_device_close(*dev);
      *dev = NULL;
      return st == HC_ERR_UNSUPPORTED ? CHECK_NONE : CHECK_ERROR;
    }
    hc_device_close(*dev);
    *dev = NULL;
  }
  if (id)
    printf("error: no device '%s'\n", id);
  else
    printf("none: no device whose memory is CUDA memory\n");
  return id ? CHECK_ERROR : CHECK_NONE;
}

/* The pattern: byte i of the message rank `from` sends. */
static unsigned char pattern(size_t i, int from) {
  return (unsigned char)(((i + 977u * (unsigned)from) * 2654435761u) >> 13);
}

/* Where this process's message goes and comes from: itself alone (the
 * check libhc-mpi runs), else the next rank and the one before it. */
typedef struct {
  MPI_Comm comm;
  int rank, size, to, from;
} ring_t;

/* Sends buffer a into a second buffer through MPI, in place, and
 * compares; prints what went wrong (the caller prints success). */
static int transfer(hc_device_t *dev, const char *name, hc_buffer_t *a, void *pa, size_t n, const ring_t *r) {
  hc_buffer_t *b = NULL;
  void *pb = NULL;
  unsigned char *host = malloc(n);
  const unsigned char zero = 0;
  int verdict = CHECK_ERROR;
  if (!host) {
    printf("error: out of host memory\n");
    return CHECK_ERROR;
  }
  for (size_t i = 0; i < n; i++) host[i] = pattern(i, r->rank);
  if (cuda_buffer(dev, n, &b, &pb) != HC_OK || hc_buffer_write(a, 0, host, n) != HC_OK ||
      hc_buffer_fill(b, 0, &zero, 1, n) != HC_OK || hc_device_finish(dev) != HC_OK) {
    printf("error: %s: %s\n", name, hc_last_error());
    goto out;
  }
  int rc = MPI_Sendrecv(pa, (int)n, MPI_BYTE, r->to, 7, pb, (int)n, MPI_BYTE, r->from, 7, r->comm, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
    printf("no: MPI_Sendrecv of %s's memory failed: %s\n", name, text);
    verdict = CHECK_NO;
    goto out;
  }
  memset(host, 0, n);
  if (hc_buffer_read(b, 0, host, n) != HC_OK) {
    printf("error: %s: %s\n", name, hc_last_error());
    goto out;
  }
  verdict = CHECK_OK;
  for (size_t i = 0; i < n && verdict == CHECK_OK; i++)
    if (host[i] != pattern(i, r->from)) {
      printf("no: %zu bytes sent to %s's memory arrived wrong from byte %zu on\n", n, name, i);
      verdict = CHECK_NO;
    }
out:
  if (b) hc_buffer_destroy(b);
  free(host);
  return verdict;
}

/* Every rank's verdict becomes the worst of them (the codes grow worse). */
static int agree(const ring_t *r, int verdict) {
  int worst = verdict;
  if (r->size > 1 && MPI_Allreduce(&verdict, &worst, 1, MPI_INT, MPI_MAX, r->comm) != MPI_SUCCESS) return CHECK_ERROR;
  return worst;
}

int main(int argc, char **argv) {
  const char *id = NULL;
  long long bytes = 1 << 20;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (!strncmp(argv[i], "--device=", 9)) {
      id = argv[i] + 9;
    } else if (!strncmp(argv[i], "--bytes=", 8) && (bytes = strtoll(argv[i] + 8, &end, 10), *end == '\0') &&
               bytes > 0 && bytes <= 1 << 30) {
      continue;
    } else {
      fprintf(stderr, "usage: hc-mpi-cuda-check [--device=ID] [--bytes=N (1 .. 2^30)]\nunknown or bad argument: %s\n",
              argv[i]);
      return CHECK_USAGE;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    printf("error: MPI_Init failed\n");
    return CHECK_ERROR;
  }
  ring_t r = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  if (r.size == 1) r.comm = MPI_COMM_SELF;
  r.to = (r.rank + 1) % r.size;
  r.from = (r.rank + r.size - 1) % r.size;
  MPI_Comm_set_errhandler(r.comm, MPI_ERRORS_RETURN);
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  hc_buffer_t *a = NULL;
  void *pa = NULL;
  int verdict = CHECK_ERROR;
  if (hc_context_create(NULL, &ctx) != HC_OK)
    printf("error: %s\n", hc_last_error());
  else
    verdict = open_device(ctx, id, (size_t)bytes, &dev, &a, &pa);
  /* Every rank sends only when every rank can. */
  if ((verdict = agree(&r, verdict)) == CHECK_OK)
    verdict = agree(&r, transfer(dev, hc_device_name(dev), a, pa, (size_t)bytes, &r));
  if (verdict == CHECK_OK && r.rank == 0) {
    if (r.size == 1)
      printf("ok: %lld bytes went from %s's memory to itself through MPI intact\n", bytes, hc_device_name(dev));
    else
      printf("ok: %lld bytes went from each of %d processes' CUDA memory to the next's through MPI intact\n", bytes,
             r.size);
  }
  if (a) hc_buffer_destroy(a);
  if (dev) hc_device_close(dev);
  hc_context_destroy(ctx);
  MPI_Finalize();
  return verdict;
}
