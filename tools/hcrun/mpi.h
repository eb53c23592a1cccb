/* hcrun under an MPI launcher (mpi.c, docs/mpi.md): every rank runs the
 * same command line (rank 0's), drives one device and runs its part of the
 * split; rank 0 alone prints and writes. Without MPI (no launcher, HC_MPI=off
 * or no libhc-mpi library) every call here is a no-op for one process. */
#ifndef HCRUN_MPI_H
#define HCRUN_MPI_H

#include <hc/hc.h>
#include <hc/transport.h>

/* Starts MPI when hcrun runs under a launcher (HC_MPI=auto), or when HC_MPI=on,
 * and replaces argc and argv by rank 0's. Returns -1 to go on, or an exit
 * code after printing why MPI could not start. */
int hcrun_mpi_start(int *argc, char ***argv);
/* 1 when running as one of several MPI ranks (or one rank, HC_MPI=on). */
int hcrun_mpi_active(void);
/* 1 on the rank that prints and writes (rank 0, or no MPI). */
int hcrun_mpi_leads(void);
/* This rank's transport (NULL without MPI), and the number of ranks. */
hc_transport_t *hcrun_mpi_transport(void);
int hcrun_mpi_ranks(void);
/* Under MPI: the device auto picked (*index) becomes this rank's
 * (hc_mpi_rank_device: local rank r takes GPU r mod k). */
hc_status_t hcrun_mpi_rank_device(hc_context_t *ctx, const char *workload, uint32_t *index);
/* The device set spec each rank drives (--device=auto,cpu:0): spec with
 * each "auto" in it replaced by this rank's device, into out (n bytes). */
hc_status_t hcrun_mpi_rank_set(hc_context_t *ctx, const char *workload, const char *spec, char *out, size_t n);
/* Every rank gives st; every rank gets the deciding one back, with the
 * failing rank's message (prefixed "rank R: ") in hc_last_error. A no-op
 * without MPI. Every rank must call it at the same points. */
hc_status_t hcrun_mpi_agree(hc_status_t st);
/* The cpu backend's threads for this rank: when several ranks share a
 * node and HC_CPU_THREADS is not set, each gets its share of the cores. */
void hcrun_mpi_share_cores(void);
/* A file of this rank's own: path itself on rank 0 (and without MPI),
 * "run.rank3.json" for "run.json" on rank 3. */
const char *hcrun_mpi_rank_path(const char *path, char *buf, size_t n);
/* The trace's process track name under MPI ("hc rank R (pid N)"); NULL
 * without MPI (the library's default). */
const char *hcrun_mpi_process_name(void);
/* After every rank stopped its trace: rank 0 appends the other ranks'
 * events (FILE.rank<r>.json) to FILE and removes their files, so that one
 * file has a process track per rank. A no-op without MPI. */
hc_status_t hcrun_mpi_join_traces(const char *path);
/* Ends MPI; returns code. */
int hcrun_mpi_finish(int code);

#endif
