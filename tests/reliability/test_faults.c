/* Device faults: a failing device gives a clear status, frees everything,
 * and the next run in the same process works.
 *
 * - real devices (cpu, opencl, cuda where present): an allocation larger
 *   than the device is HC_ERR_DEVICE_MEMORY naming the request and the
 *   device's limits, and the device then allocates, computes and runs a
 *   verified job; a job whose parameters need more memory than the device
 *   has is refused the same way before it allocates.
 * - failing kernels (opencl, cuda): a build error (with the build log), a
 *   kernel name the program lacks, too few arguments, an argument of the
 *   wrong size, a work-group larger than the kernel allows, a range too
 *   large: each a clear status and message, and the same kernel launched
 *   right afterwards gives right results.
 * - injected faults: a backend built by this test (faulty_backend.c) fails
 *   the k-th allocation, write, read, copy, fill, kernel creation, launch
 *   or finish. Every workload in the tree runs on it with each of those
 *   failing in turn (every call for short runs, a spread of them for long
 *   ones): the run fails with the injected message, every buffer and
 *   kernel is given back (the backend counts them; ASan and valgrind see
 *   host leaks), and the same job then runs again and verifies.
 * - host memory (hc_host_alloc) on that backend: its page-locked memory
 *   when it keeps the contract; ordinary 64-byte-aligned memory, with the
 *   backend's given back, when its memory is misaligned or it fails; none
 *   of its memory with HC_HOST_PINNED=0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/pipeline.h>

#include "faulty.h"
#include "harness.h"

/* ----------------------------------------------------------- real devices */

static const char *const specs[] = {"cpu", "opencl", "cuda"};

static int contains_number(const char *msg, unsigned long long v) {
  char num[32];
  snprintf(num, sizeof num, "%llu", v);
  return strstr(msg, num) != NULL;
}

/* y[i] = a*i + b through saxpy (test plugin) on dev, verified. */
static void run_saxpy(hc_device_t *dev, const char *n) {
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "saxpy", &job));
  TH_ASSERT_OK(hc_job_set(job, "n", n));
  TH_ASSERT_OK(hc_job_run(job, dev, HC_RUN_VERIFY));
  CU_ASSERT_EQUAL(hc_job_verified(job, NULL), 1);
  hc_job_destroy(job);
}

static void test_oversized_allocation(void) {
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    hc_device_t *dev = th_device(specs[s]);
    if (!dev) continue;
    const hc_device_info_t *in = hc_device_info(dev);
    uint64_t limit = in->global_mem_bytes > in->max_alloc_bytes ? in->global_mem_bytes : in->max_alloc_bytes;
    size_t want = (size_t)(limit ? limit * 2 : (uint64_t)1 << 62);
    hc_buffer_t *b = (hc_buffer_t *)1;
    hc_status_t st = hc_buffer_create(dev, want, &b);
    CU_ASSERT_EQUAL(st, HC_ERR_DEVICE_MEMORY);
    CU_ASSERT_PTR_NULL(b);
    const char *msg = hc_last_error();
    printf("\n    %s: %s\n", specs[s], msg);
    CU_ASSERT(contains_number(msg, want));                 /* what was asked */
    CU_ASSERT(contains_number(msg, in->global_mem_bytes)); /* what there is */
    CU_ASSERT(strstr(msg, hc_device_name(dev)) != NULL);   /* where */
    /* A field whose element count overflows is refused too. */
    int64_t huge[3] = {1ll << 40, 1ll << 40, 1ll << 40};
    hc_field_t *f = (hc_field_t *)1;
    CU_ASSERT_NOT_EQUAL(hc_field_create(dev, HC_F64, 3, huge, &f), HC_OK);
    CU_ASSERT_PTR_NULL(f);
    /* The device still works: a buffer round trip and a verified job. */
    enum { M = 1 << 18 };
    float *x = malloc(M * sizeof *x), *y = malloc(M * sizeof *y);
    CU_ASSERT_FATAL(x && y);
    for (int i = 0; i < M; i++) x[i] = (float)i;
    TH_ASSERT_OK(hc_buffer_create(dev, M * sizeof *x, &b));
    TH_ASSERT_OK(hc_buffer_write(b, 0, x, M * sizeof *x));
    TH_ASSERT_OK(hc_buffer_read(b, 0, y, M * sizeof *y));
    CU_ASSERT(!memcmp(x, y, M * sizeof *x));
    hc_buffer_destroy(b);
    free(x);
    free(y);
    run_saxpy(dev, "100000");
  }
}

