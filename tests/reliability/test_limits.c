/* Limits: parameters that need more memory than the device has are refused
 * before anything is allocated, with the required and the available sizes
 * in the message.
 *
 * Every workload of the tree is given such parameters on every device here
 * (cpu, opencl, cuda where present, and the fault-injecting test backend,
 * whose allocation counter shows that nothing reached the device): the run
 * returns HC_ERR_DEVICE_MEMORY, the message holds the required bytes
 * (more than the device has) and the device's memory in bytes, no output
 * is left, and the same job with ordinary parameters then runs. hcrun
 * turns the refusal into exit code 4 (hcrun_exit_code: a device error, not
 * a user-input one, since the same parameters fit a larger device), prints
 * the sizes and writes nothing to --output. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faulty.h"
#include "harness.h"

/* Per workload: parameters far beyond any device, ordinary ones, and the
 * port an ordinary run outputs. */
static const struct {
  const char *workload;
  const char *huge;
  const char *small;
  const char *output;
} cases[] = {
    {"saxpy", "n=1e10 dtype=f64", "n=1000", "y"},
    {"simpson", "n=10000x10000x1000 func=gauss", "n=17x17 func=sinprod", "integral"},
    {"jacobi", "dim=3 n=100000 iters=1", "dim=2 n=17 iters=20", "u"},
    {"nbody", "n=2147483647 steps=1 dtype=f64", "n=64 steps=2 dtype=f32", "pos"},
    {"bpm", "dim=3 n=100000x100000 steps=1", "dim=2 n=31 steps=4", "field"},
    {"multigrid", "dim=3 n=65537 cycles=1 host=eval", "dim=2 n=17 host=eval", "u"},
    {"gridexpr", "dim=3 n=100000 iters=1 host=eval", "dim=2 n=17 iters=2 host=eval", "h"},
};

static const char *const devices[] = {"cpu", "opencl", "cuda", "faulty:1"};

static hc_status_t set_all(hc_job_t *job, const char *params) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", params);
  char *save = NULL;
  for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
    hc_status_t st = hc_job_set_kv(job, kv);
    if (st != HC_OK) return st;
  }
  return HC_OK;
}

/* The numbers written "(N bytes)" in msg, in order; returns how many. */
static int byte_counts(const char *msg, unsigned long long *v, int cap) {
  int n = 0;
  for (const char *p = msg; n < cap && (p = strchr(p, '(')); p++) {
    unsigned long long x;
    char word[8];
    if (sscanf(p, "(%llu %7[a-z])", &x, word) == 2 && !strcmp(word, "bytes")) v[n++] = x;
  }
  return n;
}

static void test_refused_before_allocation(void) {
  int have_faulty = th_device("faulty") != NULL && faulty_bind();
  printf("\n");
  for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    int counted = !strncmp(devices[d], "faulty", 6) && have_faulty;
    uint64_t avail = hc_device_info(dev)->global_mem_bytes;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      hc_job_t *job = NULL;
      if (hc_job_create(th_context(), cases[c].workload, &job) != HC_OK) {
        char why[128];
        snprintf(why, sizeof why, "workload %s not built here", cases[c].workload);
        th_skip(why);
        continue;
      }
      uint32_t idx = 0;
      hc_device_find(th_context(), devices[d], &idx);
      if (!hc_workload_can_run(th_context(), cases[c].workload, idx, NULL)) {
        hc_job_destroy(job);
        continue;
      }
      TH_ASSERT_OK(set_all(job, cases[c].huge));
      if (counted) faulty_arm(NULL, 0);
      hc_status_t st = hc_job_run(job, dev, 0);
      const char *msg = hc_last_error();
      unsigned long long v[4] = {0};
      int nv = byte_counts(msg, v, 4);
      int ok = st == HC_ERR_DEVICE_MEMORY && nv >= 2 && v[0] > v[1] && v[1] == avail;
      long allocs = counted ? faulty_calls("alloc") : 0;
      printf("    %-9s %-9s %s%s: %.160s\n", devices[d], cases[c].workload, hc_status_name(st),
             counted ? (allocs ? " AFTER ALLOCATING" : ", nothing allocated") : "", msg);
      if (!ok)
        fprintf(stderr,
                "%s on %s with %s: want HC_ERR_DEVICE_MEMORY naming required and available bytes (%llu); "
                "got %s: %s\n",
                cases[c].workload, devices[d], cases[c].huge, (unsigned long long)avail, hc_status_name(st), msg);
      CU_ASSERT(ok);
      CU_ASSERT_EQUAL(allocs, 0);
      CU_ASSERT_PTR_NULL(hc_job_output(job, cases[c].output));
      /* The same job with ordinary parameters runs. */
      TH_ASSERT_OK(set_all(job, cases[c].small));
      st = hc_job_run(job, dev, 0);
      if (st != HC_OK) fprintf(stderr, "%s on %s: %s\n", cases[c].workload, devices[d], hc_last_error());
      CU_ASSERT_EQUAL(st, HC_OK);
      CU_ASSERT_PTR_NOT_NULL(hc_job_output(job, cases[c].output));
      hc_job_destroy(job);
    }
  }
}

/* hcrun: exit code 4, the sizes on stderr, nothing in --output. */
static void test_hcrun_refuses(void) {
  if (!th_device("cpu")) return;
  char out[4300], cmd[9000], err[8192];
  snprintf(out, sizeof out, "%s/limits-out", th_tmpdir());
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --workload=jacobi --device=cpu dim=3 n=100000 iters=1 --output=%s",
           th_build_dir(), out);
  int rc = th_run(cmd, NULL, 0, err, sizeof err);
  printf("\n    hcrun exit %d: %s", rc, err);
  CU_ASSERT_EQUAL(rc, 4);
  unsigned long long v[4];
  CU_ASSERT(byte_counts(err, v, 4) >= 2 && v[0] > v[1]);
  DIR *dp = opendir(out);
  int files = 0;
  for (struct dirent *e; dp && (e = readdir(dp));) files += e->d_name[0] != '.';
  if (dp) closedir(dp);
  CU_ASSERT_EQUAL(files, 0);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("limits", faulty_setup, NULL);
  CU_ADD_TEST(s, test_refused_before_allocation);
  CU_ADD_TEST(s, test_hcrun_refuses);
}

TH_MAIN(register_tests)
