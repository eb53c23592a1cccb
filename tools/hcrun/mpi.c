/* hcrun under an MPI launcher: loads libhc-mpi (dlopen, so that hcrun runs
 * without MPI too), starts MPI_COMM_WORLD and agrees on outcomes. */
#include "mpi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hc/config.h>
#include <jansson.h>
#include <hc/plugin.h>

#include "hcrun.h"
#define HC_MPI_WORLD_ONLY
#include <hc/mpi.h>

static struct {
  void *lib;
  hc_mpi_world_t world;
  hc_mpi_world_finish_fn finish;
  hc_mpi_agree_fn agree;
  hc_mpi_rank_device_fn rank_device;
  hc_mpi_share_cores_fn share_cores;
  int active;
} m;

/* The variables MPI launchers set in the processes they start (Open MPI,
 * PMIx, MPICH's Hydra and Slurm's PMI). */
static const char *launcher(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i])) return vars[i];
  return NULL;
}

/* Rank 0 says what HC_MPI_CUDA_AWARE=1's check found (an older libhc-mpi
 * has no check: nothing to say). */
static void cuda_note(void) {
  hc_mpi_transport_cuda_check_fn check = (hc_mpi_transport_cuda_check_fn)dlsym(m.lib, "hc_mpi_transport_cuda_check");
  const char *said = check ? check(m.world.transport) : "";
  if (m.world.rank != 0 || !said[0]) return;
  const hc_transport_ops_t *ops = m.world.transport->ops;
  const int in_place = ops->takes_memory && ops->takes_memory(m.world.transport, HC_NATIVE_CUDA);
  fprintf(stderr, "hcrun: HC_MPI_CUDA_AWARE=1: %s: halos in CUDA memory %s\n", said,
          in_place ? "go to MPI in place" : "are staged through host memory");
}