/* A job whose parameters need more than the device has: refused before it
 * allocates, with the sizes in the message; the next run works. */
static void test_job_too_large(void) {
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    hc_device_t *dev = th_device(specs[s]);
    if (!dev) continue;
    hc_job_t *job = NULL;
    TH_ASSERT_OK(hc_job_create(th_context(), "saxpy", &job));
    TH_ASSERT_OK(hc_job_set(job, "n", "1e10"));
    TH_ASSERT_OK(hc_job_set(job, "dtype", "f64"));
    hc_status_t st = hc_job_run(job, dev, 0);
    CU_ASSERT_EQUAL(st, HC_ERR_DEVICE_MEMORY);
    const char *msg = hc_last_error();
    CU_ASSERT(contains_number(msg, 160000000000ull));                       /* needed */
    CU_ASSERT(contains_number(msg, hc_device_info(dev)->global_mem_bytes)); /* available */
    CU_ASSERT_PTR_NULL(hc_job_output(job, "y"));
    TH_ASSERT_OK(hc_job_set(job, "n", "1000"));
    TH_ASSERT_OK(hc_job_run(job, dev, HC_RUN_VERIFY));
    CU_ASSERT_PTR_NOT_NULL(hc_job_output(job, "y"));
    hc_job_destroy(job);
  }
}

/* --------------------------------------------------------- failing kernels */

static const char good_src[] = "HC_KERNEL void axpb(HC_GLOBAL float *y, int n, float a, float b) {\n"
                               "  long i = hc_global_id(0);\n"
                               "  if (i < n) y[i] = a * (float)i + b;\n"
                               "}\n";
static const char broken_src[] = "HC_KERNEL void broken(HC_GLOBAL float *y) {\n"
                                 "  y[0] = undefined_thing_in_test_faults;\n"
                                 "}\n";

enum { KN = 4096 };

/* Launches axpb right and checks y. */
static void launch_right(hc_kernel_t *k, hc_buffer_t *buf, float a, float b) {
  int32_t n = KN;
  hc_arg_t args[] = {HC_ARG_BUF(buf), HC_ARG_VAL(n), HC_ARG_VAL(a), HC_ARG_VAL(b)};
  size_t global = KN;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 4, args));
  TH_ASSERT_OK(hc_device_finish(hc_buffer_device(buf)));
  static float y[KN];
  TH_ASSERT_OK(hc_buffer_read(buf, 0, y, sizeof y));
  int bad = 0;
  for (int i = 0; i < KN; i++) bad += y[i] != a * (float)i + b;
  CU_ASSERT_EQUAL(bad, 0);
}

static void expect_failure(hc_status_t st, hc_status_t want1, hc_status_t want2, const char *what, const char *needle) {
  const char *msg = hc_last_error();
  printf("    %s -> %s: %.200s\n", what, hc_status_name(st), msg);
  CU_ASSERT(st == want1 || st == want2);
  CU_ASSERT(msg[0] != '\0');
  if (needle && !strstr(msg, needle)) {
    fprintf(stderr, "%s: message lacks '%s': %s\n", what, needle, msg);
    CU_FAIL("message does not name the problem");
  }
}

