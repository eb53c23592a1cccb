/* hc-bench-opencl-overhead: what hc's opencl backend costs over raw OpenCL,
 * on one device, in one run.
 *
 *   launch overhead  an empty kernel (same code, same arguments, one group
 *                    of 256) through hc_kernel_launch vs clEnqueueNDRangeKernel
 *                    on a raw context and queue: throughput (N back to back,
 *                    then one finish), the same with an hc timer span open
 *                    (raw: profiling queue, an event on the first launch and
 *                    a marker's at the end, as hc does), and round
 *                    trip (launch + finish). Per launch, in us.
 *   copy bandwidth   1 MiB .. 256 MiB from pageable host memory:
 *                    hc_buffer_write / read / copy(+finish) vs blocking
 *                    clEnqueueWriteBuffer / ReadBuffer / CopyBuffer(+clFinish).
 *
 * Ratios are hc/raw: time for launches (1.00 = no overhead), GB/s for
 * copies (1.00 = same bandwidth), of the best runs (the median's ratio
 * beside it). Target: hc within 10% of raw.
 *
 * Usage: hc-bench-opencl-overhead [--device=opencl:N] [--launches=N]
 *        [--max-mib=N] [--reps=N] [--json | --json=FILE]
 * --json prints JSON instead of the table; --json=FILE writes it to FILE
 * besides the table. Exit status 77: no OpenCL device.
 * The raw side finds the same device as hc (platform order, then device
 * order, honouring HC_OPENCL_PLATFORM) and uses its own context and an
 * in-order queue without profiling (what a plain OpenCL program has). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/hc.h>

#include "../plugins/opencl/cl_errors.h" /* the backend's CL error names */

#define MIB ((size_t)1 << 20)
#define GROUP 256

static const char hc_src[] = "HC_KERNEL void empty(HC_GLOBAL float *p, int n) { if (n < 0) p[0] = 0.0f; }\n";
static const char raw_src[] = "__kernel void empty(__global float *p, int n) { if (n < 0) p[0] = 0.0f; }\n";

static const char *cl_name(cl_int err) {
  switch (err) {
#define CL_NAME_CASE_(name, value) \
  case value: return #name;
    OCL_ERROR_LIST(CL_NAME_CASE_)
#undef CL_NAME_CASE_
  }
  return "CL_UNKNOWN_ERROR";
}

static void die_hc(const char *what) {
  fprintf(stderr, "hc-bench-opencl-overhead: %s: %s\n", what, hc_last_error());
  exit(1);
}
#define HC_CHECK(x)               \
  do {                            \
    if ((x) != HC_OK) die_hc(#x); \
  } while (0)
#define CL_CHECK(x)                                                                         \
  do {                                                                                      \
    cl_int e_ = (x);                                                                        \
    if (e_ != CL_SUCCESS) {                                                                 \
      fprintf(stderr, "hc-bench-opencl-overhead: %s: %s (%d)\n", #x, cl_name(e_), (int)e_); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* Best and median of n samples. On a shared machine other processes only
 * ever add time, so the best is the cost itself; the median says how
 * steady it was. */
typedef struct {
  double best, median;
} stat_t;
static stat_t summarize(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  stat_t s = {v[0], n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])};
  return s;
}

/* ------------------------------------------------------------ raw side */

typedef struct {
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_command_queue qp; /* with profiling: what raw device timing needs */
  cl_program prog;
  cl_kernel k;
  cl_mem arg;
} raw_t;

/* The local_index-th device in the backend's order (see enumerate.c). */
static cl_device_id raw_find(uint32_t local_index) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || !np) return NULL;
  cl_platform_id plats[64];
  if (np > 64) np = 64;
  CL_CHECK(clGetPlatformIDs(np, plats, NULL));
  const char *filter = getenv("HC_OPENCL_PLATFORM");
  uint32_t seen = 0;
  for (cl_uint p = 0; p < np; p++) {
    char name[256] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    if (filter && *filter && !strcasestr(name, filter)) continue;
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd) continue;
    if (local_index < seen + nd) {
      cl_device_id ids[256];
      if (nd > 256) nd = 256;
      CL_CHECK(clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL));
      return ids[local_index - seen];
    }
    seen += nd;
  }
  return NULL;
}

