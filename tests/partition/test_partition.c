/* Split runs (core/partition): the cpu backend's several devices
 * (HC_CPU_DEVICES), device sets and their errors, split workloads against
 * the whole run on one device (bit for bit where the parts compute alike),
 * mixed backends, and a part failing mid-run.
 *
 * The context sees cpu:0..cpu:3 (one thread each), the serial test backend,
 * the fault-injecting backend (faulty.h) and PoCL's opencl:0 when present. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hc/partition.h>
#include <hc/pipeline.h>
#include <jansson.h>

#include "../reliability/faulty.h"
#include "harness.h"

typedef struct {
  void *u; /* the primary output, on the host */
  size_t bytes;
  double residual; /* metric "residual" */
  double sweeps;
  uint32_t parts; /* parts of the split run (0: it ran whole) */
  hc_status_t st;
  char notes[1024];
} result_t;

static void result_free(result_t *r) {
  free(r->u);
  memset(r, 0, sizeof *r);
}

/* Runs workload with params (space-separated key=value) on a device set
 * spec with optional weights; reads the outputs ports[0..nports) back into
 * out[0..nports) (the metrics and status in each). */
static void run_ports(const char *spec, const char *weights, const char *workload, const char *params,
                      const char *const *ports, size_t nports, result_t *out) {
  result_t r;
  memset(&r, 0, sizeof r);
  hc_context_t *ctx = th_context();
  hc_job_t *job = NULL;
  hc_devset_t *set = NULL;
  r.st = hc_job_create(ctx, workload, &job);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", params);
  for (char *tok = strtok(buf, " "); tok && r.st == HC_OK; tok = strtok(NULL, " ")) r.st = hc_job_set_kv(job, tok);
  if (r.st == HC_OK) r.st = hc_devset_parse(ctx, spec, workload, &set);
  if (r.st == HC_OK && weights) r.st = hc_devset_parse_weights(set, weights);
  if (r.st == HC_OK) r.st = hc_job_run_split(job, set, 0);
  if (r.st != HC_OK) fprintf(stderr, "%s on %s: %s\n", workload, spec, hc_last_error());
  hc_job_metric_find(job, "residual", &r.residual);
  hc_job_metric_find(job, "sweeps", &r.sweeps);
  r.parts = set ? hc_devset_parts(set) : 0;
  snprintf(r.notes, sizeof r.notes, "%s", job ? hc_job_notes(job) : "");
  for (size_t i = 0; i < nports; i++) {
    out[i] = r;
    hc_field_t *f = r.st == HC_OK ? hc_job_output(job, ports[i]) : NULL;
    if (f) {
      out[i].bytes = hc_field_bytes(f);
      out[i].u = malloc(out[i].bytes);
      if (hc_field_read(f, out[i].u) != HC_OK) out[i].st = HC_ERR_IO;
      CU_ASSERT_PTR_EQUAL(hc_field_device(f), hc_devset_device(set, 0)); /* gathered on the first device */
    }
  }
  hc_job_destroy(job);
  hc_devset_destroy(set);
}

/* run_ports with one output. */
static result_t run_on(const char *spec, const char *weights, const char *workload, const char *params,
                       const char *port) {
  result_t r;
  run_ports(spec, weights, workload, params, &port, 1, &r);
  return r;
}

static void test_cpu_devices(void) {
  hc_context_t *ctx = th_context();
  uint32_t idx;
  TH_ASSERT_OK(hc_device_find(ctx, "cpu:3", &idx));
  hc_device_info_t in;
  TH_ASSERT_OK(hc_device_query(ctx, idx, &in));
  CU_ASSERT_EQUAL(in.compute_units, 1); /* HC_CPU_THREADS=4 over 4 devices */
  CU_ASSERT_NOT_EQUAL(hc_device_find(ctx, "cpu:4", &idx), HC_OK);
}

/* Halo staging memory: every device gives aligned host memory that its
 * transfers take (page-locked on CUDA, a mapped host buffer on OpenCL,
 * ordinary on the cpu backend). */
static void test_host_alloc(void) {
  hc_context_t *ctx = th_context();
  for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
    hc_device_t *dev = NULL;
    if (hc_device_open(ctx, i, &dev) != HC_OK) continue;
    double *h = NULL, back[256];
    TH_ASSERT_OK(hc_host_alloc(dev, 256 * sizeof *h, (void **)&h));
    CU_ASSERT_EQUAL((uintptr_t)h % 64, 0);
    for (int k = 0; k < 256; k++) h[k] = k + 0.5;
    hc_buffer_t *b = NULL;
    TH_ASSERT_OK(hc_buffer_create(dev, sizeof back, &b));
    TH_ASSERT_OK(hc_buffer_write(b, 0, h, sizeof back));
    TH_ASSERT_OK(hc_buffer_read(b, 0, back, sizeof back));
    CU_ASSERT_EQUAL(memcmp(h, back, sizeof back), 0);
    hc_buffer_destroy(b);
    hc_host_free(dev, h);
    hc_host_free(dev, NULL);
    CU_ASSERT_EQUAL(hc_host_alloc(dev, 16, NULL), HC_ERR_INVALID_ARG);
    hc_device_close(dev);
  }
}

/* A pipeline stage on a device set (@cpu:0,cpu:1) runs split, and the
 * next stage gets the gathered field: the same as with one device. */
static void test_pipeline_stage_set(void) {
  hc_context_t *ctx = th_context();
  const char *texts[2] = {"jacobi dim=2 n=65 iters=200 @cpu:0 | simpson @cpu:2",
                          "jacobi dim=2 n=65 iters=200 @cpu:0,cpu:1 | simpson @cpu:2"};
  double integral[2] = {0, 0};
  double *u[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    hc_pipeline_t *p = NULL;
    TH_ASSERT_OK(hc_pipeline_parse(ctx, texts[k], &p));
    TH_ASSERT_OK(hc_pipeline_run(p, 0));
    hc_pipeline_stage_info_t info;
    TH_ASSERT_OK(hc_pipeline_stage_info(p, 0, &info));
    CU_ASSERT_STRING_EQUAL(info.device, k ? "cpu:0,cpu:1" : "cpu:0");
    hc_field_t *f = hc_job_output(hc_pipeline_stage_job(p, 0), "u");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    u[k] = malloc(hc_field_bytes(f));
    TH_ASSERT_OK(hc_field_read(f, u[k]));
    hc_job_t *j2 = hc_pipeline_stage_job(p, 1);
    for (uint32_t i = 0; i < hc_job_metric_count(j2); i++) {
      const char *name, *unit;
      double v;
      if (hc_job_metric(j2, i, &name, &v, &unit) == HC_OK && !strcmp(name, "integral")) integral[k] = v;
    }
    if (k == 1) CU_ASSERT_EQUAL(memcmp(u[0], u[1], hc_field_bytes(f)), 0);
    hc_pipeline_destroy(p);
  }
  CU_ASSERT_NOT_EQUAL(integral[0], 0);
  CU_ASSERT_EQUAL(integral[0], integral[1]);
  free(u[0]);
  free(u[1]);
  hc_pipeline_t *bad = NULL;
  CU_ASSERT_EQUAL(hc_pipeline_parse(ctx, "jacobi dim=2 n=65 @cpu:0,cpu:0", &bad), HC_ERR_PIPELINE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "listed twice"));
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "stage 1"));
  hc_pipeline_destroy(bad);
}

/* jacobi on 1-4 cpu parts with equal and uneven shares gives the whole
 * run's u bit for bit, and the same residual to rounding. */
static void test_jacobi_bit_identical(void) {
  static const char *params[] = {
      "dim=3 n=21x17x19 iters=37 dtype=f64",
      "dim=3 n=19 iters=25 f=gauss dtype=f32 init=eigen mode=2",
      "dim=2 n=33x29 iters=40 f=point dtype=f64",
      "dim=2 n=23 iters=30 dtype=f32 f_mode=stored residual=true",
      /* two sweeps per pass over memory, on the parts as on one device */
      "dim=3 n=23x18x17 iters=41 check=10 dtype=f64 sweeps_per_pass=2",
      "dim=2 n=40x31 iters=33 dtype=f32 init=eigen sweeps_per_pass=2",
      /* deeper ghost rows: several sweeps between exchanges, a check (and
       * the end) inside a pass */
      "dim=3 n=30x17x19 iters=37 check=10 dtype=f64 sweeps_per_exchange=5",
      "dim=2 n=50x31 iters=33 check=9 dtype=f32 sweeps_per_pass=2 sweeps_per_exchange=8",
  };
  static const struct {
    const char *spec, *weights;
  } sets[] = {
      {"cpu:0", NULL},
      {"cpu:0,cpu:1", NULL},
      {"cpu:1,cpu:0", "0.8,0.2"},
      {"cpu:0,cpu:1,cpu:2", "1,5,2"},
      {"cpu:0,cpu:1,cpu:2,cpu:3", NULL},
      {"cpu:3,cpu:2,cpu:1,cpu:0", "0.1,0.1,0.1,0.7"},
  };
  for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
    result_t whole = run_on("cpu:0", NULL, "jacobi", params[p], "u");
    CU_ASSERT_EQUAL_FATAL(whole.st, HC_OK);
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
      result_t part = run_on(sets[s].spec, sets[s].weights, "jacobi", params[p], "u");
      CU_ASSERT_EQUAL(part.st, HC_OK);
      CU_ASSERT_EQUAL(part.bytes, whole.bytes);
      int same = part.u && part.bytes == whole.bytes && !memcmp(part.u, whole.u, whole.bytes);
      if (!same) fprintf(stderr, "jacobi %s on %s (%s): u differs\n", params[p], sets[s].spec, sets[s].weights);
      CU_ASSERT(same);
      CU_ASSERT(fabs(part.residual - whole.residual) <= 1e-12 * fabs(whole.residual));
      result_free(&part);
    }
    result_free(&whole);
  }
  /* The residual output (f + Lap u) is gathered too. */
  result_t a = run_on("cpu:0", NULL, "jacobi", params[3], "residual");
  result_t b = run_on("cpu:0,cpu:1,cpu:2", NULL, "jacobi", params[3], "residual");
  CU_ASSERT(a.u && b.u && a.bytes == b.bytes && !memcmp(a.u, b.u, a.bytes));
  result_free(&a);
  result_free(&b);
}

