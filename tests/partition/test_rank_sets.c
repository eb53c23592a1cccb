/* Processes of a transport's split that drive several devices each
 * (core/partition/rank_devices.c, transport_bridge.c), with threads of
 * this test as the processes (thread_transport.h), so that the sanitizers
 * see the bridge: every device of every process is a part of the whole
 * split, fields are the one-device run's bit for bit, reductions add in
 * part order, and a device that fails ends every process with its error. */
#include <hc/partition.h>
#include <hc/transport.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../reliability/faulty.h"
#include "harness.h"
#include "thread_transport.h"

/* Input fields f and u0 of a test's jobs (NULL: none). */
typedef struct {
  hc_field_t *f, *u0;
} inputs_t;

typedef struct {
  hc_transport_t *tr;
  const char *spec, *workload, *params, *port;
  inputs_t in;
  int auto_shares; /* shares from the history (else: equal over the processes, the peaks within) */
  hc_status_t st;
  char error[1024];
  void *out; /* process 0: the output, gathered */
  size_t bytes;
  double metric; /* the workload's metric `metric_name`, if any */
  const char *metric_name;
  uint32_t parts;
  hc_part_stats_t stats[16];
  char notes[2048];
} proc_t;

static hc_status_t set_inputs(hc_job_t *job, const inputs_t *in) {
  hc_status_t st = in->f ? hc_job_set_input(job, "f", in->f) : HC_OK;
  return st == HC_OK && in->u0 ? hc_job_set_input(job, "u0", in->u0) : st;
}

static void *proc_main(void *arg) {
  proc_t *p = arg;
  hc_context_t *ctx = th_context();
  hc_job_t *job = th_job(ctx, p->workload, p->params);
  hc_devset_t *set = NULL;
  p->st = job ? set_inputs(job, &p->in) : HC_ERR_PARAM;
  if (p->st == HC_OK) p->st = hc_devset_parse(ctx, p->spec, p->workload, &set);
  if (p->st == HC_OK) p->st = hc_devset_set_transport(set, p->tr);
  if (p->st == HC_OK && p->auto_shares) p->st = hc_devset_parse_weights(set, "auto");
  if (p->st == HC_OK) p->st = hc_job_run_split(job, set, 0);
  if (p->st == HC_OK) snprintf(p->notes, sizeof p->notes, "%s", hc_job_notes(job));
  if (p->st != HC_OK) snprintf(p->error, sizeof p->error, "%s", hc_last_error());
  hc_field_t *f = p->st == HC_OK && p->port ? hc_job_output(job, p->port) : NULL;
  if (f) {
    p->bytes = hc_field_bytes(f);
    p->out = malloc(p->bytes);
    if (hc_field_read(f, p->out) != HC_OK) p->st = HC_ERR_IO;
  }
  if (p->metric_name) hc_job_metric_find(job, p->metric_name, &p->metric);
  p->parts = hc_devset_parts(set);
  for (uint32_t i = 0; i < p->parts && i < 16; i++) {
    p->stats[i].size = sizeof p->stats[i];
    hc_devset_part_stats(set, i, &p->stats[i]);
  }
  hc_job_destroy(job);
  hc_devset_destroy(set);
  return NULL;
}

/* Runs workload over n processes, the k-th driving specs[k], with inputs
 * in (NULL: none). */
static void run_procs_with(uint32_t n, const char *const *specs, const char *workload, const char *params,
                           const char *port, int auto_shares, const inputs_t *in, proc_t *procs) {
  tt_t *tt = tt_create(n);
  pthread_t th[TT_MAX];
  for (uint32_t k = 0; k < n; k++) {
    memset(&procs[k], 0, sizeof procs[k]);
    procs[k] = (proc_t){.tr = &tt[k].base,
                        .spec = specs[k],
                        .workload = workload,
                        .params = params,
                        .port = port,
                        .in = in ? *in : (inputs_t){NULL, NULL},
                        .auto_shares = auto_shares};
    if (!strcmp(workload, "simpson")) procs[k].metric_name = "integral";
    pthread_create(&th[k], NULL, proc_main, &procs[k]);
  }
  for (uint32_t k = 0; k < n; k++) pthread_join(th[k], NULL);
  tt_free(tt);
}

