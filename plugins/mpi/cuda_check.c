/* HC_MPI_CUDA_AWARE=1: whether MPI may be handed CUDA device memory, found
 * by trying it. The compile-time and run-time queries of CUDA support
 * answer wrongly both ways, and an MPI that does not take device memory
 * usually crashes reading it; so the transfer runs in a child process
 * (hc-mpi-cuda-check, beside the plugins' directory as hc/) with a
 * timeout, started without the launcher's environment so that it runs
 * MPI on its own. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hc/config.h>
#include <hc/mpi.h>
#include <hc/plugin.h>

#include "cuda_check.h"

extern char **environ;

/* Seconds the check may take: MPI and the CUDA driver start in it. */
#define CUDA_CHECK_TIMEOUT_S 60

static int find_check(char *out, size_t n) {
  const char *env = NULL;
  hc_config_str("HC_MPI_CUDA_CHECK", &env);
  if (env) return snprintf(out, n, "%s", env) < (int)n && access(out, X_OK) == 0;
  Dl_info info;
  if (!dladdr((void *)hc_mpi_transport_create, &info) || !info.dli_fname) return 0;
  char lib[PATH_MAX];
  snprintf(lib, sizeof lib, "%s", info.dli_fname);
  char *slash = strrchr(lib, '/');
  if (!slash) return 0;
  *slash = '\0';
  return snprintf(out, n, "%s/hc/hc-mpi-cuda-check", lib) < (int)n && access(out, X_OK) == 0;
}

/* Variables an MPI launcher sets for the processes it starts (Open MPI's
 * own, its runtime's MCA settings, PMIx, PMI, MPICH's Hydra, Slurm): in
 * the child they would make MPI_Init join this job. The user's MCA and
 * MPICH settings (OMPI_MCA_btl, MPIR_CVAR_*) stay. */
static int launcher_var(const char *v) {
  static const char *const prefixes[] = {"OMPI_COMM_",
                                         "OMPI_UNIVERSE",
                                         "OMPI_APP_",
                                         "OMPI_NUM_",
                                         "OMPI_FIRST_",
                                         "OMPI_FILE_",
                                         "OMPI_MCA_orte_",
                                         "OMPI_MCA_ess",
                                         "OMPI_MCA_pmix",
                                         "OMPI_MCA_initial_wdir",
                                         "OMPI_MCA_shmem_RUNTIME",
                                         "PMIX_",
                                         "PMI_",
                                         "HYDI_",
                                         "HYDRA_",
                                         "MPI_LOCAL",
                                         "SLURM_"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(v, prefixes[i], strlen(prefixes[i]))) return 1;
  return 0;
}

/* Runs the check; its verdict (CUDA_CHECK_*) and, in why, what it said. */
static int run_check(const char *path, char *why, size_t n) {
  size_t nenv = 0;
  while (environ[nenv]) nenv++;
  char **env = calloc(nenv + 1, sizeof *env);
  if (!env) {
    snprintf(why, n, "cannot run %s: out of memory", path);
    return CUDA_CHECK_FAILED;
  }
  for (size_t i = 0, k = 0; i < nenv; i++)
    if (!launcher_var(environ[i])) env[k++] = environ[i];
  char *argv[] = {(char *)path, NULL}, *report = NULL;
  int status = 0, hung = 0;
  /* its verdict line on its standard output */
  hc_status_t st = hc_run_helper(argv, env, 1, CUDA_CHECK_TIMEOUT_S, &report, &status, &hung);
  free(env);
  if (st != HC_OK || hung) {
    free(report);
    if (st != HC_OK)
      snprintf(why, n, "%s", hc_last_error());
    else
      snprintf(why, n, "%s gave no answer within %d s", path, CUDA_CHECK_TIMEOUT_S);
    return CUDA_CHECK_FAILED;
  }
  char line[512];
  snprintf(line, sizeof line, "%s", report ? report : "");
  free(report);
  line[strcspn(line, "\n")] = '\0';
  if (WIFSIGNALED(status)) {
    snprintf(why, n, "the transfer crashed the check (signal %d, %s): this MPI does not take CUDA memory",
             WTERMSIG(status), strsignal(WTERMSIG(status)));
    return CUDA_CHECK_FAILED;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  snprintf(why, n, "%s", line[0] ? line : "the check said nothing");
  return code == 0 ? CUDA_CHECK_PASSED : code == 3 ? CUDA_CHECK_NOTHING : CUDA_CHECK_FAILED;
}

int hc__mpi_cuda_check(char *why, size_t n) {
  char path[PATH_MAX];
  if (!find_check(path, sizeof path)) {
    snprintf(why, n, "hc-mpi-cuda-check not found (beside libhc-mpi as hc/hc-mpi-cuda-check, or HC_MPI_CUDA_CHECK)");
    return CUDA_CHECK_FAILED;
  }
  return run_check(path, why, n);
}