static void failing_kernels_on(const char *spec) {
  hc_device_t *dev = th_device(spec);
  if (!dev) return;
  printf("\n");
  hc_buffer_t *buf = NULL;
  TH_ASSERT_OK(hc_buffer_create(dev, KN * sizeof(float), &buf));
  hc_kernel_t *k = NULL;
  hc_kernel_desc_t good = {sizeof good, "axpb", good_src, NULL, NULL};
  TH_ASSERT_OK(hc_kernel_create(dev, &good, &k));
  launch_right(k, buf, 2, 1);

  /* A build error: HC_ERR_BUILD with the compiler's words. */
  hc_kernel_desc_t bad = {sizeof bad, "broken", broken_src, NULL, NULL};
  hc_kernel_t *kb = (hc_kernel_t *)1;
  expect_failure(hc_kernel_create(dev, &bad, &kb), HC_ERR_BUILD, HC_ERR_BUILD, "build error",
                 "undefined_thing_in_test_faults");
  CU_ASSERT_PTR_NULL(kb);
  /* A name the program does not have. */
  hc_kernel_desc_t missing = {sizeof missing, "nosuch_kernel", good_src, NULL, NULL};
  expect_failure(hc_kernel_create(dev, &missing, &kb), HC_ERR_NOT_FOUND, HC_ERR_BUILD, "unknown kernel name",
                 "nosuch_kernel");
  launch_right(k, buf, 3, -1);

  int32_t n = KN;
  int64_t n64 = KN;
  float a = 1, b = 0;
  size_t global = KN;
  /* Too few arguments. */
  hc_arg_t three[] = {HC_ARG_BUF(buf), HC_ARG_VAL(n), HC_ARG_VAL(a)};
  expect_failure(hc_kernel_launch(k, 1, &global, NULL, 3, three), HC_ERR_INVALID_ARG, HC_ERR_LAUNCH,
                 "3 arguments for 4", "4");
  launch_right(k, buf, 4, 2);
  /* An 8-byte integer where the kernel takes int. */
  hc_arg_t wide[] = {HC_ARG_BUF(buf), HC_ARG_VAL(n64), HC_ARG_VAL(a), HC_ARG_VAL(b)};
  expect_failure(hc_kernel_launch(k, 1, &global, NULL, 4, wide), HC_ERR_INVALID_ARG, HC_ERR_LAUNCH, "int64 for int",
                 "argument 1");
  launch_right(k, buf, 5, 3);
  /* A work-group twice the kernel's limit. */
  hc_arg_t four[] = {HC_ARG_BUF(buf), HC_ARG_VAL(n), HC_ARG_VAL(a), HC_ARG_VAL(b)};
  size_t local = 2 * hc_kernel_max_group_size(k);
  size_t g2 = local * 2;
  expect_failure(hc_kernel_launch(k, 1, &g2, &local, 4, four), HC_ERR_INVALID_ARG, HC_ERR_LAUNCH,
                 "work-group over the limit", NULL);
  launch_right(k, buf, 6, 4);
  /* A range that cannot be rounded up to whole groups. */
  size_t huge = (size_t)-1;
  expect_failure(hc_kernel_launch(k, 1, &huge, NULL, 4, four), HC_ERR_INVALID_ARG, HC_ERR_LAUNCH, "range too large",
                 NULL);
  launch_right(k, buf, 7, 5);
  hc_kernel_destroy(k);
  hc_buffer_destroy(buf);
  run_saxpy(dev, "10000");
}

static void test_failing_kernels_opencl(void) { failing_kernels_on("opencl"); }
static void test_failing_kernels_cuda(void) { failing_kernels_on("cuda"); }

/* --------------------------------------------------------- injected faults */

/* Each workload of the tree at a size that runs in milliseconds. */
/* Each workload of the tree at a size that runs in milliseconds, on
 * faulty:0 (device memory) or, where it needs memory the host can address
 * (grid expressions evaluated on the host), on faulty:1. */
static const struct {
  const char *workload;
  const char *params;
  const char *device;
} cases[] = {
    {"saxpy", "n=1000", "faulty:0"},
    {"probe", "grid=4x5x6", "faulty:0"},
    {"simpson", "n=17x17 func=sinprod", "faulty:0"},
    {"jacobi", "dim=2 n=17 iters=20 check=5", "faulty:0"},
    {"nbody", "n=64 steps=3 diagnostics=true", "faulty:0"},
    {"bpm", "dim=2 n=31 steps=4", "faulty:0"},
    {"multigrid", "dim=2 n=17 host=eval", "faulty:1"},
    {"gridexpr", "dim=2 n=17 iters=2 host=eval", "faulty:1"},
    /* A pipeline through the glue workloads, its last stage on the other
     * device (the field moves through the host). */
    {"pipeline",
     "bpm dim=2 n=31 steps=4 @faulty:0 | abs2 | scale factor=2 | convert to=f64 | slice index=3 | reduce op=sum "
     "@faulty:1",
     NULL},
};