static void run_procs(uint32_t n, const char *const *specs, const char *workload, const char *params, const char *port,
                      proc_t *procs) {
  run_procs_with(n, specs, workload, params, port, 0, NULL, procs);
}

static void run_procs_auto(uint32_t n, const char *const *specs, const char *workload, const char *params,
                           const char *port, proc_t *procs) {
  run_procs_with(n, specs, workload, params, port, 1, NULL, procs);
}

static void procs_free(proc_t *procs, uint32_t n) {
  for (uint32_t k = 0; k < n; k++) free(procs[k].out);
}

/* The one-device run's output port (or metric) on cpu:0, with inputs in
 * (NULL: none). */
static hc_status_t alone(const char *workload, const char *params, const inputs_t *in, const char *port, void **out,
                         size_t *bytes, double *metric) {
  hc_context_t *ctx = th_context();
  hc_job_t *job = th_job(ctx, workload, params);
  hc_device_t *dev = th_device("cpu:0");
  const inputs_t none = {NULL, NULL};
  hc_status_t st = job && dev ? set_inputs(job, in ? in : &none) : HC_ERR_PARAM;
  if (st == HC_OK) st = hc_job_run(job, dev, 0);
  hc_field_t *f = st == HC_OK && port ? hc_job_output(job, port) : NULL;
  *out = NULL;
  if (f) {
    *bytes = hc_field_bytes(f);
    *out = malloc(*bytes);
    st = hc_field_read(f, *out);
  }
  if (metric) hc_job_metric_find(job, "integral", metric);
  hc_job_destroy(job);
  return st;
}

static const struct {
  const char *workload, *params, *port;
} cases[] = {
    {"jacobi", "dim=2 n=67 iters=120 tol=0 dtype=f64", "u"},
    {"jacobi", "dim=3 n=21 iters=60 tol=0", "u"},
    {"nbody", "n=301 steps=3", "pos"},
    {"multigrid", "dim=2 n=33 cycles=2 tol=0 dtype=f64", "u"},
};

/* Two processes with two devices each, and one with one beside one with
 * three: every device is a part, numbered process by process, and the
 * field is the one-device run's. */
static void test_fields_bit_identical(void) {
  static const char *const even[] = {"cpu:0,cpu:1", "cpu:2,cpu:3"}, *const uneven[] = {"cpu:0", "cpu:1,cpu:2,cpu:3"};
  static const char *const *layouts[] = {even, uneven};
  static const char *const names[][4] = {{"rank 0 cpu:0", "rank 0 cpu:1", "rank 1 cpu:2", "rank 1 cpu:3"},
                                         {"rank 0 cpu:0", "rank 1 cpu:1", "rank 1 cpu:2", "rank 1 cpu:3"}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    void *want = NULL;
    size_t bytes = 0;
    TH_ASSERT_OK(alone(cases[c].workload, cases[c].params, NULL, cases[c].port, &want, &bytes, NULL));
    for (int l = 0; l < 2; l++) {
      proc_t procs[2];
      run_procs(2, layouts[l], cases[c].workload, cases[c].params, cases[c].port, procs);
      for (int k = 0; k < 2; k++) {
        if (procs[k].st != HC_OK)
          fprintf(stderr, "%s %s, process %d: %s\n", cases[c].workload, cases[c].params, k, procs[k].error);
        CU_ASSERT_EQUAL(procs[k].st, HC_OK);
        CU_ASSERT_EQUAL(procs[k].parts, 4);
      }
      CU_ASSERT(procs[0].out && procs[0].bytes == bytes && !memcmp(procs[0].out, want, bytes));
      int64_t next = 0;
      for (uint32_t i = 0; i < procs[0].parts && i < 4; i++) {
        const hc_part_stats_t *s = &procs[0].stats[i];
        CU_ASSERT_STRING_EQUAL(s->device, names[l][i]);
        CU_ASSERT_EQUAL(s->lo, next);
        next = s->hi;
        /* cpu rows go to the transport in place, between processes and
         * between one process's parts (nbody has no halo) */
        CU_ASSERT(s->halo_direct_bytes == s->halo_bytes &&
                  (s->halo_bytes > 0) == (strcmp(cases[c].workload, "nbody") != 0));
      }
      procs_free(procs, 2);
    }
    free(want);
  }
}