/* HC_SPLIT_OVERLAP=on on cpu parts (auto overlaps on GPUs only): each
 * part sweeps the rows its neighbours need, begins the exchange, sweeps
 * the rest and ends it. Every point gets the same arithmetic, so u is the
 * whole run's bit for bit, with one and two sweeps per pass, parts too
 * small to overlap (they run the plain pass) among them, the serial
 * backend's staged halos, and a PoCL part's device kernels, whose result
 * is the same with the overlap as without. */
static void test_jacobi_overlap(void) {
  static const char *params[] = {
      "dim=3 n=29x17x19 iters=37 dtype=f64",
      "dim=3 n=31x18x17 iters=41 check=10 dtype=f64 sweeps_per_pass=2",
      "dim=2 n=40x31 iters=33 dtype=f32 init=eigen sweeps_per_pass=2",
      "dim=2 n=35x23 iters=30 dtype=f32 f_mode=stored",
  };
  static const struct {
    const char *spec, *weights;
  } sets[] = {
      {"cpu:0,cpu:1", NULL},
      {"cpu:0,cpu:1,cpu:2", "1,5,2"},
      {"cpu:3,cpu:2,cpu:1,cpu:0", "0.1,0.1,0.1,0.7"},
      {"serial:0,cpu:1,cpu:2", "2,1,1"},
  };
  for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
    result_t whole = run_on("cpu:0", NULL, "jacobi", params[p], "u");
    CU_ASSERT_EQUAL_FATAL(whole.st, HC_OK);
    setenv("HC_SPLIT_OVERLAP", "on", 1);
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
      if (!strncmp(sets[s].spec, "serial", 6) && !th_device("serial")) continue;
      result_t part = run_on(sets[s].spec, sets[s].weights, "jacobi", params[p], "u");
      CU_ASSERT_EQUAL(part.st, HC_OK);
      int same = part.u && part.bytes == whole.bytes && !memcmp(part.u, whole.u, whole.bytes);
      if (!same) fprintf(stderr, "jacobi %s on %s overlapped: u differs\n", params[p], sets[s].spec);
      CU_ASSERT(same);
      result_free(&part);
    }
    unsetenv("HC_SPLIT_OVERLAP");
    result_free(&whole);
  }
  if (!th_device("opencl:0")) return;
  for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
    if (strstr(params[p], "sweeps_per_pass")) continue; /* the host kernel's */
    result_t plain = run_on("opencl:0,cpu:0", "3,1", "jacobi", params[p], "u");
    setenv("HC_SPLIT_OVERLAP", "on", 1);
    result_t over = run_on("opencl:0,cpu:0", "3,1", "jacobi", params[p], "u");
    unsetenv("HC_SPLIT_OVERLAP");
    CU_ASSERT_EQUAL(over.st, HC_OK);
    CU_ASSERT(plain.u && over.u && plain.bytes == over.bytes && !memcmp(plain.u, over.u, plain.bytes));
    result_free(&plain);
    result_free(&over);
  }
}

/* The part API used wrongly (the test workload "parts",
 * tests/plugins/parts_workload.c): an exchange's end without its begin, a
 * second begin, an end on another field, fields of the wrong shape, and
 * hc_part_own_rows on a field that is neither whole nor a slab are each
 * refused with HC_ERR_INVALID_ARG, and the split run goes on: the exchange
 * after them fills every ghost row, and the gathered u is the whole one.
 * Neighbours on the serial backend exchange through host staging, cpu
 * devices device to device. */
static void test_part_api_misuse(void) {
  static const char *specs[] = {"cpu:0,cpu:1,cpu:2", "serial:0,cpu:1", "cpu:3,serial:0,cpu:1,cpu:0"};
  const int64_t rows = 40, cols = 8;
  for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
    if (strstr(specs[i], "serial") && !th_device("serial")) continue;
    hc_context_t *ctx = th_context();
    hc_job_t *job = NULL;
    hc_devset_t *set = NULL;
    TH_ASSERT_OK(hc_job_create(ctx, "parts", &job));
    TH_ASSERT_OK(hc_devset_parse(ctx, specs[i], "parts", &set));
    TH_ASSERT_OK(hc_job_run_split(job, set, 0));
    CU_ASSERT(hc_devset_parts(set) >= 2);
    double refused = 0, ghosts = 0;
    hc_job_metric_find(job, "refused", &refused);
    hc_job_metric_find(job, "ghosts", &ghosts);
    CU_ASSERT_EQUAL(refused, 1);
    CU_ASSERT_EQUAL(ghosts, 1);
    hc_field_t *u = hc_job_output(job, "u");
    CU_ASSERT_FATAL(u != NULL && hc_field_bytes(u) == (size_t)(rows * cols) * sizeof(double));
    double *h = malloc(hc_field_bytes(u));
    TH_ASSERT_OK(hc_field_read(u, h));
    int same = 1;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) same &= h[r * cols + c] == 1000.0 * (double)r + (double)c;
    CU_ASSERT(same);
    free(h);
    hc_job_destroy(job);
    hc_devset_destroy(set);
  }
}

/* With a tolerance the parts stop together, after as many sweeps as the
 * whole run. */
static void test_jacobi_tolerance(void) {
  const char *params = "dim=2 n=17 tol=1e-6 iters=100000 check=10 dtype=f64";
  result_t whole = run_on("cpu:0", NULL, "jacobi", params, "u");
  result_t part = run_on("cpu:0,cpu:1,cpu:2", NULL, "jacobi", params, "u");
  CU_ASSERT_EQUAL(whole.st, HC_OK);
  CU_ASSERT_EQUAL(part.st, HC_OK);
  CU_ASSERT(whole.sweeps > 10);
  CU_ASSERT_EQUAL(part.sweeps, whole.sweeps);
  CU_ASSERT(part.u && whole.u && !memcmp(part.u, whole.u, whole.bytes));
  result_free(&whole);
  result_free(&part);
}

/* The serial test backend runs the same host kernels: mixed with cpu parts
 * the result is still bit for bit. */
static void test_jacobi_serial_mixed(void) {
  if (!th_device("serial")) return;
  const char *params = "dim=3 n=17 iters=20 dtype=f64";
  result_t whole = run_on("cpu:0", NULL, "jacobi", params, "u");
  result_t part = run_on("serial:0,cpu:1,cpu:2", "1,1,2", "jacobi", params, "u");
  CU_ASSERT_EQUAL(part.st, HC_OK);
  CU_ASSERT(part.u && whole.u && part.bytes == whole.bytes && !memcmp(part.u, whole.u, whole.bytes));
  result_free(&whole);
  result_free(&part);
}

/* Runs jacobi on spec and returns u on the host (NULL on failure) with
 * each part's halo bytes and, of them, those copied device to device. */
static void *jacobi_halos(const char *spec, const char *params, size_t *bytes, uint64_t *halo, uint64_t *peer,
                          uint32_t nparts) {
  hc_context_t *ctx = th_context();
  hc_job_t *job = NULL;
  hc_devset_t *set = NULL;
  void *u = NULL;
  TH_ASSERT_OK(hc_job_create(ctx, "jacobi", &job));
  char buf[256];
  snprintf(buf, sizeof buf, "%s", params);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) TH_ASSERT_OK(hc_job_set_kv(job, tok));
  TH_ASSERT_OK(hc_devset_parse(ctx, spec, "jacobi", &set));
  if (hc_job_run_split(job, set, 0) == HC_OK && hc_devset_parts(set) == nparts) {
    for (uint32_t i = 0; i < nparts; i++) {
      hc_part_stats_t s = {.size = sizeof s};
      TH_ASSERT_OK(hc_devset_part_stats(set, i, &s));
      halo[i] = s.halo_bytes;
      peer[i] = s.halo_peer_bytes;
    }
    hc_field_t *f = hc_job_output(job, "u");
    *bytes = hc_field_bytes(f);
    u = malloc(*bytes);
    if (u && hc_field_read(f, u) != HC_OK) {
      free(u);
      u = NULL;
    }
  }
  hc_job_destroy(job);
  hc_devset_destroy(set);
  return u;
}

/* Neighbours on one backend with a peer copy (two cpu devices) exchange
 * halos device to device; a neighbour on another backend (serial) through
 * host staging; HC_SPLIT_PEER=0 stages all. Each way, u is bit for bit. */