static void raw_setup(raw_t *r, uint32_t local_index) {
  cl_int err;
  r->dev = raw_find(local_index);
  if (!r->dev) {
    fprintf(stderr, "hc-bench-opencl-overhead: raw OpenCL does not see device %u\n", local_index);
    exit(1);
  }
  r->ctx = clCreateContext(NULL, 1, &r->dev, NULL, NULL, &err);
  CL_CHECK(err);
  r->q = clCreateCommandQueue(r->ctx, r->dev, 0, &err);
  CL_CHECK(err);
  r->qp = clCreateCommandQueue(r->ctx, r->dev, CL_QUEUE_PROFILING_ENABLE, &err);
  CL_CHECK(err);
  const char *src = raw_src;
  r->prog = clCreateProgramWithSource(r->ctx, 1, &src, NULL, &err);
  CL_CHECK(err);
  CL_CHECK(clBuildProgram(r->prog, 1, &r->dev, "", NULL, NULL));
  r->k = clCreateKernel(r->prog, "empty", &err);
  CL_CHECK(err);
  r->arg = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, 4 * GROUP, NULL, &err);
  CL_CHECK(err);
  int n = 1;
  /* A raw program sets the arguments once. */
  CL_CHECK(clSetKernelArg(r->k, 0, sizeof(cl_mem), &r->arg));
  CL_CHECK(clSetKernelArg(r->k, 1, sizeof n, &n));
}

static void raw_teardown(raw_t *r) {
  clReleaseMemObject(r->arg);
  clReleaseKernel(r->k);
  clReleaseProgram(r->prog);
  clReleaseCommandQueue(r->q);
  clReleaseCommandQueue(r->qp);
  clReleaseContext(r->ctx);
}

/* ------------------------------------------------------------ launches */

typedef struct {
  hc_device_t *dev;
  hc_kernel_t *k;
  hc_buffer_t *arg;
  raw_t *raw;
} bench_t;

/* Per-launch microseconds of `n` launches; finish after each when
 * `sync_each`, else once at the end. */
static double hc_launches(bench_t *b, int n, int sync_each, int timed) {
  size_t g = GROUP, l = GROUP;
  int32_t one = 1;
  hc_arg_t args[] = {HC_ARG_BUF(b->arg), HC_ARG_VAL(one)};
  double dev_s = 0, t0 = hc_now();
  if (timed) HC_CHECK(hc_device_timer_begin(b->dev));
  for (int i = 0; i < n; i++) {
    HC_CHECK(hc_kernel_launch(b->k, 1, &g, &l, 2, args));
    if (sync_each) HC_CHECK(hc_device_finish(b->dev));
  }
  if (timed) HC_CHECK(hc_device_timer_end(b->dev, &dev_s));
  HC_CHECK(hc_device_finish(b->dev));
  return (hc_now() - t0) / n * 1e6;
}

/* The raw equivalent; `timed`: a profiling queue, an event on the first
 * launch and a marker's at the end (what timing the span costs a raw
 * program that times it as cheaply as hc does). */
static double raw_launches(bench_t *b, int n, int sync_each, int timed) {
  size_t g = GROUP, l = GROUP;
  cl_command_queue q = timed ? b->raw->qp : b->raw->q;
  cl_event first = NULL, last = NULL;
  double t0 = hc_now();
  for (int i = 0; i < n; i++) {
    CL_CHECK(clEnqueueNDRangeKernel(q, b->raw->k, 1, NULL, &g, &l, 0, NULL, timed && !first ? &first : NULL));
    if (sync_each) CL_CHECK(clFinish(q));
  }
  if (timed) {
    CL_CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &last));
    CL_CHECK(clWaitForEvents(1, &last));
    cl_ulong s = 0, e = 0;
    CL_CHECK(clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL));
    CL_CHECK(clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL));
    clReleaseEvent(first), clReleaseEvent(last);
  }
  CL_CHECK(clFinish(q));
  return (hc_now() - t0) / n * 1e6;
}

