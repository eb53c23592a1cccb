/* hc-bench-cuda-overhead: what hc's cuda backend costs over the raw driver
 * API, on one GPU, in one run.
 *
 *   launch overhead  an empty kernel (same code, same arguments, one group
 *                    of 256) through hc_kernel_launch vs cuLaunchKernel:
 *                    submit (the calls alone, queue kept short), throughput
 *                    (back to back, then one sync) and round trip (launch +
 *                    finish). Target: hc within 1 us of raw.
 *   copy bandwidth   1 MiB .. 1 GiB, pageable host memory: hc_buffer_write /
 *                    read / copy(+finish) vs cuMemcpyHtoD / DtoH /
 *                    DtoDAsync(+sync), each waited for until complete.
 *                    Target: hc >= 95% of raw. For
 *                    reference: hc-direct (HC_CUDA_STAGING=0: the driver
 *                    stages, as for raw), hc-staged (pinned staging forced
 *                    at every size) and raw from pinned memory. hc, raw and
 *                    hc-direct are sampled in turn, the first of each round
 *                    rotating, so that drift and cache state (which variant
 *                    last touched the host buffer) hit them alike; the
 *                    references are sampled in a second pass. Small sizes
 *                    get more samples.
 *
 *   event record     (--event-record, alone) what the driver's own timer
 *                    costs the host: 64-byte cuMemsetD32Async on the raw
 *                    stream, each followed by a cuEventRecord of its own
 *                    event or not, best of five batches each, then
 *                    reading each event's time (cuEventElapsedTime, with
 *                    and without a cuEventSynchronize before); one JSON
 *                    line (the floor under a traced CUDA command's cost,
 *                    hc-bench-trace-overhead).
 *
 * Usage: hc-bench-cuda-overhead [--device=cuda:N] [--launches=N]
 *        [--max-size=BYTES] [--reps=N] [--json | --json=FILE | --event-record]
 * --json prints JSON instead of the table; --json=FILE writes it to FILE
 * besides the table. Exit status 77: no CUDA device.
 * The raw side uses the plugin's own loader (dlopen'd libcuda) and the
 * same primary context as hc, with its own non-blocking stream. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/hc.h>

#include "cu_driver.h"
#include "hc_nvrtc.h"

#define MIB ((size_t)1 << 20)

static const char hc_src[] = "HC_KERNEL void empty(HC_GLOBAL float *p, int n) { if (n < 0) p[0] = 0.0f; }\n";
static const char raw_src[] = "extern \"C\" __global__ void empty(float *p, int n) { if (n < 0) p[0] = 0.0f; }\n";

typedef struct {
  hc_cu_api_t cu;
  CUcontext ctx;
  CUstream stream;
  CUfunction fn;
  CUdeviceptr dptr;
} raw_t;

static int die(const char *what) {
  fprintf(stderr, "hc-bench-cuda-overhead: %s: %s\n", what, hc_last_error());
  exit(1);
}
#define HC_CHECK(x)            \
  do {                         \
    if ((x) != HC_OK) die(#x); \
  } while (0)
#define CU_CHECK(cu, x)                                            \
  do {                                                             \
    CUresult r_ = (x);                                             \
    if (r_ != CUDA_SUCCESS) {                                      \
      char d_[256];                                                \
      hc_cu_describe(&(cu), r_, d_, sizeof d_);                    \
      fprintf(stderr, "hc-bench-cuda-overhead: %s: %s\n", #x, d_); \
      exit(1);                                                     \
    }                                                              \
  } while (0)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void raw_setup(raw_t *r, int ordinal, int cc) {
  char why[512];
  if (hc_cu_load(&r->cu, why, sizeof why) != 0) {
    fprintf(stderr, "hc-bench-cuda-overhead: %s\n", why);
    exit(1);
  }
  CU_CHECK(r->cu, r->cu.cuInit(0));
  CUdevice dev;
  CU_CHECK(r->cu, r->cu.cuDeviceGet(&dev, ordinal));
  CU_CHECK(r->cu, r->cu.cuDevicePrimaryCtxRetain(&r->ctx, dev));
  CU_CHECK(r->cu, r->cu.cuCtxSetCurrent(r->ctx));
  CU_CHECK(r->cu, r->cu.cuStreamCreate(&r->stream, CU_STREAM_NON_BLOCKING));
  hc_nvrtc_t nv;
  if (hc_nvrtc_load(&nv, 0, why, sizeof why) != 0) {
    fprintf(stderr, "hc-bench-cuda-overhead: %s\n", why);
    exit(1);
  }
  void *img;
  size_t size;
  int is_ptx;
  HC_CHECK(hc_nvrtc_compile(&nv, cc, raw_src, NULL, &img, &size, &is_ptx, NULL));
  CUmodule mod;
  CU_CHECK(r->cu, r->cu.cuModuleLoadData(&mod, img));
  free(img);
  CU_CHECK(r->cu, r->cu.cuModuleGetFunction(&r->fn, mod, "empty"));
  CU_CHECK(r->cu, r->cu.cuMemAlloc(&r->dptr, 4096));
}

/* ---------------------------------------------------------------- launches */