static void test_halo_paths(void) {
  if (!th_device("serial")) return;
  const char *spec = "serial:0,cpu:0,cpu:1,cpu:2", *params = "dim=3 n=21x17x19 iters=23 dtype=f64";
  result_t whole = run_on("cpu:0", NULL, "jacobi", params, "u");
  CU_ASSERT_EQUAL_FATAL(whole.st, HC_OK);
  uint64_t halo[4], peer[4];
  size_t bytes = 0;
  void *u = jacobi_halos(spec, params, &bytes, halo, peer, 4);
  CU_ASSERT_FATAL(u != NULL);
  CU_ASSERT(bytes == whole.bytes && !memcmp(u, whole.u, bytes));
  /* Two ghost rows each side after every two sweeps, and after the last,
   * odd one: 24 rows over 23 sweeps. */
  const uint64_t row = 17 * 19 * 8, sweeps = 24;
  CU_ASSERT_EQUAL(halo[0], row * sweeps);
  CU_ASSERT_EQUAL(peer[0], 0); /* serial:0 | cpu:0: staged */
  CU_ASSERT_EQUAL(halo[1], 2 * row * sweeps);
  CU_ASSERT_EQUAL(peer[1], row * sweeps);     /* staged below, peer above */
  CU_ASSERT_EQUAL(peer[2], 2 * row * sweeps); /* cpu:0 | cpu:1 | cpu:2 */
  CU_ASSERT_EQUAL(peer[3], row * sweeps);
  free(u);
  setenv("HC_SPLIT_PEER", "0", 1);
  u = jacobi_halos(spec, params, &bytes, halo, peer, 4);
  unsetenv("HC_SPLIT_PEER");
  CU_ASSERT_FATAL(u != NULL);
  CU_ASSERT(bytes == whole.bytes && !memcmp(u, whole.u, bytes));
  CU_ASSERT_EQUAL(peer[0] + peer[1] + peer[2] + peer[3], 0);
  CU_ASSERT_EQUAL(halo[2], 2 * row * sweeps);
  free(u);
  /* Exchanges in two halves (the overlap) move the same rows the same ways. */
  setenv("HC_SPLIT_OVERLAP", "on", 1);
  u = jacobi_halos(spec, params, &bytes, halo, peer, 4);
  unsetenv("HC_SPLIT_OVERLAP");
  CU_ASSERT_FATAL(u != NULL);
  CU_ASSERT(bytes == whole.bytes && !memcmp(u, whole.u, bytes));
  CU_ASSERT_EQUAL(halo[1], 2 * row * sweeps);
  CU_ASSERT_EQUAL(peer[1], row * sweeps);
  CU_ASSERT_EQUAL(peer[2], 2 * row * sweeps);
  free(u);
  result_free(&whole);
}

/* Max |a - b| over n values of dtype f64. */
static double max_diff(const double *a, const double *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}

/* A cpu part with a PoCL part: the split result differs from each
 * single-device result by no more than those differ from each other, plus
 * a few ulps of the field (the bound this test states). */
static void test_jacobi_mixed_backends(void) {
  if (!th_device("opencl:0")) return;
  /* with two ghost rows, and with six (each part sweeps rows of the other
   * backend's six times between exchanges) */
  static const char *const params[] = {"dim=3 n=25 iters=60 dtype=f64",
                                       "dim=3 n=25 iters=60 dtype=f64 sweeps_per_exchange=6"};
  for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
    result_t c = run_on("cpu:0", NULL, "jacobi", params[p], "u");
    result_t o = run_on("opencl:0", NULL, "jacobi", params[p], "u");
    result_t s = run_on("cpu:0,opencl:0", NULL, "jacobi", params[p], "u");
    CU_ASSERT_EQUAL_FATAL(s.st, HC_OK);
    CU_ASSERT_FATAL(c.u && o.u && s.u && c.bytes == s.bytes && o.bytes == s.bytes);
    size_t n = c.bytes / sizeof(double);
    double between = max_diff(c.u, o.u, n), bound = between + 8 * 2.2e-16;
    CU_ASSERT(max_diff(s.u, c.u, n) <= bound);
    CU_ASSERT(max_diff(s.u, o.u, n) <= bound);
    result_free(&c);
    result_free(&o);
    result_free(&s);
  }
}

/* nbody's outputs compared below: positions, velocities, energy trace. */
static const char *const nbody_ports[] = {"pos", "vel", "energy"};
enum { NB_POS, NB_VEL, NB_ENERGY, NB_PORTS };

static void nbody_free(result_t *r) {
  for (int i = 0; i < NB_PORTS; i++) result_free(&r[i]);
}

/* Output i of an nbody run as doubles (f32 widened). */
static double nb_at(const result_t *r, int f64, size_t i) {
  return f64 ? ((const double *)r->u)[i] : (double)((const float *)r->u)[i];
}

/* nbody on 1-4 cpu parts with equal and uneven shares: each part steps its
 * slice of the bodies from all positions in the one-device order, so the
 * positions and velocities are the whole run's bit for bit (f64 and f32,
 * Euler and Boris, soft and guarded self-interaction, slices smaller than
 * a host group); the energy trace, summed over the parts in another order,
 * agrees to rounding. */
static void test_nbody_bit_identical(void) {
  static const struct {
    const char *params;
    int f64;
  } cases[] = {
      {"n=300 steps=6 dtype=f64 diagnostics=true", 1},
      {"n=517 steps=5 dtype=f32 B=0,0,3 init=plummer diagnostics=true", 0},
      {"n=97 steps=4 dtype=f64 eps=0 init=two-stream diagnostics=true", 1},
  };
  static const struct {
    const char *spec, *weights;
    uint32_t parts; /* 0: one device runs whole */
  } sets[] = {
      {"cpu:0", NULL, 0},
      {"cpu:0,cpu:1", NULL, 2},
      {"cpu:1,cpu:0", "0.8,0.2", 2},
      {"cpu:0,cpu:1,cpu:2", "1,5,2", 3},
      {"cpu:0,cpu:1,cpu:2,cpu:3", NULL, 4},
      {"cpu:3,cpu:2,cpu:1,cpu:0", "0.01,0.1,0.1,0.79", 4},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    result_t whole[NB_PORTS];
    run_ports("cpu:0", NULL, "nbody", cases[c].params, nbody_ports, NB_PORTS, whole);
    CU_ASSERT_EQUAL_FATAL(whole[0].st, HC_OK);
    CU_ASSERT_FATAL(whole[NB_POS].u && whole[NB_VEL].u && whole[NB_ENERGY].u);
    size_t steps = whole[NB_ENERGY].bytes / (cases[c].f64 ? 8 : 4);
    double emax = 0;
    for (size_t k = 0; k < steps; k++) emax = fmax(emax, fabs(nb_at(&whole[NB_ENERGY], cases[c].f64, k)));
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
      result_t part[NB_PORTS];
      run_ports(sets[s].spec, sets[s].weights, "nbody", cases[c].params, nbody_ports, NB_PORTS, part);
      CU_ASSERT_EQUAL(part[0].st, HC_OK);
      CU_ASSERT_EQUAL(part[0].parts, sets[s].parts);
      for (int p = NB_POS; p <= NB_VEL; p++) {
        int same = part[p].u && part[p].bytes == whole[p].bytes && !memcmp(part[p].u, whole[p].u, whole[p].bytes);
        if (!same)
          fprintf(stderr, "nbody %s on %s (%s): %s differs\n", cases[c].params, sets[s].spec, sets[s].weights,
                  nbody_ports[p]);
        CU_ASSERT(same);
      }
      CU_ASSERT_FATAL(part[NB_ENERGY].u && part[NB_ENERGY].bytes == whole[NB_ENERGY].bytes);
      /* f64: sums of the same terms in another order; f32: the trace's
       * rounding to float as well. */
      double tol = (cases[c].f64 ? 1e-13 : 2.4e-7) * emax;
      for (size_t k = 0; k < steps; k++)
        CU_ASSERT(fabs(nb_at(&part[NB_ENERGY], cases[c].f64, k) - nb_at(&whole[NB_ENERGY], cases[c].f64, k)) <= tol);
      nbody_free(part);
    }
    nbody_free(whole);
  }
}

/* nbody with a cpu part and a PoCL part (f64 and f32): the split run mixes
 * the two devices' arithmetic, body by body; its positions and velocities
 * differ from each single-device result by no more than those differ from
 * each other plus 16 ulps of the largest value (the bound this test
 * states, after 4 steps: differences grow with the steps). */
static void test_nbody_mixed_backends(void) {
  if (!th_device("opencl:0")) return;
  static const struct {
    const char *params;
    int f64;
  } cases[] = {{"n=700 steps=4 dtype=f64 B=0,1,0", 1}, {"n=700 steps=4 dtype=f32", 0}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    result_t c[NB_PORTS], o[NB_PORTS], s[NB_PORTS];
    run_ports("cpu:0", NULL, "nbody", cases[k].params, nbody_ports, NB_PORTS, c);
    run_ports("opencl:0", NULL, "nbody", cases[k].params, nbody_ports, NB_PORTS, o);
    run_ports("cpu:0,opencl:0", "0.3,0.7", "nbody", cases[k].params, nbody_ports, NB_PORTS, s);
    CU_ASSERT_EQUAL_FATAL(s[0].st, HC_OK);
    CU_ASSERT_EQUAL(s[0].parts, 2);
    for (int p = NB_POS; p <= NB_VEL; p++) {
      CU_ASSERT_FATAL(c[p].u && o[p].u && s[p].u && c[p].bytes == s[p].bytes && o[p].bytes == s[p].bytes);
      size_t n = c[p].bytes / (cases[k].f64 ? 8 : 4);
      double between = 0, sc = 0, so = 0, big = 0;
      for (size_t i = 0; i < n; i++) {
        double vc = nb_at(&c[p], cases[k].f64, i), vo = nb_at(&o[p], cases[k].f64, i),
               vs = nb_at(&s[p], cases[k].f64, i);
        between = fmax(between, fabs(vc - vo));
        sc = fmax(sc, fabs(vs - vc));
        so = fmax(so, fabs(vs - vo));
        big = fmax(big, fabs(vc));
      }
      double bound = between + 16 * (cases[k].f64 ? 2.2e-16 : 1.2e-7) * big;
      if (!(sc <= bound && so <= bound))
        fprintf(stderr, "nbody %s %s: split-cpu %.3g, split-pocl %.3g, cpu-pocl %.3g\n", cases[k].params,
                nbody_ports[p], sc, so, between);
      CU_ASSERT(sc <= bound);
      CU_ASSERT(so <= bound);
    }
    nbody_free(c);
    nbody_free(o);
    nbody_free(s);
  }
}