/* simpson's slab sums add in part order, across the processes too: the
 * same bits as one process's 4-part split, and within 1e-15 of one
 * device. */
static void test_reduction_in_part_order(void) {
  static const char *const specs[] = {"cpu:0,cpu:1", "cpu:2,cpu:3"};
  const char *params = "n=65x65x65 dtype=f64";
  proc_t procs[2];
  run_procs(2, specs, "simpson", params, NULL, procs);
  CU_ASSERT_EQUAL(procs[0].st, HC_OK);
  CU_ASSERT_EQUAL(procs[1].st, HC_OK);
  CU_ASSERT_EQUAL(procs[0].metric, procs[1].metric);
  hc_context_t *ctx = th_context();
  hc_job_t *job = th_job(ctx, "simpson", params);
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1,cpu:2,cpu:3", "simpson", &set));
  double w[4];
  for (uint32_t i = 0; i < 4; i++) w[i] = procs[0].stats[i].weight;
  TH_ASSERT_OK(hc_devset_set_weights(set, w, 4));
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  double in_process = 0, one = 0;
  hc_job_metric_find(job, "integral", &in_process);
  CU_ASSERT_EQUAL(in_process, procs[0].metric);
  void *none = NULL;
  size_t bytes = 0;
  TH_ASSERT_OK(alone("simpson", params, NULL, NULL, &none, &bytes, &one));
  CU_ASSERT(th_rel(procs[0].metric, one) <= 1e-15);
  hc_job_destroy(job);
  hc_devset_destroy(set);
  procs_free(procs, 2);
}

/* A device of process 1's set fails mid-run: both processes return its
 * error (the same status, the injected failure named, once decided), the
 * failing part named among all, nothing left allocated. */
static void test_device_failure_ends_every_process(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  hc_context_t *ctx = th_context();
  const uint64_t live0 = hc_context_live_buffers(ctx);
  const long flive0 = faulty_live();
  static const char *const specs[] = {"cpu:0,cpu:1", "cpu:2,faulty:0"};
  proc_t procs[2];
  faulty_arm("launch", 40);
  run_procs(2, specs, "jacobi", "dim=2 n=65 iters=2000 tol=0", "u", procs);
  faulty_arm(NULL, 0);
  for (int k = 0; k < 2; k++) {
    CU_ASSERT_EQUAL(procs[k].st, HC_ERR_LAUNCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(procs[k].error, "injected"));
    CU_ASSERT_PTR_NOT_NULL(strstr(procs[k].error, "part 3 of 4"));
    CU_ASSERT_PTR_NULL(procs[k].out);
  }
  procs_free(procs, 2);
  CU_ASSERT_EQUAL(hc_context_live_buffers(ctx), live0);
  CU_ASSERT_EQUAL(faulty_live(), flive0);
}

/* With auto shares a process's devices split its rows by rates: a device
 * without a figure first times a short run alone (a note says so), and
 * the history's plan may leave out one whose rate does not pay for its
 * exchanges. faulty:k, slowed to 3 ms a launch, runs beside cpu:k in each
 * process: it gets fewer of its process's rows than cpu:k from the first
 * run on, or is left out with a note; the field stays the one-device
 * run's. */