typedef struct {
  hc_kernel_t *k;
  hc_device_t *dev;
  hc_buffer_t *buf;
  raw_t *raw;
} launch_ctx_t;

static int n_arg = 256;

static void launch_hc(launch_ctx_t *c) {
  size_t global = 256, local = 256;
  hc_arg_t args[] = {HC_ARG_BUF(c->buf), HC_ARG_VAL(n_arg)};
  if (hc_kernel_launch(c->k, 1, &global, &local, 2, args) != HC_OK) die("hc_kernel_launch");
}
static void sync_hc(launch_ctx_t *c) { HC_CHECK(hc_device_finish(c->dev)); }
static void launch_raw(launch_ctx_t *c) {
  raw_t *r = c->raw;
  void *params[] = {&r->dptr, &n_arg};
  CU_CHECK(r->cu, r->cu.cuLaunchKernel(r->fn, 1, 1, 1, 256, 1, 1, 0, r->stream, params, NULL));
}
static void sync_raw(launch_ctx_t *c) { CU_CHECK(c->raw->cu, c->raw->cu.cuStreamSynchronize(c->raw->stream)); }

enum { SUBMIT, THROUGHPUT, ROUNDTRIP, NMODES };
static const char *const mode_names[] = {"submit", "throughput", "round trip"};

/* Microseconds per launch in one mode. */
static double launch_us(launch_ctx_t *c, int hc, int mode, int n) {
  void (*launch)(launch_ctx_t *) = hc ? launch_hc : launch_raw;
  void (*sync)(launch_ctx_t *) = hc ? sync_hc : sync_raw;
  double t = 0;
  if (mode == SUBMIT) {
    /* Batches short enough that the launch queue never fills (a full queue
     * would make the calls wait for the GPU). */
    int count = 0;
    for (; count < n; count += 128) {
      double t0 = hc_now();
      for (int i = 0; i < 128; i++) launch(c);
      t += hc_now() - t0;
      sync(c);
    }
    return t / count * 1e6;
  }
  if (mode == THROUGHPUT) {
    double t0 = hc_now();
    for (int i = 0; i < n; i++) launch(c);
    sync(c);
    return (hc_now() - t0) / n * 1e6;
  }
  int m = n / 20 > 100 ? n / 20 : 100;
  double t0 = hc_now();
  for (int i = 0; i < m; i++) {
    launch(c);
    sync(c);
  }
  return (hc_now() - t0) / m * 1e6;
}

/* ---------------------------------------------------------------- copies */

enum { H2D, D2H, D2D, NDIRS };
static const char *const dir_names[] = {"H2D", "D2H", "D2D"};
enum { V_HC, V_RAW, V_DIRECT, V_STAGED, V_PINNED, NVARIANTS };
#define NFIRST 3 /* hc, raw, hc-direct: the first pass */

typedef struct {
  hc_buffer_t *a, *b;   /* default hc device */
  hc_buffer_t *sa, *sd; /* staging forced / off (or NULL) */
  hc_device_t *dev;
  raw_t *raw;
  CUdeviceptr ra, rb;
  char *host, *pinned;
} copy_ctx_t;