/* nbody's own usage errors and what it does not split. */
static void test_nbody_sets(void) {
  th_expect_usage_error("nbody", "cpu:0,cpu:1,cpu:2,cpu:3", "n=3", "more parts than rows");
  hc_context_t *ctx = th_context();
  hc_job_t *job = NULL;
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_job_create(ctx, "nbody", &job));
  TH_ASSERT_OK(hc_job_set_kv(job, "n=64"));
  TH_ASSERT_OK(hc_job_set_kv(job, "steps=1"));
  TH_ASSERT_OK(hc_job_set_kv(job, "variant=serial-reference"));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "nbody", &set));
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  CU_ASSERT_EQUAL(hc_devset_parts(set), 0);
  CU_ASSERT(strstr(hc_job_notes(job), "ran on cpu:0 alone: variant=serial-reference") != NULL);
  hc_job_destroy(job);
  hc_devset_destroy(set);
}

/* The integral of one job with its metrics. */
static double integral_on(const char *spec, const char *weights, const char *params) {
  result_t r = run_on(spec, weights, "simpson", params, "integral");
  CU_ASSERT_EQUAL(r.st, HC_OK);
  double v = r.u && r.bytes == sizeof(double) ? *(double *)r.u : NAN;
  result_free(&r);
  return v;
}

/* simpson in slabs of panel pairs: within 1e-15 relative of one device, odd
 * and even sample counts, 1-3-D, cpu parts and a PoCL part. */
static void test_simpson_split(void) {
  static const char *params[] = {
      "func=sinprod n=129x65x33 dtype=f64",
      "func=gauss n=130x64x31 dtype=f64 variant=onthefly",
      "func=poly n=10x9 dtype=f64",
      "func=sinprod n=100001 dtype=f64 variant=precomputed",
  };
  static const struct {
    const char *spec, *weights;
  } sets[] = {{"cpu:0,cpu:1", NULL},
              {"cpu:2,cpu:0,cpu:1", "3,1,1"},
              {"cpu:0,cpu:1,cpu:2,cpu:3", NULL},
              {"cpu:0,serial:0", NULL},
              {"cpu:0,opencl:0", "0.7,0.3"}};
  for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
    double whole = integral_on("cpu:0", NULL, params[p]);
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
      if (strstr(sets[s].spec, "opencl") && !th_device("opencl:0")) continue;
      double v = integral_on(sets[s].spec, sets[s].weights, params[p]);
      if (!(fabs(v - whole) <= 1e-15 * fabs(whole)))
        fprintf(stderr, "simpson %s on %s: %.17g against %.17g\n", params[p], sets[s].spec, v, whole);
      CU_ASSERT(fabs(v - whole) <= 1e-15 * fabs(whole));
    }
  }
}

/* A workload that does not split runs whole on the set's first device and
 * says why. */
/* multigrid on 1-4 cpu parts (and the serial test backend mixed in) with
 * equal and uneven shares: each part updates its rows of every level that
 * leaves each part 3 rows or more, exchanging two rows on each side after
 * every assignment, and the coarser levels run whole on every part; u
 * (and the residual field) are the whole run's bit for bit, with both
 * smoothers, in 2-D and 3-D, f32 and f64; the residual metric agrees
 * to rounding (its sum runs over the parts). */
static void test_multigrid_bit_identical(void) {
  static const char *const params[] = {
      "dim=2 n=65 tol=0 cycles=4 dtype=f64",
      "dim=3 n=17 tol=0 cycles=3 smoother=jacobi dtype=f32 f=gauss",
      "dim=2 n=33 tol=0 cycles=3 smoother=jacobi dtype=f64 residual=true",
  };
  static const char *const sets[][2] = {{"cpu:0,cpu:1", NULL},
                                        {"cpu:0,cpu:1,cpu:2", "1,3,2"},
                                        {"cpu:3,cpu:2,cpu:1,cpu:0", "2,1,1,3"},
                                        {"serial:0,cpu:1,cpu:2", "1,1,2"}};
  static const char *const ports[] = {"u", "residual"};
  for (size_t k = 0; k < sizeof params / sizeof *params; k++) {
    const size_t nports = strstr(params[k], "residual=true") ? 2 : 1;
    result_t whole[2], part[2];
    run_ports("cpu:0", NULL, "multigrid", params[k], ports, nports, whole);
    CU_ASSERT_EQUAL_FATAL(whole[0].st, HC_OK);
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
      if (!strncmp(sets[i][0], "serial", 6) && !th_device("serial")) continue;
      run_ports(sets[i][0], sets[i][1], "multigrid", params[k], ports, nports, part);
      CU_ASSERT_EQUAL(part[0].st, HC_OK);
      CU_ASSERT(part[0].parts >= 2);
      for (size_t p = 0; p < nports; p++) {
        const int same = part[p].u && whole[p].u && part[p].bytes == whole[p].bytes &&
                         !memcmp(part[p].u, whole[p].u, whole[p].bytes);
        CU_ASSERT(same);
        if (!same)
          fprintf(stderr, "multigrid %s on %s: %s differs from one device's\n", params[k], sets[i][0], ports[p]);
        free(part[p].u);
      }
      CU_ASSERT(fabs(part[0].residual - whole[0].residual) <= 1e-12 * whole[0].residual);
    }
    for (size_t p = 0; p < nports; p++) free(whole[p].u);
  }
}

/* Part 0's halo bytes of multigrid on two cpu parts (0 on failure). */
static uint64_t multigrid_halo_bytes(const char *params) {
  hc_context_t *ctx = th_context();
  hc_job_t *job = NULL;
  hc_devset_t *set = NULL;
  uint64_t bytes = 0;
  TH_ASSERT_OK(hc_job_create(ctx, "multigrid", &job));
  char buf[256];
  snprintf(buf, sizeof buf, "%s", params);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) TH_ASSERT_OK(hc_job_set_kv(job, tok));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "multigrid", &set));
  hc_part_stats_t s = {.size = sizeof s};
  if (hc_job_run_split(job, set, 0) == HC_OK && hc_devset_part_stats(set, 0, &s) == HC_OK) bytes = s.halo_bytes;
  hc_job_destroy(job);
  hc_devset_destroy(set);
  return bytes;
}

/* A part's figures count its workload's timed region only (from its
 * hc_device_timer_begin): multigrid's untimed warm-up cycle exchanges as
 * much as a timed one, yet three cycles report three times one cycle's
 * halo bytes. */
static void test_part_figures_count_the_timed_region(void) {
  setenv("HC_SPLIT_REBALANCE", "off", 1); /* the rows stay: each cycle exchanges alike */
  const uint64_t one = multigrid_halo_bytes("dim=2 n=65 tol=0 cycles=1"),
                 three = multigrid_halo_bytes("dim=2 n=65 tol=0 cycles=3");
  unsetenv("HC_SPLIT_REBALANCE");
  CU_ASSERT(one > 0);
  CU_ASSERT_EQUAL(three, 3 * one);
  if (three != 3 * one)
    fprintf(stderr, "halo bytes: 1 cycle %llu, 3 cycles %llu\n", (unsigned long long)one, (unsigned long long)three);
}

/* Levels not worth splitting run whole on every part. Unset,
 * HC_MG_SPLIT_MIN_POINTS leaves it to a measurement (the note says what
 * it measured); as a count of points, on a 257 x 257 grid, 32768 splits
 * the finest level only over two and four parts (it spares a part 129 x
 * 257 and 193 x 257 points, the next level 65 x 129 and 97 x 129), 40000
 * none over two. Whatever is split, u is the whole run's bit for bit, also
 * when rows move between the cycles (the levels split stay as decided). */
static void test_multigrid_coarse_levels_whole(void) {
  const char *params = "dim=2 n=257 tol=0 cycles=2 dtype=f64";
  static const struct {
    const char *set, *equal, *min_points, *says; /* equal: weights giving equal planned rows */
  } cases[] = {
      {"cpu:0,cpu:1", "1,1", NULL, "levels by slabs, the coarser ones whole on every part (measured, us per"},
      {"cpu:0,cpu:1,cpu:2", "1,1,1", NULL, "levels by slabs, the coarser ones whole on every part (measured, us per"},
      {"cpu:0,cpu:1", "1,1", "32768", "split: 1 of the 8 levels"},
      {"cpu:0,cpu:1,cpu:2,cpu:3", "1,1,1,1", "32768", "split: 1 of the 8 levels"},
      {"cpu:0,cpu:1", "1,1", "40000", "split: 0 of the 8 levels"},
      {"cpu:0,cpu:1", "1,1", "1", "split: 6 of the 8 levels"}};
  result_t whole = run_on("cpu:0", NULL, "multigrid", params, "u");
  CU_ASSERT_EQUAL_FATAL(whole.st, HC_OK);
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    if (cases[k].min_points)
      setenv("HC_MG_SPLIT_MIN_POINTS", cases[k].min_points, 1);
    else
      unsetenv("HC_MG_SPLIT_MIN_POINTS");
    setenv("HC_SPLIT_REBALANCE", "always", 1); /* rows move after every cycle */
    result_t r = run_on(cases[k].set, cases[k].equal, "multigrid", params, "u");
    unsetenv("HC_SPLIT_REBALANCE");
    CU_ASSERT_EQUAL(r.st, HC_OK);
    CU_ASSERT(r.u && r.bytes == whole.bytes && !memcmp(r.u, whole.u, whole.bytes));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.notes, cases[k].says));
    if (!strstr(r.notes, cases[k].says)) fprintf(stderr, "%s: notes\n%s\n", cases[k].set, r.notes);
    result_free(&r);
  }
  setenv("HC_MG_SPLIT_MIN_POINTS", "1", 1); /* as setup() left it */
  result_free(&whole);
}