static void test_shares_from_the_history(void) {
  if (!th_device("faulty")) return;
  CU_ASSERT_FATAL(faulty_bind());
  static const char *const specs[] = {"cpu:0,faulty:0", "cpu:1,faulty:1"};
  char params[96];
  /* a configuration of its own (check= beyond iters changes nothing else) */
  snprintf(params, sizeof params, "dim=2 n=257 tol=0 iters=20 check=%ld",
           1000 + (long)((unsigned long)time(NULL) * 7919u + (unsigned long)getpid()) % 1000000000L);
  void *want = NULL;
  size_t bytes = 0;
  TH_ASSERT_OK(alone("jacobi", params, NULL, "u", &want, &bytes, NULL));
  faulty_slow(0.003);
  for (int run = 0; run < 2; run++) {
    proc_t procs[2];
    run_procs_auto(2, specs, "jacobi", params, "u", procs);
    for (int k = 0; k < 2; k++) {
      if (procs[k].st != HC_OK) fprintf(stderr, "run %d, process %d: %s\n", run, k, procs[k].error);
      CU_ASSERT_EQUAL(procs[k].st, HC_OK);
    }
    if (run == 0) CU_ASSERT_PTR_NOT_NULL(strstr(procs[0].notes, "calibrating runs before the split: cpu:0 "));
    /* each process decides from its own history */
    for (int k = 0; k < 2; k++) {
      char slow[32], cpu[32], left_out[32];
      snprintf(slow, sizeof slow, "rank %d faulty:%d", k, k);
      snprintf(cpu, sizeof cpu, "rank %d cpu:%d", k, k);
      snprintf(left_out, sizeof left_out, "faulty:%d left out", k);
      double w_slow = -1, w_cpu = -1;
      for (uint32_t i = 0; i < procs[0].parts && i < 16; i++) {
        if (!strcmp(procs[0].stats[i].device, slow)) w_slow = procs[0].stats[i].weight;
        if (!strcmp(procs[0].stats[i].device, cpu)) w_cpu = procs[0].stats[i].weight;
      }
      if (w_slow >= 0) {
        /* (an instrumented cpu part's rate says little: not compared there) */
        if (!th_slow_tool()) CU_ASSERT(w_slow < w_cpu);
      } else {
        CU_ASSERT_PTR_NOT_NULL(strstr(procs[k].notes, left_out));
      }
    }
    CU_ASSERT(procs[0].out && procs[0].bytes == bytes && !memcmp(procs[0].out, want, bytes));
    procs_free(procs, 2);
  }
  faulty_slow(0);
  free(want);
}

/* Input fields: each process's parts take their rows of jacobi's f and u0
 * (a process with one device too), multigrid's whole; the one-device
 * field bit for bit. */
static void test_input_fields(void) {
  static const char *const one_each[] = {"cpu:0", "cpu:1"}, *const two_each[] = {"cpu:0,cpu:1", "cpu:2,cpu:3"},
                           *const uneven[] = {"cpu:3", "cpu:0,cpu:1,cpu:2"};
  static const char *const *layouts[] = {one_each, two_each, uneven};
  static const uint32_t parts[] = {2, 4, 4};
  static const struct {
    const char *workload, *params;
    int64_t shape[2];
  } runs[] = {{"jacobi", "iters=50 tol=0 dtype=f64", {41, 37}}, {"multigrid", "cycles=2 tol=0", {33, 33}}};
  hc_device_t *cpu0 = th_device("cpu:0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu0);
  for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
    inputs_t in = {th_random_field(cpu0, HC_F32, 2, runs[r].shape, 11 + (unsigned)r),
                   th_random_field(cpu0, HC_F32, 2, runs[r].shape, 110 + (unsigned)r)};
    CU_ASSERT_FATAL(in.f && in.u0);
    void *want = NULL;
    size_t bytes = 0;
    TH_ASSERT_OK(alone(runs[r].workload, runs[r].params, &in, "u", &want, &bytes, NULL));
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
      proc_t procs[2];
      run_procs_with(2, layouts[l], runs[r].workload, runs[r].params, "u", 0, &in, procs);
      for (int k = 0; k < 2; k++) {
        if (procs[k].st != HC_OK) fprintf(stderr, "%s, process %d: %s\n", runs[r].workload, k, procs[k].error);
        CU_ASSERT_EQUAL(procs[k].st, HC_OK);
        CU_ASSERT_EQUAL(procs[k].parts, parts[l]);
      }
      CU_ASSERT(procs[0].out && procs[0].bytes == bytes && !memcmp(procs[0].out, want, bytes));
      procs_free(procs, 2);
    }
    free(want);
    hc_field_destroy(in.f);
    hc_field_destroy(in.u0);
  }
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
  CU_pSuite s = CU_add_suite("processes driving device sets", setup, NULL);
  CU_ADD_TEST(s, test_fields_bit_identical);
  CU_ADD_TEST(s, test_reduction_in_part_order);
  CU_ADD_TEST(s, test_device_failure_ends_every_process);
  CU_ADD_TEST(s, test_shares_from_the_history);
  CU_ADD_TEST(s, test_input_fields);
}

TH_MAIN(register_tests)