/* Seconds for one copy of n bytes, or -1 when the variant does not apply. */
static double copy_once(copy_ctx_t *c, int dir, int v, size_t n) {
  raw_t *r = c->raw;
  double t0 = hc_now();
  switch (v) {
  case V_HC:
  case V_DIRECT:
  case V_STAGED: {
    hc_buffer_t *a = v == V_HC ? c->a : v == V_STAGED ? c->sa : c->sd;
    if (!a) return -1;
    if (dir == H2D)
      HC_CHECK(hc_buffer_write(a, 0, c->host, n));
    else if (dir == D2H)
      HC_CHECK(hc_buffer_read(a, 0, c->host, n));
    else if (v == V_HC) {
      HC_CHECK(hc_buffer_copy(c->b, 0, c->a, 0, n));
      HC_CHECK(hc_device_finish(c->dev));
    } else
      return -1;
    break;
  }
  case V_RAW:
  case V_PINNED: {
    char *h = v == V_RAW ? c->host : c->pinned;
    if (!h) return -1;
    if (dir == H2D) {
      /* From pageable memory cuMemcpyHtoD returns once the data is staged,
       * before its DMA completes; hc_buffer_write returns when the copy is
       * done. Wait for completion so both time the same thing (without it
       * a raw sample that follows an hc one skips its own DMA tail: ~25%
       * at 1 MiB). */
      CU_CHECK(r->cu, r->cu.cuMemcpyHtoD(c->ra, h, n));
      CU_CHECK(r->cu, r->cu.cuCtxSynchronize());
    } else if (dir == D2H)
      CU_CHECK(r->cu, r->cu.cuMemcpyDtoH(h, c->ra, n));
    else if (v == V_RAW) {
      CU_CHECK(r->cu, r->cu.cuMemcpyDtoDAsync(c->rb, c->ra, n, r->stream));
      CU_CHECK(r->cu, r->cu.cuStreamSynchronize(r->stream));
    } else
      return -1;
    break;
  }
  }
  return hc_now() - t0;
}

/* ---------------------------------------------------------- event record */

#define RECORDS 20000

/* ns per 64-byte fill on the raw stream, each followed by a record of its
 * own event when ev is given; best of five batches. */
static double fills_ns(raw_t *r, CUevent *ev) {
  double best = INFINITY;
  for (int b = 0; b < 5; b++) {
    CU_CHECK(r->cu, r->cu.cuStreamSynchronize(r->stream));
    const double t0 = hc_now();
    for (int i = 0; i < RECORDS; i++) {
      CU_CHECK(r->cu, r->cu.cuMemsetD32Async(r->dptr, 1, 16, r->stream));
      if (ev) CU_CHECK(r->cu, r->cu.cuEventRecord(ev[i], r->stream));
    }
    const double ns = (hc_now() - t0) / RECORDS * 1e9;
    if (ns < best) best = ns;
  }
  return best;
}