typedef struct {
  const char *name;
  stat_t hc_us, raw_us;
} launch_row_t;

/* hc and raw alternate, `reps` times each. */
static void measure_launch(bench_t *b, launch_row_t *row, int n, int sync_each, int timed, int reps) {
  double h[256], r[256];
  hc_launches(b, n / 10 + 1, sync_each, timed); /* warm-up */
  raw_launches(b, n / 10 + 1, sync_each, timed);
  for (int i = 0; i < reps; i++) {
    h[i] = hc_launches(b, n, sync_each, timed);
    r[i] = raw_launches(b, n, sync_each, timed);
  }
  row->hc_us = summarize(h, reps);
  row->raw_us = summarize(r, reps);
}

/* ------------------------------------------------------------ copies */

enum { H2D, D2H, D2D, NDIR };
static const char *const dir_name[NDIR] = {"host->device", "device->host", "device->device"};

typedef struct {
  int dir;
  size_t bytes;
  stat_t hc_s, raw_s; /* seconds per copy */
} copy_row_t;

typedef struct {
  hc_buffer_t *h1, *h2;
  cl_mem r1, r2;
  unsigned char *host;
} copy_bufs_t;

static double hc_copy_once(bench_t *b, copy_bufs_t *c, int dir, size_t n) {
  double t0 = hc_now();
  if (dir == H2D)
    HC_CHECK(hc_buffer_write(c->h1, 0, c->host, n));
  else if (dir == D2H)
    HC_CHECK(hc_buffer_read(c->h1, 0, c->host, n));
  else {
    HC_CHECK(hc_buffer_copy(c->h2, 0, c->h1, 0, n));
    HC_CHECK(hc_device_finish(b->dev));
  }
  return hc_now() - t0;
}

static double raw_copy_once(bench_t *b, copy_bufs_t *c, int dir, size_t n) {
  cl_command_queue q = b->raw->q;
  double t0 = hc_now();
  if (dir == H2D)
    CL_CHECK(clEnqueueWriteBuffer(q, c->r1, CL_TRUE, 0, n, c->host, 0, NULL, NULL));
  else if (dir == D2H)
    CL_CHECK(clEnqueueReadBuffer(q, c->r1, CL_TRUE, 0, n, c->host, 0, NULL, NULL));
  else {
    CL_CHECK(clEnqueueCopyBuffer(q, c->r1, c->r2, 0, 0, n, 0, NULL, NULL));
    CL_CHECK(clFinish(q));
  }
  return hc_now() - t0;
}

static void measure_copy(bench_t *b, copy_bufs_t *c, copy_row_t *row, int reps) {
  double h[64], r[64];
  /* Small sizes repeat more: at least ~256 MiB moved per side. */
  int n = (int)(256 * MIB / row->bytes);
  if (n < reps) n = reps;
  if (n > 64) n = 64;
  hc_copy_once(b, c, row->dir, row->bytes);
  raw_copy_once(b, c, row->dir, row->bytes);
  for (int i = 0; i < n; i++) {
    h[i] = hc_copy_once(b, c, row->dir, row->bytes);
    r[i] = raw_copy_once(b, c, row->dir, row->bytes);
  }
  row->hc_s = summarize(h, n);
  row->raw_s = summarize(r, n);
}

/* ------------------------------------------------------------ output */

static double gbs(size_t bytes, double s) { return (double)bytes / s / 1e9; }

