/* hc over MPI (libhc-mpi): the parts of a split run as the ranks of an MPI
 * communicator, one part per rank ("owner computes"). libhc itself never
 * links MPI; this library does, and is built when SCons finds MPI.
 *
 * An application that runs MPI itself hands hc its communicator:
 *
 *   MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
 *   hc_transport_t *t;
 *   hc_mpi_transport_create(MPI_COMM_WORLD, &t);
 *   hc_devset_t *set;   // this rank's device
 *   hc_devset_create(ctx, &dev, 1, &set);
 *   hc_devset_set_transport(set, t);
 *   hc_job_run_split(job, set, 0);   // on every rank: rank r runs part r
 *   ...                              // outputs gathered on rank 0
 *   t->ops->destroy(t);
 *   MPI_Finalize();
 *
 * Every call of the transport is made by the thread that calls
 * hc_job_run_split (MPI_THREAD_FUNNELED is enough when that is the main
 * thread). Halo rows and collectives go through host memory: the core
 * stages device data, so any MPI works, CUDA-aware or not. Rows of a
 * device that shares host memory (cpu) go to MPI in place, and so do rows
 * in CUDA memory when HC_MPI_CUDA_AWARE=1 and a transfer in a child
 * process showed that MPI takes CUDA memory (hc_mpi_transport_cuda_check).
 *
 * A program that leaves MPI to hc (hcrun) uses the hc_mpi_world_* calls,
 * which need no MPI types: define HC_MPI_WORLD_ONLY before including this
 * header to leave <mpi.h> out, and find the calls with dlsym so that the
 * program runs without MPI too. */
#ifndef HC_MPI_H
#define HC_MPI_H

#include "hc/transport.h"

#ifndef HC_MPI_WORLD_ONLY
#include <mpi.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef HC_MPI_WORLD_ONLY
/* A transport over comm (duplicated: hc's messages never meet the
 * application's). Collective over comm. Destroy it with its ops' destroy
 * before MPI_Finalize; after a failed run (a part aborted) some of its
 * collectives may be left unfinished, and hc_mpi_transport_clean says so. */
hc_status_t hc_mpi_transport_create(MPI_Comm comm, hc_transport_t **out);
#endif
/* 1 when no operation of t was left unfinished on this rank by an abort,
 * 0 otherwise. MPI_Finalize is collective: call it on every rank or on
 * none, so the ranks agree first (hc_mpi_agree(t, clean ? HC_OK :
 * HC_ERR_DEVICE) == HC_OK on every rank, or none finalises); a process
 * that does not finalise ends with its failure code, and the launcher
 * ends the others. */
int hc_mpi_transport_clean(hc_transport_t *t);
/* What HC_MPI_CUDA_AWARE=1's check found, as hc-mpi-cuda-check put it
 * ("ok: ...", "no: ...", or why it could not run); "" when it was not
 * asked for. Rank 0's text tells the verdict of every node. */
const char *hc_mpi_transport_cuda_check(hc_transport_t *t);

/* MPI_COMM_WORLD, started and ended by hc. */
typedef struct hc_mpi_world {
  hc_transport_t *transport;   /* over MPI_COMM_WORLD */
  int rank, ranks;             /* in MPI_COMM_WORLD */
  int local_rank, local_ranks; /* among the ranks on this node */
  int argc;                    /* rank 0's arguments, the same on every rank */
  char **argv;
  char library[64]; /* the MPI library's version line, shortened */
} hc_mpi_world_t;

/* MPI_Init_thread, then rank 0's argc/argv broadcast to every rank (so
 * that ranks cannot disagree about parameters), the node-local rank and a
 * transport over MPI_COMM_WORLD. On an error (message in hc_last_error)
 * nothing is left to finish unless MPI was started (w->ranks > 0). */
hc_status_t hc_mpi_world_start(int argc, char **argv, hc_mpi_world_t *w);
/* Collective. Destroys the transport and ends MPI: returns 1 after
 * MPI_Finalize, 0 when a failed run left operations unfinished on any
 * rank and no rank finalised (the caller should exit at once with its
 * failure code; the launcher then ends every rank). */
int hc_mpi_world_finish(hc_mpi_world_t *w);

/* Every rank gives status (its message: hc_last_error when not HC_OK);
 * every rank gets back the status that decides (the first rank that
 * failed by itself, else the first failure, else the first failed
 * verification), with that rank's message in hc_last_error, prefixed
 * "rank R: " when it is not this rank's. Every rank must call it at the
 * same points. Works after an abort. */
hc_status_t hc_mpi_agree(hc_transport_t *t, hc_status_t status);

/* Collective: how this rank uses its node's cores. Ranks of a node that
 * the launcher left the same cores (not bound, or bound to one socket
 * each) cut them into even runs, in rank order, one per rank: *threads is
 * its run's length (1 when there are more such ranks than cores), and with
 * pin the calling thread's affinity becomes that run, so every thread it
 * starts later (the cpu backend's workers) runs there. A rank with cores
 * of its own (bound to them, as by --bind-to core) gets *threads = 0:
 * keep the default, its cores. said (n bytes, may be 0) gets a line on
 * what this rank's node decided. */
hc_status_t hc_mpi_share_cores(const hc_mpi_world_t *w, int pin, int *threads,
                               char *said, size_t n);

/* The device a rank drives when it is given "auto": *index (the device
 * auto picked for the workload, hc_device_find_auto) becomes, when it is
 * a GPU or an accelerator, the (local_rank mod k)-th of the k devices of
 * its backend and type that can run the workload; cpu ranks share the
 * host. */
hc_status_t hc_mpi_rank_device(hc_context_t *ctx, const char *workload,
                               int local_rank, uint32_t *index);

/* The calls a program looks up with dlsym (a build without MPI has no
 * libhc-mpi; the program then runs as one process). */
typedef hc_status_t (*hc_mpi_world_start_fn)(int, char **, hc_mpi_world_t *);
typedef int (*hc_mpi_world_finish_fn)(hc_mpi_world_t *);
typedef hc_status_t (*hc_mpi_agree_fn)(hc_transport_t *, hc_status_t);
typedef hc_status_t (*hc_mpi_rank_device_fn)(hc_context_t *, const char *, int,
                                             uint32_t *);
typedef const char *(*hc_mpi_transport_cuda_check_fn)(hc_transport_t *);
typedef hc_status_t (*hc_mpi_share_cores_fn)(const hc_mpi_world_t *, int, int *,
                                             char *, size_t);
#define HC_MPI_LIBRARY "libhc-mpi.so.0"

#ifdef __cplusplus
}
#endif
#endif