/* multigrid over a cpu part and a PoCL part: the two compile the same
 * expressions differently, and the coarse levels each part runs whole
 * differ between them the same way, so u differs from each single-device u
 * by no more than those two differ from each other plus 16 ulps of the
 * largest |u|. */
static void test_multigrid_mixed_backends(void) {
  if (!th_device("opencl:0")) return;
  static const struct {
    const char *params;
    int f64;
  } cases[] = {{"dim=2 n=65 tol=0 cycles=4 dtype=f64", 1}, {"dim=3 n=17 tol=0 cycles=3 dtype=f32 f=gauss", 0}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    result_t c = run_on("cpu:0", NULL, "multigrid", cases[k].params, "u");
    result_t o = run_on("opencl:0", NULL, "multigrid", cases[k].params, "u");
    result_t s = run_on("opencl:0,cpu:0", "0.3,0.7", "multigrid", cases[k].params, "u");
    CU_ASSERT_EQUAL_FATAL(s.st, HC_OK);
    CU_ASSERT_EQUAL(s.parts, 2);
    CU_ASSERT_FATAL(c.u && o.u && s.u && c.bytes == s.bytes && o.bytes == s.bytes);
    const size_t n = c.bytes / (cases[k].f64 ? 8 : 4);
    double between = 0, sc = 0, so = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
      const double vc = nb_at(&c, cases[k].f64, i), vo = nb_at(&o, cases[k].f64, i), vs = nb_at(&s, cases[k].f64, i);
      between = fmax(between, fabs(vc - vo));
      sc = fmax(sc, fabs(vs - vc));
      so = fmax(so, fabs(vs - vo));
      big = fmax(big, fabs(vc));
    }
    const double bound = between + 16 * (cases[k].f64 ? 2.2e-16 : 1.2e-7) * big;
    if (!(sc <= bound && so <= bound))
      fprintf(stderr, "multigrid %s: split-cpu %.3g, split-pocl %.3g, cpu-pocl %.3g\n", cases[k].params, sc, so,
              between);
    CU_ASSERT(sc <= bound);
    CU_ASSERT(so <= bound);
    result_free(&c);
    result_free(&o);
    result_free(&s);
  }
}

/* What multigrid does not split: a grid whose axes differ runs on the first
 * device; more parts than 3 rows each is a usage error. */
static void test_multigrid_not_split(void) {
  result_t r = run_on("cpu:0,cpu:1", NULL, "multigrid", "dim=2 n=33x65 tol=0 cycles=2", "u");
  CU_ASSERT_EQUAL(r.st, HC_OK);
  CU_ASSERT_EQUAL(r.parts, 0);
  result_free(&r);
  th_expect_usage_error("multigrid", "cpu:0,cpu:1,cpu:2,cpu:3", "n=9", "more parts than rows");
}

static void test_not_split(void) {
  hc_context_t *ctx = th_context();
  hc_job_t *job = NULL;
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_job_create(ctx, "bpm", &job));
  TH_ASSERT_OK(hc_job_set_kv(job, "dim=2"));
  TH_ASSERT_OK(hc_job_set_kv(job, "n=31"));
  TH_ASSERT_OK(hc_job_set_kv(job, "steps=4"));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:1,cpu:0", "bpm", &set));
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  CU_ASSERT_EQUAL(hc_devset_parts(set), 0);
  CU_ASSERT(strstr(hc_job_notes(job), "ran on cpu:1 alone: bpm does not split") != NULL);
  CU_ASSERT(strstr(hc_devset_plan(set), "transpose") != NULL);
  hc_field_t *out = hc_job_output(job, "field");
  CU_ASSERT(out && hc_field_device(out) == hc_devset_device(set, 0));
  hc_job_destroy(job);
  hc_devset_destroy(set);
}

/* hcrun --json of a split run: a row per part with its share and times,
 * the rows covering axis 0 once; whether it beat the best single device
 * is "not measured" until each device has run these parameters alone,
 * then "yes" or "no" against the fastest one's time from the history. */
static void test_hcrun_report(void) {
  char cmd[8192], *out = malloc(1 << 20), err[4096], params[64];
  /* parameters of its own (the cache outlives the test) */
  snprintf(params, sizeof params, "dim=2 n=41 iters=%d", 30 + (int)(getpid() % 4000));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --device=cpu:0,cpu:1,cpu:2 --split=2,1,1 --workload=jacobi %s --json",
           th_build_dir(), params);
  int rc = th_run(cmd, out, 1 << 20, err, sizeof err);
  CU_ASSERT_EQUAL(rc, 0);
  json_error_t je;
  json_t *doc = json_loads(out, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  json_t *split = json_object_get(doc, "split");
  CU_ASSERT_PTR_NOT_NULL(split);
  json_t *parts = json_object_get(split, "parts");
  CU_ASSERT_EQUAL(json_array_size(parts), 3);
  json_int_t next = 0;
  for (size_t i = 0; i < json_array_size(parts); i++) {
    json_t *p = json_array_get(parts, i);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "lo")), next);
    next = json_integer_value(json_object_get(p, "hi"));
    CU_ASSERT(json_real_value(json_object_get(p, "compute_s")) > 0);
    CU_ASSERT(json_integer_value(json_object_get(p, "halo_bytes")) > 0);
    CU_ASSERT(json_object_get(p, "idle_s") != NULL);
  }
  CU_ASSERT_EQUAL(next, 41);
  CU_ASSERT(fabs(json_real_value(json_object_get(json_array_get(parts, 0), "weight")) - 0.5) < 1e-12);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(split, "beats_best_single")), "not measured");
  const char *why = json_string_value(json_object_get(json_object_get(split, "best_single"), "why"));
  CU_ASSERT(why && strstr(why, "alone"));
  json_decref(doc);
  for (int d = 0; d < 3; d++) {
    snprintf(cmd, sizeof cmd, "%s/bin/hcrun --device=cpu:%d --workload=jacobi %s", th_build_dir(), d, params);
    CU_ASSERT_EQUAL(th_run(cmd, out, 1 << 20, err, sizeof err), 0);
  }
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --device=cpu:0,cpu:1,cpu:2 --split=equal --workload=jacobi %s --json",
           th_build_dir(), params);
  CU_ASSERT_EQUAL(th_run(cmd, out, 1 << 20, err, sizeof err), 0);
  doc = json_loads(out, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  split = json_object_get(doc, "split");
  json_t *best = json_object_get(split, "best_single");
  const char *beats = json_string_value(json_object_get(split, "beats_best_single")),
             *dev = json_string_value(json_object_get(best, "device"));
  const double predicted = json_real_value(json_object_get(best, "predicted_s")),
               compute = json_real_value(json_object_get(best, "compute_s"));
  CU_ASSERT(dev && !strncmp(dev, "cpu:", 4));
  CU_ASSERT(predicted > 0 && compute > 0);
  CU_ASSERT(beats && !strcmp(beats, compute < predicted ? "yes" : "no"));
  CU_ASSERT(fabs(compute - json_real_value(json_object_get(json_object_get(doc, "times"), "compute_s"))) < 1e-9);
  json_decref(doc);
  free(out);
}

/* hcrun's shares come from the history by default: a run over a set
 * without figures for its devices first times a short run of the
 * configuration on each of them where the workload declares one (jacobi:
 * a few sweeps), else splits by their declared peaks (equally where some
 * device declares none: simpson, a single pass), and says why; once each
 * device has one (here from runs alone, which every single-device run
 * leaves), the run takes the history's (some device may then be left out,
 * with a note); --split=equal keeps equal shares whatever the history
 * says. */
static void test_hcrun_default_shares(void) {
  char cmd[8192], out[1 << 14], err[4096], cache[1200];
  snprintf(cache, sizeof cache, "%s/default-shares", th_tmpdir());
  const char *run = "env HC_CACHE_DIR=%s %s/bin/hcrun --device=%s %s --workload=jacobi dim=2 n=513 iters=50";
  snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), "cpu:0,cpu:1", "");
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "shares from short calibrating runs (predicted"));
  /* cpu devices declare their fp32 peaks */
  snprintf(cmd, sizeof cmd, "env HC_CACHE_DIR=%s %s/bin/hcrun --device=cpu:0,cpu:1 --workload=simpson n=65x9x9", cache,
           th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "shares from the devices' peak rates: no history yet"));
  for (int d = 0; d < 2; d++) {
    snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), d ? "cpu:1" : "cpu:0", "");
    CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  }
  snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), "cpu:0,cpu:1", "");
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "shares from the history"));
  snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), "cpu:0,cpu:1", "--split=equal");
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 parts along axis 0 of 513 rows (halo 2), equal shares, "));
  CU_ASSERT_PTR_NULL(strstr(out, "shares from the history"));
  snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), "cpu:0,cpu:1", "--split=even");
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "auto or equal"));
}

/* hcrun --json's compute time, its split's part count (0: none) and
 * whether a note contains `note`; -1 when the run failed. */
static double json_run(const char *cmd, int *parts, const char *note, int *noted) {
  char *out = malloc(1 << 20), err[4096];
  double t = -1;
  *parts = 0;
  *noted = 0;
  if (out && th_run(cmd, out, 1 << 20, err, sizeof err) == 0) {
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je), *n;
    size_t i;
    if (doc) {
      t = json_real_value(json_object_get(json_object_get(doc, "times"), "compute_s"));
      *parts = (int)json_array_size(json_object_get(json_object_get(doc, "split"), "parts"));
      json_array_foreach(json_object_get(doc, "notes"), i, n) {
        const char *text = json_string_value(n);
        if (text && strstr(text, note)) *noted = 1;
      }
      json_decref(doc);
    }
  }
  free(out);
  return t;
}