static void print_json(FILE *f, const char *id, const hc_device_info_t *in, int launches, const launch_row_t *lr,
                       int nl, const copy_row_t *cr, int nc) {
  fprintf(f, "{\n  \"device\": \"%s\", \"name\": \"%s\", \"platform\": \"%s\", \"driver\": \"%s\",\n", id, in->name,
          in->platform, in->driver);
  fprintf(f, "  \"launches\": %d,\n  \"launch_us\": [\n", launches);
  for (int i = 0; i < nl; i++)
    fprintf(f,
            "    {\"mode\": \"%s\", \"hc\": %.4f, \"raw\": %.4f, \"ratio\": %.4f, \"hc_median\": %.4f, "
            "\"raw_median\": %.4f, \"ratio_median\": %.4f}%s\n",
            lr[i].name, lr[i].hc_us.best, lr[i].raw_us.best, lr[i].hc_us.best / lr[i].raw_us.best, lr[i].hc_us.median,
            lr[i].raw_us.median, lr[i].hc_us.median / lr[i].raw_us.median, i + 1 < nl ? "," : "");
  fprintf(f, "  ],\n  \"copy_gbs\": [\n");
  for (int i = 0; i < nc; i++) {
    const copy_row_t *c = &cr[i];
    fprintf(f,
            "    {\"direction\": \"%s\", \"bytes\": %zu, \"hc\": %.4f, \"raw\": %.4f, \"ratio\": %.4f, "
            "\"hc_median\": %.4f, \"raw_median\": %.4f, \"ratio_median\": %.4f}%s\n",
            dir_name[c->dir], c->bytes, gbs(c->bytes, c->hc_s.best), gbs(c->bytes, c->raw_s.best),
            c->raw_s.best / c->hc_s.best, gbs(c->bytes, c->hc_s.median), gbs(c->bytes, c->raw_s.median),
            c->raw_s.median / c->hc_s.median, i + 1 < nc ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
}

static const char *verdict(double overhead) { return overhead <= 0.10 ? "ok" : "OVER 10%"; }

static void print_table(const char *id, const hc_device_info_t *in, int launches, const launch_row_t *lr, int nl,
                        const copy_row_t *cr, int nc) {
  printf("hc-bench-opencl-overhead: %s: %s (%s, driver %s)\n", id, in->name, in->platform, in->driver);
  printf("best of the runs (ratio of medians in the last column)\n\n");
  printf("launch overhead, empty kernel, 1 group of %d (%d launches per side, us per launch)\n", GROUP, launches);
  printf("  %-34s %10s %10s %8s %10s\n", "mode", "hc", "raw", "hc/raw", "(median)");
  for (int i = 0; i < nl; i++) {
    double ratio = lr[i].hc_us.best / lr[i].raw_us.best;
    printf("  %-34s %10.3f %10.3f %8.3f %10.3f  %s\n", lr[i].name, lr[i].hc_us.best, lr[i].raw_us.best, ratio,
           lr[i].hc_us.median / lr[i].raw_us.median, verdict(ratio - 1));
  }
  printf("\ncopy bandwidth, pageable host memory (GB/s)\n");
  printf("  %-16s %9s %10s %10s %8s %10s\n", "direction", "size", "hc", "raw", "hc/raw", "(median)");
  for (int i = 0; i < nc; i++) {
    const copy_row_t *c = &cr[i];
    double ratio = c->raw_s.best / c->hc_s.best;
    printf("  %-16s %5zu MiB %10.2f %10.2f %8.3f %10.3f  %s\n", dir_name[c->dir], c->bytes / MIB,
           gbs(c->bytes, c->hc_s.best), gbs(c->bytes, c->raw_s.best), ratio, c->raw_s.median / c->hc_s.median,
           verdict(1 - ratio));
  }
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv) {
  const char *spec = "opencl", *json_file = NULL;
  int launches = 20000, reps = 7, json = 0;
  size_t max_mib = 256;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--device=", 9))
      spec = argv[i] + 9;
    else if (!strncmp(argv[i], "--launches=", 11))
      launches = atoi(argv[i] + 11);
    else if (!strncmp(argv[i], "--max-mib=", 10))
      max_mib = (size_t)atol(argv[i] + 10);
    else if (!strncmp(argv[i], "--reps=", 7))
      reps = atoi(argv[i] + 7);
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strncmp(argv[i], "--json=", 7))
      json_file = argv[i] + 7;
    else {
      fprintf(stderr, "usage: %s [--device=opencl:N] [--launches=N] [--max-mib=N] [--reps=N] [--json | --json=FILE]\n",
              argv[0]);
      return 2;
    }
  }
  if (launches < 10 || reps < 1 || reps > 64 || max_mib < 1) {
    fprintf(stderr, "hc-bench-opencl-overhead: --launches >= 10, --reps 1..64, --max-mib >= 1\n");
    return 2;
  }
  if (strncmp(spec, "opencl", 6) != 0 || (spec[6] && spec[6] != ':')) {
    fprintf(stderr, "hc-bench-opencl-overhead: --device must be opencl or opencl:N\n");
    return 2;
  }
  hc_context_t *ctx;
  HC_CHECK(hc_context_create(NULL, &ctx));
  uint32_t idx;
  if (hc_device_find(ctx, spec, &idx) != HC_OK) {
    fprintf(stderr, "hc-bench-opencl-overhead: skipped: %s\n", hc_last_error());
    hc_context_destroy(ctx);
    return 77;
  }
  /* Its index among the opencl devices = the raw enumeration index. */
  uint32_t local_index = (uint32_t)atoi(strchr(hc_device_id(ctx, idx), ':') + 1);
  bench_t b = {0};
  raw_t raw;
  HC_CHECK(hc_device_open(ctx, idx, &b.dev));
  raw_setup(&raw, local_index);
  b.raw = &raw;
  hc_kernel_desc_t desc = {sizeof desc, "empty", hc_src, NULL, NULL};
  HC_CHECK(hc_kernel_create(b.dev, &desc, &b.k));
  HC_CHECK(hc_buffer_create(b.dev, 4 * GROUP, &b.arg));
  const hc_device_info_t *in = hc_device_info(b.dev);

  launch_row_t lr[3] = {{.name = "throughput (back to back + finish)"},
                        {.name = "throughput, timer span / events"},
                        {.name = "round trip (launch + finish)"}};
  /* Many short samples, hc and raw alternating: on a busy machine some
   * fall into quiet moments for both. */
  int samples = 4 * reps, per = launches / samples > 10 ? launches / samples : 10;
  measure_launch(&b, &lr[0], per, 0, 0, samples);
  measure_launch(&b, &lr[1], per, 0, 1, samples);
  measure_launch(&b, &lr[2], per / 10 > 10 ? per / 10 : 10, 1, 0, samples);

  size_t maxb = max_mib * MIB;
  copy_bufs_t c = {0};
  cl_int err;
  c.host = malloc(maxb);
  if (!c.host) {
    fprintf(stderr, "hc-bench-opencl-overhead: cannot allocate %zu MiB of host memory\n", max_mib);
    return 1;
  }
  memset(c.host, 0x5a, maxb); /* touch every page before timing */
  HC_CHECK(hc_buffer_create(b.dev, maxb, &c.h1));
  HC_CHECK(hc_buffer_create(b.dev, maxb, &c.h2));
  c.r1 = clCreateBuffer(raw.ctx, CL_MEM_READ_WRITE, maxb, NULL, &err);
  CL_CHECK(err);
  c.r2 = clCreateBuffer(raw.ctx, CL_MEM_READ_WRITE, maxb, NULL, &err);
  CL_CHECK(err);
  copy_row_t cr[3 * 16];
  int nc = 0;
  for (int dir = 0; dir < NDIR; dir++)
    for (size_t s = MIB; s <= maxb && nc < 48; s *= 4) {
      cr[nc].dir = dir;
      cr[nc].bytes = s;
      measure_copy(&b, &c, &cr[nc], reps);
      nc++;
    }

  if (json)
    print_json(stdout, hc_device_id(ctx, idx), in, launches, lr, 3, cr, nc);
  else
    print_table(hc_device_id(ctx, idx), in, launches, lr, 3, cr, nc);
  if (json_file) {
    FILE *f = fopen(json_file, "w");
    if (!f) {
      perror(json_file);
      return 1;
    }
    print_json(f, hc_device_id(ctx, idx), in, launches, lr, 3, cr, nc);
    fclose(f);
  }
  clReleaseMemObject(c.r1);
  clReleaseMemObject(c.r2);
  hc_buffer_destroy(c.h1);
  hc_buffer_destroy(c.h2);
  free(c.host);
  raw_teardown(&raw);
  hc_buffer_destroy(b.arg);
  hc_kernel_destroy(b.k);
  hc_device_close(b.dev);
  hc_context_destroy(ctx);
  return 0;
}
