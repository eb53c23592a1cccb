/* libhc-mpi is built with hidden visibility: what hc/mpi.h declares is
 * exported explicitly. */
#ifndef HC_MPI_EXPORT_H
#define HC_MPI_EXPORT_H
#define HC_API __attribute__((visibility("default")))
#endif