static int cmp_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The plan checks its model against what ran: a split that took longer
 * than the fastest of its devices alone (both in the history) gives way to
 * that device alone. The expectation follows from the runs' own times:
 * each device alone once, then the split six times in equal shares (more
 * part samples than the history keeps a key: they must not push out the
 * runs alone), then the default plan. */
static void test_history_measured_split(void) {
  char cmd[8192], cache[1200];
  snprintf(cache, sizeof cache, "%s/measured-split", th_tmpdir());
  const char *run = "env HC_CACHE_DIR=%s %s/bin/hcrun --device=%s --workload=jacobi dim=2 n=65 iters=20 --json";
  int parts, noted;
  double alone = 1e30, split[6];
  for (int d = 0; d < 2; d++) {
    snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), d ? "cpu:1" : "cpu:0");
    const double t = json_run(cmd, &parts, "", &noted);
    CU_ASSERT_FATAL(t > 0);
    alone = fmin(alone, t);
  }
  snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), "cpu:0,cpu:1 --split=equal");
  for (int k = 0; k < 6; k++) {
    split[k] = json_run(cmd, &parts, "", &noted);
    CU_ASSERT_FATAL(split[k] > 0 && parts == 2);
  }
  qsort(split + 1, 5, sizeof *split, cmp_doubles); /* the history keeps the newest 5 */
  snprintf(cmd, sizeof cmd, run, cache, th_build_dir(), "cpu:0,cpu:1");
  CU_ASSERT(json_run(cmd, &parts, "measured: ", &noted) > 0);
  if (split[3] > alone) {
    CU_ASSERT_EQUAL(parts, 0); /* the faster device alone, by this rule or by the model's */
  } else {
    CU_ASSERT(!noted);
  }
}

/* --device=all takes each piece of hardware once: the cpu backend's
 * devices (cores of their own), not PoCL's CPU device or the serial test
 * backend on the same cores, and a GPU that two backends show through the
 * first of them. An explicit set on shared hardware runs, with a note. */
static void test_device_set_all(void) {
  hc_context_t *ctx = th_context();
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_devset_parse(ctx, "all", "jacobi", &set));
  int cpus = 0;
  const char *cpu_backend = NULL;
  for (uint32_t i = 0; i < hc_devset_count(set); i++) {
    const hc_device_t *a = hc_devset_device(set, i);
    const hc_device_info_t *ia = hc_device_info(a);
    if (ia->type == HC_DEVICE_CPU) {
      const char *name = hc_device_name(a);
      size_t len = strcspn(name, ":");
      if (!cpu_backend) cpu_backend = name;
      CU_ASSERT(!strncmp(name, cpu_backend, len) && cpu_backend[len] == ':'); /* one backend's */
      cpus += !strncmp(name, "cpu:", 4);
    }
    const char *pa = hc_device_pci_bus_id(ctx, hc_device_index(a));
    CU_ASSERT_FATAL(pa != NULL);
    for (uint32_t k = 0; k < i; k++)
      CU_ASSERT(!pa[0] || strcmp(pa, hc_device_pci_bus_id(ctx, hc_device_index(hc_devset_device(set, k)))));
  }
  CU_ASSERT_EQUAL(cpus, 4); /* HC_CPU_DEVICES=4 */
  hc_devset_destroy(set);
  if (!th_device("opencl:0") || hc_device_info(th_device("opencl:0"))->type != HC_DEVICE_CPU) return;
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(ctx, "jacobi", &job));
  TH_ASSERT_OK(hc_job_set_kv(job, "n=33"));
  TH_ASSERT_OK(hc_job_set_kv(job, "iters=4"));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,opencl:0", "jacobi", &set));
  TH_ASSERT_OK(hc_devset_parse_weights(set, "equal"));
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  const char *notes = hc_job_notes(job);
  CU_ASSERT(notes && strstr(notes, "cpu:0 and opencl:0 both run on the host's cores"));
  hc_job_destroy(job);
  hc_devset_destroy(set);
}

static void test_bad_sets(void) {
  hc_context_t *ctx = th_context();
  hc_devset_t *set = NULL;
  CU_ASSERT_EQUAL(hc_devset_parse(ctx, "cpu:0,cpu:0", "jacobi", &set), HC_ERR_PARAM);
  CU_ASSERT(strstr(hc_last_error(), "listed twice") != NULL);
  CU_ASSERT_EQUAL(hc_devset_parse(ctx, "cpu:0,cpu:9", "jacobi", &set), HC_ERR_PARAM);
  CU_ASSERT(strstr(hc_last_error(), "unknown device 'cpu:9'") != NULL);
  CU_ASSERT_EQUAL(hc_devset_parse(ctx, "cpu:0,,cpu:1", "jacobi", &set), HC_ERR_PARAM);
  CU_ASSERT_PTR_NULL(set);
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0, cpu:1", "jacobi", &set));
  CU_ASSERT_EQUAL(hc_devset_count(set), 2);
  CU_ASSERT_EQUAL(hc_devset_parse_weights(set, "1,2,3"), HC_ERR_PARAM);
  CU_ASSERT_EQUAL(hc_devset_parse_weights(set, "1,-2"), HC_ERR_PARAM);
  CU_ASSERT_EQUAL(hc_devset_parse_weights(set, "1,x"), HC_ERR_PARAM);
  hc_devset_destroy(set);
  /* More parts than rows: n=5 cannot give 4 parts two rows each. */
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(ctx, "jacobi", &job));
  TH_ASSERT_OK(hc_job_set_kv(job, "n=5"));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1,cpu:2,cpu:3", "jacobi", &set));
  CU_ASSERT_EQUAL(hc_job_check_split(job, set), HC_ERR_PARAM);
  CU_ASSERT(strstr(hc_last_error(), "more parts than rows") != NULL);
  CU_ASSERT_EQUAL(hc_job_run_split(job, set, 0), HC_ERR_PARAM);
  hc_devset_destroy(set);
  hc_job_destroy(job);
  /* The same through hcrun: exit 2 with the reason, nothing written. */
  th_expect_usage_error("jacobi", "cpu:0,cpu:0", "n=17", "listed twice");
  th_expect_usage_error("jacobi", "cpu:0,cpu:7", "n=17", "unknown device 'cpu:7'");
  th_expect_usage_error("jacobi", "cpu:0,cpu:1,cpu:2,cpu:3", "n=5", "more parts than rows");
  /* each part owns at least its ghost rows: 4 x 8 rows needed */
  th_expect_usage_error("jacobi", "cpu:0,cpu:1,cpu:2,cpu:3", "dim=2 n=30 sweeps_per_exchange=8", "at least 8");
  th_expect_usage_error("jacobi", "cpu:0,cpu:1", "n=17 --split=1", "2 devices");
  th_expect_usage_error("jacobi", "cpu:0", "n=17 --split=1,1", "needs a device set");
}

/* A workload that cannot run on a device of the set is refused before
 * anything runs: jacobi dtype=f64 with a device that lacks fp64, where this
 * machine has one. */
static void test_cannot_run(void) {
  hc_context_t *ctx = th_context();
  uint32_t n = hc_device_count(ctx);
  for (uint32_t i = 0; i < n; i++) {
    hc_device_info_t in;
    if (hc_device_query(ctx, i, &in) != HC_OK || in.fp64) continue;
    char spec[96];
    snprintf(spec, sizeof spec, "cpu:0,%s", hc_device_id(ctx, i));
    hc_devset_t *set = NULL;
    hc_job_t *job = NULL;
    TH_ASSERT_OK(hc_job_create(ctx, "jacobi", &job));
    TH_ASSERT_OK(hc_job_set_kv(job, "dtype=f64"));
    CU_ASSERT_EQUAL(hc_devset_parse(ctx, spec, "jacobi", &set), HC_OK);
    CU_ASSERT_EQUAL(hc_job_check_split(job, set), HC_ERR_PARAM);
    CU_ASSERT(strstr(hc_last_error(), "needs fp64") != NULL);
    hc_devset_destroy(set);
    hc_job_destroy(job);
    return;
  }
  th_skip("no device without fp64 here (the cannot-run check of a set)");
}

/* A part whose device fails mid-run: an error naming the device, the other
 * parts stop at their next exchange, nothing stays allocated. */
static void test_part_fails(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  hc_context_t *ctx = th_context();
  uint64_t live0 = hc_context_live_buffers(ctx);
  long flive0 = faulty_live();
  hc_job_t *job = NULL;
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_job_create(ctx, "jacobi", &job));
  TH_ASSERT_OK(hc_job_set_kv(job, "dim=2"));
  TH_ASSERT_OK(hc_job_set_kv(job, "n=33"));
  TH_ASSERT_OK(hc_job_set_kv(job, "iters=200"));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,faulty:0,cpu:1", "jacobi", &set));
  faulty_arm("launch", 40); /* well into the sweeps */
  hc_status_t st = hc_job_run_split(job, set, 0);
  faulty_arm(NULL, 0);
  CU_ASSERT_NOT_EQUAL(st, HC_OK);
  CU_ASSERT(strstr(hc_last_error(), "faulty:0") != NULL);
  if (!strstr(hc_last_error(), "faulty:0")) fprintf(stderr, "message: %s\n", hc_last_error());
  CU_ASSERT_PTR_NULL(hc_job_output(job, "u"));
  CU_ASSERT_EQUAL(hc_devset_parts(set), 0);
  hc_job_destroy(job);
  hc_devset_destroy(set);
  CU_ASSERT_EQUAL(hc_context_live_buffers(ctx), live0);
  CU_ASSERT_EQUAL(faulty_live(), flive0);
}

/* --split=auto: the first run over a set has no history; it times a
 * short run of the configuration on each device (the workload's
 * calibrating run) and splits by those rates; it records each part's
 * rate and exchange overhead, and the next run plans from them. A device whose rate
 * does not pay for the exchanges (faulty:0, slowed to 3 ms a launch) is
 * left out with a note, and the run is still
 * the single-device run, bit for bit, with its outputs on the set's first
 * device. */