static const char *const ops[] = {"alloc", "write", "read", "copy", "fill", "kernel", "launch", "finish"};

/* A case ready to run: a job on a device (run again and again), or a
 * pipeline text (built, run and destroyed each time, so that what its
 * stages leave behind is counted too). */
typedef struct {
  hc_job_t *job;
  hc_device_t *dev;
  const char *pipeline;
} runner_t;

static hc_status_t run_case(const runner_t *r) {
  if (!r->pipeline) return hc_job_run(r->job, r->dev, HC_RUN_VERIFY);
  hc_pipeline_t *p = NULL;
  hc_status_t st = hc_pipeline_parse(th_context(), r->pipeline, &p);
  if (st == HC_OK) st = hc_pipeline_run(p, HC_RUN_VERIFY);
  static char msg[8192];
  snprintf(msg, sizeof msg, "%s", hc_last_error());
  hc_pipeline_destroy(p);
  if (st != HC_OK) hc_error(st, "%s", msg); /* the run's message, not the cleanup's */
  return st;
}

static hc_job_t *make_job(int c) {
  hc_job_t *job = NULL;
  if (hc_job_create(th_context(), cases[c].workload, &job) != HC_OK) return NULL;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", cases[c].params);
  char *save = NULL;
  for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
    if (hc_job_set_kv(job, kv) != HC_OK) {
      fprintf(stderr, "%s %s: %s\n", cases[c].workload, kv, hc_last_error());
      hc_job_destroy(job);
      return NULL;
    }
  return job;
}

/* The calls to fail: each of the first 12, then eight more spread up to
 * the last. */
static long next_k(long k, long total) {
  if (k < 12) return k + 1;
  if (k >= total) return total + 1;
  long step = total / 8 > 1 ? total / 8 : 1;
  return k + step < total ? k + step : total;
}

static void test_injected_faults(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  printf("\n");
  long total_runs = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    runner_t r = {NULL, NULL, NULL};
    if (!cases[c].device) {
      hc_pipeline_t *p = NULL;
      if (hc_pipeline_parse(th_context(), cases[c].params, &p) != HC_OK) {
        char why[600];
        snprintf(why, sizeof why, "pipeline not built here: %s", hc_last_error());
        th_skip(why);
        continue;
      }
      hc_pipeline_destroy(p);
      r.pipeline = cases[c].params;
    } else {
      r.dev = th_device(cases[c].device);
      CU_ASSERT_PTR_NOT_NULL_FATAL(r.dev);
      if (!(r.job = make_job((int)c))) {
        char why[128];
        snprintf(why, sizeof why, "workload %s not built here", cases[c].workload);
        th_skip(why);
        continue;
      }
    }
    /* The run without faults: it works and tells how often each op is
     * called. */
    faulty_arm(NULL, 0);
    long live0 = faulty_live();
    hc_status_t st = run_case(&r);
    if (st != HC_OK) fprintf(stderr, "%s: %s\n", cases[c].workload, hc_last_error());
    CU_ASSERT_EQUAL(st, HC_OK);
    if (st != HC_OK) {
      hc_job_destroy(r.job);
      continue;
    }
    long counts[8];
    for (int o = 0; o < 8; o++) counts[o] = faulty_calls(ops[o]);
    int failures = 0, runs = 0, silent = 0, leaked = 0, lost_message = 0, no_rerun = 0;
    for (int o = 0; o < 8; o++) {
      for (long k = 1; k <= counts[o]; k = next_k(k, counts[o])) {
        faulty_arm(ops[o], k);
        st = run_case(&r);
        runs++;
        if (st == HC_OK) {
          silent++;
          fprintf(stderr, "%s: failing %s call %ld of %ld went unnoticed (the run returned HC_OK)\n", cases[c].workload,
                  ops[o], k, counts[o]);
        } else {
          failures++;
          if (!strstr(hc_last_error(), "injected")) {
            lost_message++;
            fprintf(stderr, "%s: failing %s call %ld: the message lost the cause: %s\n", cases[c].workload, ops[o], k,
                    hc_last_error());
          }
          if (faulty_live() != live0) {
            leaked++;
            fprintf(stderr, "%s: failing %s call %ld: %ld buffers/kernels not given back\n", cases[c].workload, ops[o],
                    k, faulty_live() - live0);
          }
        }
        /* The same job again, no fault: it runs and verifies. */
        faulty_arm(NULL, 0);
        if (run_case(&r) != HC_OK) {
          no_rerun++;
          fprintf(stderr, "%s: after failing %s call %ld the rerun failed: %s\n", cases[c].workload, ops[o], k,
                  hc_last_error());
        }
      }
    }
    printf("    %-10s %3d injected faults (calls: alloc %ld write %ld read %ld copy %ld fill %ld kernel %ld "
           "launch %ld finish %ld): %d failed cleanly, %d unnoticed, %d leaked, %d lost the message\n",
           cases[c].workload, runs, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6],
           counts[7], failures, silent, leaked, lost_message);
    total_runs += runs;
    CU_ASSERT_EQUAL(silent, 0);
    CU_ASSERT_EQUAL(leaked, 0);
    CU_ASSERT_EQUAL(lost_message, 0);
    CU_ASSERT_EQUAL(no_rerun, 0);
    hc_job_destroy(r.job);
    CU_ASSERT_EQUAL(faulty_live(), live0);
  }
  printf("    %ld fault-injected runs in all\n", total_runs);
}