int hcrun_mpi_start(int *argc, char ***argv) {
  long long mode = 0; /* auto, on, off */
  if (hc_config_int("HC_MPI", &mode) != HC_OK) {
    fprintf(stderr, "hcrun: %s\n", hc_last_error());
    return HC_EXIT_USAGE;
  }
  const char *why = launcher();
  if (mode == 2 || (mode == 0 && !why)) return -1;
  m.lib = dlopen(HC_MPI_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  hc_mpi_world_start_fn start = m.lib ? (hc_mpi_world_start_fn)dlsym(m.lib, "hc_mpi_world_start") : NULL;
  m.finish = m.lib ? (hc_mpi_world_finish_fn)dlsym(m.lib, "hc_mpi_world_finish") : NULL;
  m.agree = m.lib ? (hc_mpi_agree_fn)dlsym(m.lib, "hc_mpi_agree") : NULL;
  m.rank_device = m.lib ? (hc_mpi_rank_device_fn)dlsym(m.lib, "hc_mpi_rank_device") : NULL;
  m.share_cores = m.lib ? (hc_mpi_share_cores_fn)dlsym(m.lib, "hc_mpi_share_cores") : NULL;
  if (!start || !m.finish || !m.agree || !m.rank_device || !m.share_cores) {
    fprintf(stderr,
            "hcrun: %s%s, but %s cannot be loaded (%s): build hc with MPI (libopenmpi-dev or libmpich-dev), "
            "or set HC_MPI=off to run each process alone\n",
            why ? "an MPI launcher started hcrun (" : "HC_MPI=on", why ? why : "", HC_MPI_LIBRARY,
            m.lib ? "its calls are missing" : dlerror());
    return HC_EXIT_UNAVAILABLE;
  }
  hc_status_t st = start(*argc, *argv, &m.world);
  if (st != HC_OK) {
    /* Every rank failed alike (the transport's start is agreed): rank 0 says it. */
    if (!m.world.ranks || m.world.rank == 0) fprintf(stderr, "hcrun: starting MPI: %s\n", hc_last_error());
    if (m.world.ranks) m.finish(&m.world);
    return hc_status_exit_code(st);
  }
  m.active = 1;
  if (m.world.rank != 0) hcrun_signals_quiet();
  cuda_note();
  *argc = m.world.argc;
  *argv = m.world.argv;
  return -1;
}

int hcrun_mpi_active(void) { return m.active; }
int hcrun_mpi_leads(void) { return !m.active || m.world.rank == 0; }
hc_transport_t *hcrun_mpi_transport(void) { return m.active ? m.world.transport : NULL; }
int hcrun_mpi_ranks(void) { return m.active ? m.world.ranks : 1; }
hc_status_t hcrun_mpi_rank_device(hc_context_t *ctx, const char *workload, uint32_t *index) {
  return m.active ? m.rank_device(ctx, workload, m.world.local_rank, index) : HC_OK;
}

hc_status_t hcrun_mpi_rank_set(hc_context_t *ctx, const char *workload, const char *spec, char *out, size_t n) {
  /* Only whole "auto" names change; everything else (empty names, a
   * trailing comma, unknown devices) is left for hc_devset_parse to
   * report as it does without MPI. */
  size_t len = 0;
  out[0] = '\0';
  for (const char *p = spec;; p++) {
    const size_t w = strcspn(p, ",");
    const char *name = p;
    int name_len = (int)w;
    if (w == 4 && !strncmp(p, "auto", 4)) {
      uint32_t idx = 0;
      hc_status_t st = hc_device_find_auto(ctx, workload, &idx);
      if (st == HC_OK) st = hcrun_mpi_rank_device(ctx, workload, &idx);
      if (st != HC_OK) return st;
      name = hc_device_id(ctx, idx);
      name_len = (int)strlen(name);
    }
    len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%.*s%s", name_len, name, p[w] ? "," : "");
    if (len >= n) return hc_error(HC_ERR_PARAM, "--device=%s: too long", spec);
    p += w;
    if (!*p) return HC_OK;
  }
}

hc_status_t hcrun_mpi_agree(hc_status_t st) { return m.active ? m.agree(m.world.transport, st) : st; }

void hcrun_mpi_share_cores(void) {
  if (!m.active) return;
  const char *set = NULL;
  long long pin = 0;
  /* The user's thread count is kept, and so are the cores (a bad value is
   * reported later, when the context reads it). */
  const int user = hc_config_str("HC_CPU_THREADS", &set) != HC_OK || set;
  if (hc_config_int("HC_MPI_PIN", &pin) != HC_OK) pin = 0;
  int threads = 0;
  char said[256];
  if (m.share_cores(&m.world, !user && pin, &threads, said, sizeof said) != HC_OK) {
    /* Not fatal: each rank keeps every core it may run on. */
    if (m.world.rank == 0) fprintf(stderr, "hcrun: sharing the node's cores: %s\n", hc_last_error());
    return;
  }
  long long log = 1; /* HC_LOG=info and up: rank 0 says what its node decided */
  if (m.world.rank == 0 && hc_config_int("HC_LOG", &log) == HC_OK && log >= 2) fprintf(stderr, "hcrun: %s\n", said);
  if (user || !threads) return;
  char v[32];
  snprintf(v, sizeof v, "%d", threads);
  setenv("HC_CPU_THREADS", v, 1);
}

/* "run.rank3.json" for "run.json" and rank 3. */
static void rank_file(const char *path, int rank, char *buf, size_t n) {
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
  snprintf(buf, n, "%.*s.rank%d%s", (int)stem, path, rank, path + stem);
}

const char *hcrun_mpi_rank_path(const char *path, char *buf, size_t n) {
  if (!m.active || m.world.rank == 0) return path;
  rank_file(path, m.world.rank, buf, n);
  return buf;
}

const char *hcrun_mpi_process_name(void) {
  static char name[64];
  if (!m.active) return NULL;
  snprintf(name, sizeof name, "hc rank %d (pid %d)", m.world.rank, (int)getpid());
  return name;
}

hc_status_t hcrun_mpi_join_traces(const char *path) {
  if (!m.active) return HC_OK;
  hc_status_t st = HC_OK;
  if (m.world.rank == 0) {
    json_error_t e;
    json_t *all = json_load_file(path, 0, &e);
    json_t *events = json_object_get(all, "traceEvents");
    if (!json_is_array(events)) st = hc_error(HC_ERR_IO, "%s: cannot be read back to join the ranks' traces", path);
    for (int r = 1; r < m.world.ranks && st == HC_OK; r++) {
      char rp[4200];
      rank_file(path, r, rp, sizeof rp);
      json_t *one = json_load_file(rp, 0, &e);
      json_t *more = json_object_get(one, "traceEvents");
      if (!json_is_array(more))
        st = hc_error(HC_ERR_IO,
                      "%s: rank %d's trace cannot be read (%s): on nodes without a shared file system "
                      "each rank's file stays where it was written",
                      rp, r, e.text);
      else
        json_array_extend(events, more);
      json_decref(one);
      if (st == HC_OK) remove(rp);
    }
    if (st == HC_OK && json_dump_file(all, path, JSON_COMPACT) != 0)
      st = hc_error(HC_ERR_IO, "%s: cannot write the joined trace", path);
    json_decref(all);
  }
  return hcrun_mpi_agree(st);
}

int hcrun_mpi_finish(int code) {
  if (!m.active) return code;
  m.active = 0;
  hcrun_signals_quiet();
  fflush(stdout);
  fflush(stderr);
  /* Unfinished operations (a rank failed mid-run): MPI is not finalised,
   * the process exits with the agreed code and the launcher ends the job. */
  m.finish(&m.world);
  return code;
}