static void test_history_leaves_out_a_slow_device(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  hc_context_t *ctx = th_context();
  /* parameters no other run used (the cache outlives the test): a history
   * of its own */
  char params[96];
  snprintf(params, sizeof params, "dim=2 n=61x45 iters=%d dtype=f64 f=gauss", 40 + (int)(getpid() % 4000));
  result_t whole = run_on("cpu:0", NULL, "jacobi", params, "u");
  CU_ASSERT_EQUAL_FATAL(whole.st, HC_OK);
  faulty_slow(0.003);
  for (int run = 0; run < 2; run++) {
    hc_job_t *job = NULL;
    hc_devset_t *set = NULL;
    TH_ASSERT_OK(hc_job_create(ctx, "jacobi", &job));
    char buf[128];
    snprintf(buf, sizeof buf, "%s", params);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) TH_ASSERT_OK(hc_job_set_kv(job, tok));
    TH_ASSERT_OK(hc_devset_parse(ctx, "faulty:0,cpu:0", "jacobi", &set));
    TH_ASSERT_OK(hc_devset_parse_weights(set, "auto"));
    TH_ASSERT_OK(hc_job_run_split(job, set, 0));
    const char *plan = hc_devset_plan(set);
    if (run == 0) {
      /* each device's short run first: faulty:0's slowness shows in the
       * first split's shares */
      CU_ASSERT_EQUAL(hc_devset_parts(set), 2);
      CU_ASSERT_PTR_NOT_NULL(strstr(plan, "short calibrating runs"));
      if (!strstr(plan, "short calibrating runs")) fprintf(stderr, "plan: %s\n", plan);
      hc_part_stats_t slow = {.size = sizeof slow};
      TH_ASSERT_OK(hc_devset_part_stats(set, 0, &slow));
      CU_ASSERT_STRING_EQUAL(slow.device, "faulty:0");
      CU_ASSERT(slow.weight < 0.25);
      if (!(slow.weight < 0.25)) fprintf(stderr, "faulty:0's share %.3f: %s\n", slow.weight, plan);
    } else {
      CU_ASSERT_EQUAL(hc_devset_parts(set), 0); /* it ran whole */
      CU_ASSERT_PTR_NOT_NULL(strstr(plan, "ran on cpu:0 alone"));
      /* by the rates, or (where cpu:0 runs slowly, as under valgrind) by
       * the first split's measured time against cpu:0's alone */
      const char *why = strstr(plan, "faulty:0 left out") ? "faulty:0 left out" : "measured: ";
      CU_ASSERT_PTR_NOT_NULL(strstr(plan, why));
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_job_notes(job), why));
    }
    if (run == 1 && !strstr(plan, "faulty:0 left out") && !strstr(plan, "measured: "))
      fprintf(stderr, "plan: %s\n", plan);
    hc_field_t *u = hc_job_output(job, "u");
    CU_ASSERT_PTR_NOT_NULL(u);
    if (u) {
      CU_ASSERT_PTR_EQUAL(hc_field_device(u), hc_devset_device(set, 0));
      void *host = malloc(hc_field_bytes(u));
      CU_ASSERT(host && hc_field_read(u, host) == HC_OK && hc_field_bytes(u) == whole.bytes &&
                !memcmp(host, whole.u, whole.bytes));
      free(host);
    }
    hc_job_destroy(job);
    hc_devset_destroy(set);
  }
  faulty_slow(0);
  result_free(&whole);
}

/* A calibrating run that fails (faulty:0's first launch) fails the split
 * run before any part starts, naming the device; nothing stays allocated,
 * and the same run then calibrates and runs. */
static void test_calibration_fails(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  hc_context_t *ctx = th_context();
  const uint64_t live0 = hc_context_live_buffers(ctx);
  const long flive0 = faulty_live();
  char params[96];
  snprintf(params, sizeof params, "dim=2 n=37 iters=%d", 4000 + (int)(getpid() % 4000));
  for (int armed = 1; armed >= 0; armed--) {
    hc_job_t *job = th_job(ctx, "jacobi", params);
    hc_devset_t *set = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,faulty:0", "jacobi", &set));
    TH_ASSERT_OK(hc_devset_parse_weights(set, "auto"));
    faulty_arm(armed ? "launch" : NULL, 1);
    hc_status_t st = hc_job_run_split(job, set, HC_RUN_VERIFY);
    faulty_arm(NULL, 0);
    if (armed) {
      CU_ASSERT_NOT_EQUAL(st, HC_OK);
      CU_ASSERT_PTR_NOT_NULL(
          strstr(hc_last_error(), "calibrating run of 'jacobi' (iters=10 tol=0 check=10) on faulty:0"));
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "injected"));
      CU_ASSERT_EQUAL(hc_devset_parts(set), 0);
      CU_ASSERT_PTR_NULL(hc_job_output(job, "u"));
    } else {
      TH_ASSERT_OK(st);
      CU_ASSERT_EQUAL(hc_devset_parts(set), 2);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_devset_plan(set), "short calibrating runs"));
      /* what they cost is in the notes */
      CU_ASSERT_PTR_NOT_NULL(
          strstr(hc_job_notes(job), "calibrating runs (iters=10 tol=0 check=10) before the split: "));
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_job_notes(job), "faulty:0 "));
    }
    hc_job_destroy(job);
    hc_devset_destroy(set);
  }
  CU_ASSERT_EQUAL(hc_context_live_buffers(ctx), live0);
  CU_ASSERT_EQUAL(faulty_live(), flive0);
}

/* A workload's calibrating run with a parameter it does not take (the
 * test workload "parts", calibrate=...) is the workload's fault: the run
 * fails with HC_ERR_PLUGIN naming the parameter, before any part starts;
 * one it takes runs, and the split plans from it. */
static void test_calibration_refused(void) {
  hc_context_t *ctx = th_context();
  const uint64_t live0 = hc_context_live_buffers(ctx);
  const char *calibrations[] = {"nosuch=1", "rows=20"};
  for (int i = 0; i < 2; i++) {
    char params[128];
    snprintf(params, sizeof params, "cols=%d calibrate=%s", 100 + (int)(getpid() % 4000), calibrations[i]);
    hc_job_t *job = th_job(ctx, "parts", params);
    hc_devset_t *set = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "parts", &set));
    TH_ASSERT_OK(hc_devset_parse_weights(set, "auto"));
    hc_status_t st = hc_job_run_split(job, set, 0);
    if (i == 0) {
      CU_ASSERT_EQUAL(st, HC_ERR_PLUGIN);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "workload 'parts' declares a calibrating run with 'nosuch=1'"));
      CU_ASSERT_EQUAL(hc_devset_parts(set), 0);
    } else {
      TH_ASSERT_OK(st);
      CU_ASSERT_EQUAL(hc_devset_parts(set), 2);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_devset_plan(set), "shares from short calibrating runs"));
    }
    hc_job_destroy(job);
    hc_devset_destroy(set);
  }
  CU_ASSERT_EQUAL(hc_context_live_buffers(ctx), live0);
}

/* Runs job on the device spec alone and records it in the history. */
static void run_recorded(hc_context_t *ctx, hc_job_t *job, const char *spec) {
  uint32_t idx;
  hc_device_t *dev = NULL;
  TH_ASSERT_OK(hc_device_find(ctx, spec, &idx));
  TH_ASSERT_OK(hc_device_open(ctx, idx, &dev));
  TH_ASSERT_OK(hc_job_run(job, dev, 0));
  hc_job_record_run(job, dev);
  hc_device_close(dev);
}

/* --device=auto from the history (hc_job_find_device). The faulty devices
 * say they are GPUs here, so the rule picks faulty:0, slowed to 5 ms a
 * launch: it is the answer until it has a figure (its run is the
 * calibration), and while it is the only device with one; once cpu:0 has
 * run the same configuration faster, cpu:0 is. A workload that keeps no
 * history gets the rule's device. */
static hc_context_t *faulty_gpu_context(void) {
  setenv("HC_FAULTY_GPU", "1", 1);
  hc_context_t *ctx = NULL;
  hc_status_t st = hc_context_create(NULL, &ctx);
  /* (backends start when devices are first counted, and read it then) */
  if (st == HC_OK) (void)hc_device_count(ctx);
  unsetenv("HC_FAULTY_GPU");
  return st == HC_OK ? ctx : NULL;
}

/* A field of the job's output u on the host (NULL if none). */
static void *output_u(hc_job_t *job, size_t *bytes) {
  hc_field_t *u = hc_job_output(job, "u");
  void *host = u ? malloc(hc_field_bytes(u)) : NULL;
  if (host && hc_field_read(u, host) != HC_OK) {
    free(host);
    host = NULL;
  }
  *bytes = u ? hc_field_bytes(u) : 0;
  return host;
}

/* A split with a part on a GPU (faulty:0, saying it is one) leaves a core
 * to the thread that drives it: cpu:0 (3 threads here) runs its part on
 * 2 (and reports 2 compute units meanwhile, which the workloads divide
 * their work by), says so in a note, and gives the one-device field; cpu:0 then runs
 * alone on all of its threads again (each launch waits for every worker
 * it uses: one left asleep would hang it). HC_SPLIT_DRIVER_CORES=0 leaves
 * it all of them. */