static int event_record(const char *id, raw_t *r) {
  CUevent *ev = malloc(RECORDS * sizeof *ev);
  if (!ev) die("malloc");
  for (int i = 0; i < RECORDS; i++) CU_CHECK(r->cu, r->cu.cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
  (void)fills_ns(r, ev); /* warm-up */
  const double off = fills_ns(r, NULL), on = fills_ns(r, ev);
  CU_CHECK(r->cu, r->cu.cuStreamSynchronize(r->stream));
  /* Reading the completed events' times against the first: with a wait
   * for each (as a reader that does not know they completed must), and
   * without. */
  double read[2];
  for (int wait = 1; wait >= 0; wait--) {
    float ms = 0;
    const double t0 = hc_now();
    for (int i = 1; i < RECORDS; i++) {
      if (wait) CU_CHECK(r->cu, r->cu.cuEventSynchronize(ev[i]));
      CU_CHECK(r->cu, r->cu.cuEventElapsedTime(&ms, ev[0], ev[i]));
    }
    read[wait] = (hc_now() - t0) / (RECORDS - 1) * 1e9;
  }
  for (int i = 0; i < RECORDS; i++) r->cu.cuEventDestroy(ev[i]);
  free(ev);
  printf("{\"device\": \"%s\", \"fills\": %d, \"fill_ns\": %.1f, \"fill_record_ns\": %.1f, \"record_ns\": %.1f, "
         "\"read_ns\": %.1f, \"read_waiting_ns\": %.1f}\n",
         id, RECORDS, off, on, on - off, read[0], read[1]);
  return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
  const char *spec = "cuda";
  int records = 0;
  int json = 0;
  const char *json_path = NULL;
  int launches = 100000, reps = 5;
  size_t max_size = 1024 * MIB;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--device=", 9))
      spec = argv[i] + 9;
    else if (!strncmp(argv[i], "--launches=", 11))
      launches = atoi(argv[i] + 11);
    else if (!strncmp(argv[i], "--max-size=", 11))
      max_size = strtoull(argv[i] + 11, NULL, 10);
    else if (!strncmp(argv[i], "--reps=", 7))
      reps = atoi(argv[i] + 7);
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strncmp(argv[i], "--json=", 7))
      json_path = argv[i] + 7;
    else if (!strcmp(argv[i], "--event-record"))
      records = 1;
    else {
      fprintf(stderr,
              "usage: %s [--device=cuda:N] [--launches=N] [--max-size=BYTES] [--reps=N] [--json | --json=FILE | "
              "--event-record]\n",
              argv[0]);
      return 2;
    }
  }
  if (launches < 128) launches = 128;
  if (reps < 1) reps = 1;
  if (max_size < MIB) max_size = MIB;

  hc_context_t *ctx, *sctx = NULL;
  HC_CHECK(hc_context_create(NULL, &ctx));
  uint32_t idx;
  if (hc_device_find(ctx, spec, &idx) != HC_OK) {
    fprintf(stderr, "hc-bench-cuda-overhead: %s\n", hc_last_error());
    return 77; /* skipped: no CUDA device */
  }
  const char *id = hc_device_id(ctx, idx);
  if (strncmp(id, "cuda:", 5)) {
    fprintf(stderr, "hc-bench-cuda-overhead: %s is not a cuda device\n", id);
    return 2;
  }
  hc_device_t *dev;
  HC_CHECK(hc_device_open(ctx, idx, &dev));
  const hc_device_info_t *info = hc_device_info(dev);
  int cc = (int)(info->cc_major * 10 + info->cc_minor);
  raw_t raw;
  raw_setup(&raw, atoi(id + 5), cc);
  if (records) {
    const int rc = event_record(id, &raw);
    hc_device_close(dev);
    hc_context_destroy(ctx);
    return rc;
  }

  /* Contexts whose cuda devices always stage, and never (references). */
  hc_device_t *sdev = NULL, *ddev = NULL;
  hc_context_t *dctx = NULL;
  setenv("HC_CUDA_STAGING", "1", 1);
  if (hc_context_create(NULL, &sctx) == HC_OK && hc_device_find(sctx, id, &idx) == HC_OK)
    HC_CHECK(hc_device_open(sctx, idx, &sdev));
  setenv("HC_CUDA_STAGING", "0", 1);
  if (hc_context_create(NULL, &dctx) == HC_OK && hc_device_find(dctx, id, &idx) == HC_OK)
    HC_CHECK(hc_device_open(dctx, idx, &ddev));
  unsetenv("HC_CUDA_STAGING");

  /* Launch overhead. */
  hc_kernel_desc_t desc = {sizeof desc, "empty", hc_src, NULL, NULL};
  launch_ctx_t lc = {NULL, dev, NULL, &raw};
  HC_CHECK(hc_kernel_create(dev, &desc, &lc.k));
  HC_CHECK(hc_buffer_create(dev, 4096, &lc.buf));
  double lus[NMODES][2];
  for (int m = 0; m < NMODES; m++) {
    launch_us(&lc, 1, m, 1000); /* warm-up */
    launch_us(&lc, 0, m, 1000);
    double best[2] = {INFINITY, INFINITY};
    for (int rep = 0; rep < 3; rep++)
      for (int hc = 1; hc >= 0; hc--) {
        double us = launch_us(&lc, hc, m, launches);
        if (us < best[!hc]) best[!hc] = us;
      }
    lus[m][0] = best[0];
    lus[m][1] = best[1];
  }

  /* Copy bandwidth. */
  copy_ctx_t cc_ = {0};
  cc_.dev = dev;
  cc_.raw = &raw;
  HC_CHECK(hc_buffer_create(dev, max_size, &cc_.a));
  HC_CHECK(hc_buffer_create(dev, max_size, &cc_.b));
  if (sdev) HC_CHECK(hc_buffer_create(sdev, max_size, &cc_.sa));
  if (ddev) HC_CHECK(hc_buffer_create(ddev, max_size, &cc_.sd));
  CU_CHECK(raw.cu, raw.cu.cuCtxSetCurrent(raw.ctx));
  CU_CHECK(raw.cu, raw.cu.cuMemAlloc(&cc_.ra, max_size));
  CU_CHECK(raw.cu, raw.cu.cuMemAlloc(&cc_.rb, max_size));
  cc_.host = malloc(max_size);
  if (!cc_.host) die("malloc");
  memset(cc_.host, 1, max_size); /* fault the pages in before timing */
  void *pinned = NULL;
  if (raw.cu.cuMemHostAlloc(&pinned, max_size, 0) == CUDA_SUCCESS) cc_.pinned = pinned;
  int nsizes = 0;
  size_t sizes[16];
  for (size_t s = MIB; s <= max_size && nsizes < 16; s *= 4) sizes[nsizes++] = s;
  double gbs[16][NDIRS][NVARIANTS];
  double *samples = malloc((size_t)NVARIANTS * 200 * sizeof *samples);
  for (int si = 0; si < nsizes; si++)
    for (int d = 0; d < NDIRS; d++) {
      size_t n = sizes[si];
      int rounds = reps * (n < 64 * MIB ? (int)(64 * MIB / n) : 1);
      if (rounds > 200) rounds = 200;
      int k[NVARIANTS] = {0};
      for (int v = 0; v < NVARIANTS; v++) copy_once(&cc_, d, v, n); /* warm-up */
      for (int pass = 0; pass < 2; pass++) {
        int v0 = pass ? NFIRST : 0, nv = pass ? NVARIANTS - NFIRST : NFIRST;
        for (int rep = 0; rep < rounds; rep++)
          for (int j = 0; j < nv; j++) {
            int v = v0 + (rep + j) % nv;
            double t = copy_once(&cc_, d, v, n);
            if (t >= 0) samples[v * 200 + k[v]++] = n / t / 1e9;
          }
      }
      for (int v = 0; v < NVARIANTS; v++) gbs[si][d][v] = k[v] ? median(samples + v * 200, k[v]) : -1;
    }
  free(samples);

  /* Report. */
  int launch_ok = 1, copy_ok = 1;
  for (int m = 0; m < NMODES; m++) launch_ok &= lus[m][0] - lus[m][1] <= 1.0;
  for (int si = 0; si < nsizes; si++)
    for (int d = 0; d < NDIRS; d++) copy_ok &= gbs[si][d][V_HC] >= 0.95 * gbs[si][d][V_RAW];
  FILE *out = json ? stdout : json_path ? fopen(json_path, "w") : NULL;
  if (json_path && !out) perror(json_path);
  if (out) {
    fprintf(out, "{\n  \"device\": \"%s\", \"name\": \"%s\", \"arch\": \"%s\", \"driver\": \"%s\",\n", id, info->name,
            info->arch, info->driver);
    fprintf(out, "  \"launch_us\": {");
    for (int m = 0; m < NMODES; m++)
      fprintf(out, "%s\"%s\": {\"hc\": %.3f, \"raw\": %.3f}", m ? ", " : "", mode_names[m], lus[m][0], lus[m][1]);
    fprintf(out, "},\n  \"launches\": %d,\n  \"copy_gbs\": [\n", launches);
    for (int si = 0; si < nsizes; si++)
      for (int d = 0; d < NDIRS; d++) {
        fprintf(out, "    {\"bytes\": %zu, \"dir\": \"%s\", \"hc\": %.3f, \"raw\": %.3f, \"ratio\": %.4f", sizes[si],
                dir_names[d], gbs[si][d][V_HC], gbs[si][d][V_RAW], gbs[si][d][V_HC] / gbs[si][d][V_RAW]);
        if (gbs[si][d][V_STAGED] >= 0) fprintf(out, ", \"hc_staged\": %.3f", gbs[si][d][V_STAGED]);
        if (gbs[si][d][V_DIRECT] >= 0) fprintf(out, ", \"hc_direct\": %.3f", gbs[si][d][V_DIRECT]);
        if (gbs[si][d][V_PINNED] >= 0) fprintf(out, ", \"raw_pinned\": %.3f", gbs[si][d][V_PINNED]);
        fprintf(out, "}%s\n", si == nsizes - 1 && d == NDIRS - 1 ? "" : ",");
      }
    fprintf(out, "  ],\n  \"targets\": {\"launch_within_1us\": %s, \"copy_ge_95pct\": %s}\n}\n",
            launch_ok ? "true" : "false", copy_ok ? "true" : "false");
    if (out != stdout) fclose(out);
  }
  if (!json) {
    printf("hc-bench-cuda-overhead on %s: %s (%s, driver %s)\n\n", id, info->name, info->arch, info->driver);
    printf("launch overhead, us per launch (%d launches of an empty kernel, best of 3)\n", launches);
    printf("  %-12s %9s %9s %9s\n", "", "hc", "raw", "hc-raw");
    for (int m = 0; m < NMODES; m++)
      printf("  %-12s %9.3f %9.3f %+9.3f\n", mode_names[m], lus[m][0], lus[m][1], lus[m][0] - lus[m][1]);
    printf("\ncopy bandwidth, GB/s (1e9 bytes copied per second, median of %d to 200 interleaved samples;\n"
           "pageable host memory; hc: default policy; hc-direct: staging off; hc-staged: staging forced)\n",
           reps);
    printf("  %-9s %-4s %9s %9s %7s %11s %11s %11s\n", "size", "dir", "hc", "raw", "hc/raw", "hc-direct", "hc-staged",
           "raw-pinned");
    for (int si = 0; si < nsizes; si++)
      for (int d = 0; d < NDIRS; d++) {
        printf("  %5zu MiB %-4s %9.2f %9.2f %6.1f%%", sizes[si] / MIB, dir_names[d], gbs[si][d][V_HC],
               gbs[si][d][V_RAW], 100 * gbs[si][d][V_HC] / gbs[si][d][V_RAW]);
        for (int v = V_DIRECT; v <= V_STAGED; v++) {
          if (gbs[si][d][v] >= 0)
            printf(" %11.2f", gbs[si][d][v]);
          else
            printf(" %11s", "-");
        }
        if (gbs[si][d][V_PINNED] >= 0) printf(" %11.2f", gbs[si][d][V_PINNED]);
        printf("\n");
      }
    printf("\ntarget launch overhead within 1 us of raw: %s\n", launch_ok ? "met" : "NOT met");
    printf("target copy bandwidth >= 95%% of raw: %s\n", copy_ok ? "met" : "NOT met");
  }

  hc_buffer_destroy(cc_.a);
  hc_buffer_destroy(cc_.b);
  hc_buffer_destroy(cc_.sa);
  hc_buffer_destroy(cc_.sd);
  hc_buffer_destroy(lc.buf);
  hc_kernel_destroy(lc.k);
  raw.cu.cuCtxSetCurrent(raw.ctx);
  raw.cu.cuMemFree(cc_.ra);
  raw.cu.cuMemFree(cc_.rb);
  raw.cu.cuMemFree(raw.dptr);
  if (cc_.pinned) raw.cu.cuMemFreeHost(cc_.pinned);
  free(cc_.host);
  hc_device_close(sdev);
  hc_device_close(ddev);
  hc_context_destroy(dctx);
  hc_device_close(dev);
  hc_context_destroy(sctx);
  hc_context_destroy(ctx);
  return 0;
}