/* One hc_host_alloc of 1000 bytes on dev: aligned, every byte usable;
 * returns the backend's host_alloc calls and how many of its blocks the
 * memory held while it lived. */
static void host_alloc_once(hc_device_t *dev, long offset, int fail, long *calls, long *held) {
  faulty_host(offset, fail);
  long live0 = faulty_live();
  unsigned char *p = NULL;
  TH_ASSERT_OK(hc_host_alloc(dev, 1000, (void **)&p));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_EQUAL((uintptr_t)p % 64, 0);
  for (int i = 0; i < 1000; i++) p[i] = (unsigned char)i;
  int same = 1;
  for (int i = 0; i < 1000; i++) same &= p[i] == (unsigned char)i;
  CU_ASSERT(same);
  *held = faulty_live() - live0;
  hc_host_free(dev, p);
  CU_ASSERT_EQUAL(faulty_live(), live0);
  *calls = faulty_host(0, 0);
}

static void test_host_memory(void) {
  hc_device_t *dev = th_device("faulty");
  if (!dev) return;
  CU_ASSERT_FATAL(faulty_bind());
  long calls, held;
  host_alloc_once(dev, 0, 0, &calls, &held); /* the backend's, kept */
  CU_ASSERT_EQUAL(calls, 1);
  CU_ASSERT_EQUAL(held, 1);
  host_alloc_once(dev, 8, 0, &calls, &held); /* misaligned: given back at once */
  CU_ASSERT_EQUAL(calls, 1);
  CU_ASSERT_EQUAL(held, 0);
  host_alloc_once(dev, 0, 1, &calls, &held); /* failing: ordinary memory */
  CU_ASSERT_EQUAL(calls, 1);
  CU_ASSERT_EQUAL(held, 0);
  setenv("HC_HOST_PINNED", "0", 1);
  host_alloc_once(dev, 0, 0, &calls, &held); /* not asked */
  unsetenv("HC_HOST_PINNED");
  CU_ASSERT_EQUAL(calls, 0);
  CU_ASSERT_EQUAL(held, 0);
  hc_host_free(dev, NULL); /* nothing */
  /* A backend without the PCI query: "" for its devices, NULL past the
   * last device. */
  uint32_t n = hc_device_count(th_context());
  CU_ASSERT_STRING_EQUAL(hc_device_pci_bus_id(th_context(), hc_device_index(dev)), "");
  CU_ASSERT_PTR_NULL(hc_device_pci_bus_id(th_context(), n));
  CU_ASSERT_PTR_NULL(hc_device_pci_bus_id(NULL, 0));
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("device faults", faulty_setup, NULL);
  CU_ADD_TEST(s, test_oversized_allocation);
  CU_ADD_TEST(s, test_job_too_large);
  CU_ADD_TEST(s, test_failing_kernels_opencl);
  CU_ADD_TEST(s, test_failing_kernels_cuda);
  CU_ADD_TEST(s, test_injected_faults);
  CU_ADD_TEST(s, test_host_memory);
}

TH_MAIN(register_tests)