static void test_driver_cores(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  setenv("HC_CPU_DEVICES", "1", 1);
  setenv("HC_CPU_THREADS", "3", 1);
  hc_context_t *ctx = faulty_gpu_context();
  setenv("HC_CPU_DEVICES", "4", 1);
  setenv("HC_CPU_THREADS", "4", 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
  const char *params = "dim=2 n=67x45 iters=40 dtype=f64 f=gauss";
  hc_job_t *alone = th_job(ctx, "jacobi", params);
  CU_ASSERT_PTR_NOT_NULL_FATAL(alone);
  uint32_t idx = 0;
  hc_device_t *cpu = NULL;
  TH_ASSERT_OK(hc_device_find(ctx, "cpu:0", &idx));
  TH_ASSERT_OK(hc_device_open(ctx, idx, &cpu));
  CU_ASSERT_EQUAL(hc_device_info(cpu)->compute_units, 3);
  TH_ASSERT_OK(hc_job_run(alone, cpu, 0));
  size_t bytes = 0;
  void *whole = output_u(alone, &bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(whole);
  for (int leave = 1; leave >= 0; leave--) {
    if (!leave) setenv("HC_SPLIT_DRIVER_CORES", "0", 1);
    hc_job_t *job = th_job(ctx, "jacobi", params);
    hc_devset_t *set = NULL;
    TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,faulty:0", "jacobi", &set));
    TH_ASSERT_OK(hc_devset_set_weights(set, (const double[]){3, 1}, 2));
    TH_ASSERT_OK(hc_job_run_split(job, set, 0));
    unsetenv("HC_SPLIT_DRIVER_CORES");
    CU_ASSERT_EQUAL(hc_devset_parts(set), 2);
    const char *note = strstr(hc_job_notes(job), "cpu:0 ran its part on 2 of its 3 threads");
    CU_ASSERT(leave ? note != NULL : note == NULL);
    size_t n = 0;
    void *split = output_u(job, &n);
    CU_ASSERT(split && n == bytes && !memcmp(split, whole, bytes));
    free(split);
    hc_job_destroy(job);
    hc_devset_destroy(set);
    /* all threads again */
    CU_ASSERT_EQUAL(hc_device_info(cpu)->compute_units, 3);
    TH_ASSERT_OK(hc_job_run(alone, cpu, 0));
    split = output_u(alone, &n);
    CU_ASSERT(split && n == bytes && !memcmp(split, whole, bytes));
    free(split);
  }
  free(whole);
  hc_job_destroy(alone);
  hc_device_close(cpu);
  hc_context_destroy(ctx);
}

static void test_auto_device_from_history(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  hc_context_t *ctx = faulty_gpu_context();
  CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
  char params[96], why[256];
  /* parameters of its own (the cache outlives the test): check= changes
   * nothing in a run without tol, the grid stays small, so that cpu:0 is
   * faster than faulty:0's 5 ms a launch even under a sanitizer */
  snprintf(params, sizeof params, "dim=2 n=61x45 iters=30 dtype=f64 check=%d", 1000 + (int)getpid());
  hc_job_t *job = th_job(ctx, "jacobi", params);
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  uint32_t idx = 0, faulty0 = 0, cpu0 = 0;
  TH_ASSERT_OK(hc_device_find(ctx, "faulty:0", &faulty0));
  TH_ASSERT_OK(hc_device_find(ctx, "cpu:0", &cpu0));
  TH_ASSERT_OK(hc_job_find_device(job, &idx, why, sizeof why));
  if (idx != faulty0) {
    th_skip("--device=auto's rule prefers a real GPU here to the faulty devices");
  } else {
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "faulty:0: no history yet"));
    faulty_slow(0.005);
    run_recorded(ctx, job, "faulty:0");
    faulty_slow(0);
    TH_ASSERT_OK(hc_job_find_device(job, &idx, why, sizeof why));
    CU_ASSERT_EQUAL(idx, faulty0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "1 device with a figure"));
    run_recorded(ctx, job, "cpu:0");
    TH_ASSERT_OK(hc_job_find_device(job, &idx, why, sizeof why));
    CU_ASSERT_EQUAL(idx, cpu0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "cpu:0: the fastest in the history"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "on faulty:0"));
    if (idx != cpu0) fprintf(stderr, "auto: %s\n", why);
    hc_job_t *bpm = th_job(ctx, "bpm", "");
    CU_ASSERT_PTR_NOT_NULL(bpm);
    if (bpm) {
      TH_ASSERT_OK(hc_job_find_device(bpm, &idx, why, sizeof why));
      CU_ASSERT_EQUAL(idx, faulty0);
      CU_ASSERT_PTR_NOT_NULL(strstr(why, "keeps no history"));
    }
    hc_job_destroy(bpm);
  }
  CU_ASSERT_EQUAL(hc_job_find_device(NULL, &idx, NULL, 0), HC_ERR_INVALID_ARG);
  hc_job_destroy(job);
  hc_context_destroy(ctx);
}

/* A part whose waits for the others fall before its workload's timed
 * compute (jacobi's first residual, a reduction before the sweeps, waits
 * for faulty:0's slow first launches) must not leave an absurd rate. Here
 * cpu:0's part waits 40 ms before its sweeps. Only its exchanges inside
 * the timed window count against its own work now: it leaves a rate from
 * that work, or none where that work is too small to measure against the
 * window (faulty:0, the only device with a figure, is then the answer).
 * A kept rate is bounded by the rule against unmeasurable samples (own
 * work above 0.1 % of a window of at least 3 of faulty:0's 20 ms sweeps);
 * the old fault gave rows over 1 µs. */
static void test_history_drops_unmeasurable_parts(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  hc_context_t *ctx = faulty_gpu_context();
  CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
  char params[96], why[256];
  snprintf(params, sizeof params, "dim=2 n=%dx33 iters=3 dtype=f64", 40 + (int)(getpid() % 4000));
  hc_job_t *job = th_job(ctx, "jacobi", params);
  hc_devset_t *set = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  TH_ASSERT_OK(hc_devset_parse(ctx, "faulty:0,cpu:0", "jacobi", &set));
  faulty_slow(0.02);
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  faulty_slow(0);
  hc_part_stats_t ps = {.size = sizeof ps};
  TH_ASSERT_OK(hc_devset_part_stats(set, 1, &ps));
  CU_ASSERT(ps.idle_s + ps.halo_s + ps.collective_s >= ps.compute_s); /* the case this test is about */
  uint32_t idx = 0, faulty0 = 0, cpu0 = 0;
  TH_ASSERT_OK(hc_device_find(ctx, "faulty:0", &faulty0));
  TH_ASSERT_OK(hc_device_find(ctx, "cpu:0", &cpu0));
  TH_ASSERT_OK(hc_job_find_device(job, &idx, why, sizeof why));
  const char *rate_at = strstr(why, "the fastest in the history (");
  double rate = 0;
  if (idx == faulty0) {
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "1 device with a figure"));
  } else if (idx == cpu0 && rate_at && sscanf(rate_at + strlen("the fastest in the history ("), "%lf", &rate) == 1) {
    const double rows = (double)(ps.hi - ps.lo);
    CU_ASSERT(rate > 0 && rate < rows / (0.001 * 3 * 0.02));
    if (!(rate < rows / (0.001 * 3 * 0.02))) fprintf(stderr, "auto: %s (cpu:0 part: %g rows)\n", why, rows);
  } else {
    th_skip("--device=auto's rule prefers a real GPU here to the faulty devices");
  }
  hc_devset_destroy(set);
  hc_job_destroy(job);
  hc_context_destroy(ctx);
}

static int setup(void) {
  /* multigrid: the test grids are small; split every level the slabs
   * allow, so that the exchanges run (by default levels this small run
   * whole on every part) */
  setenv("HC_MG_SPLIT_MIN_POINTS", "1", 1);
  setenv("HC_CPU_DEVICES", "4", 1);
  setenv("HC_CPU_THREADS", "4", 1);
  return faulty_setup();
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("split runs", setup, NULL);
  CU_ADD_TEST(s, test_cpu_devices);
  CU_ADD_TEST(s, test_host_alloc);
  CU_ADD_TEST(s, test_pipeline_stage_set);
  CU_ADD_TEST(s, test_device_set_all);
  CU_ADD_TEST(s, test_bad_sets);
  CU_ADD_TEST(s, test_cannot_run);
  CU_ADD_TEST(s, test_jacobi_bit_identical);
  CU_ADD_TEST(s, test_jacobi_overlap);
  CU_ADD_TEST(s, test_part_api_misuse);
  CU_ADD_TEST(s, test_jacobi_tolerance);
  CU_ADD_TEST(s, test_jacobi_serial_mixed);
  CU_ADD_TEST(s, test_halo_paths);
  CU_ADD_TEST(s, test_jacobi_mixed_backends);
  CU_ADD_TEST(s, test_simpson_split);
  CU_ADD_TEST(s, test_nbody_bit_identical);
  CU_ADD_TEST(s, test_nbody_mixed_backends);
  CU_ADD_TEST(s, test_nbody_sets);
  CU_ADD_TEST(s, test_multigrid_bit_identical);
  CU_ADD_TEST(s, test_multigrid_coarse_levels_whole);
  CU_ADD_TEST(s, test_part_figures_count_the_timed_region);
  CU_ADD_TEST(s, test_multigrid_mixed_backends);
  CU_ADD_TEST(s, test_multigrid_not_split);
  CU_ADD_TEST(s, test_not_split);
  CU_ADD_TEST(s, test_hcrun_report);
  CU_ADD_TEST(s, test_hcrun_default_shares);
  CU_ADD_TEST(s, test_history_measured_split);
  CU_ADD_TEST(s, test_part_fails);
  CU_ADD_TEST(s, test_history_leaves_out_a_slow_device);
  CU_ADD_TEST(s, test_calibration_fails);
  CU_ADD_TEST(s, test_calibration_refused);
  CU_ADD_TEST(s, test_driver_cores);
  CU_ADD_TEST(s, test_auto_device_from_history);
  CU_ADD_TEST(s, test_history_drops_unmeasurable_parts);
}

TH_MAIN(register_tests)
