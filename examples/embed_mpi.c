/* An MPI program that embeds hc: it starts MPI itself, hands hc its
 * communicator, and every rank runs its part of one jacobi solve on its
 * own device; rank 0 gets the whole field back.
 *
 *   mpicc embed_mpi.c $(pkg-config --cflags --libs hc) -lhc-mpi -o embed_mpi
 *   mpirun -n 4 ./embed_mpi
 */
#include <hc/mpi.h>
#include <hc/partition.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                                       \
  do {                                                                                                    \
    hc_status_t st_ = (call);                                                                             \
    if (st_ != HC_OK) {                                                                                   \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, #call, hc_status_name(st_), hc_last_error()); \
      goto done;                                                                                          \
    }                                                                                                     \
  } while (0)

int main(int argc, char **argv) {
  int provided, rank = 0, ranks = 1, rc = 1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  hc_devset_t *set = NULL;
  hc_job_t *job = NULL;
  hc_transport_t *t = NULL;
  CHECK(hc_mpi_transport_create(MPI_COMM_WORLD, &t));
  CHECK(hc_context_create(NULL, &ctx));
  uint32_t idx;
  CHECK(hc_device_find(ctx, "cpu", &idx));
  CHECK(hc_device_open(ctx, idx, &dev));
  CHECK(hc_devset_create(ctx, &dev, 1, &set));
  CHECK(hc_devset_set_transport(set, t));
  CHECK(hc_job_create(ctx, "jacobi", &job));
  CHECK(hc_job_set_kv(job, "dim=2"));
  CHECK(hc_job_set_kv(job, "n=129"));
  CHECK(hc_job_set_kv(job, "iters=500"));
  /* Every rank calls it: rank r runs part r; a failure anywhere is every
   * rank's status, with the failing rank's message. */
  CHECK(hc_job_run_split(job, set, 0));
  if (rank == 0) {
    hc_field_t *u = hc_job_output(job, "u");
    double residual = 0;
    const char *name, *unit;
    for (uint32_t i = 0; i < hc_job_metric_count(job); i++)
      if (hc_job_metric(job, i, &name, &residual, &unit) == HC_OK && !strcmp(name, "residual")) break;
    printf("embed_mpi: %d ranks, residual %.3g, u of %lld x %lld on rank 0\n", ranks, residual,
           (long long)hc_field_shape(u)[0], (long long)hc_field_shape(u)[1]);
  }
  rc = 0;
done:
  hc_job_destroy(job);
  hc_devset_destroy(set);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  /* After a failed run some collectives may be unfinished: then no rank
   * calls MPI_Finalize (it is collective), and the launcher ends the job
   * on the failure code. */
  int clean = hc_mpi_transport_clean(t);
  if (t && hc_mpi_agree(t, clean ? HC_OK : HC_ERR_DEVICE) != HC_OK) clean = 0;
  if (t) t->ops->destroy(t);
  if (clean) MPI_Finalize();
  return rc;
}
