/* MPI_COMM_WORLD started and ended by hc, for programs that leave MPI to
 * it (hcrun under mpirun): rank 0's arguments go to every rank, and each
 * rank learns its place on its node (one device per local rank). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/mpi.h>
#include <hc/plugin.h>

#include "export.h"

static hc_status_t world_error(int code, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
  return hc_error(HC_ERR_DEVICE, "MPI: %s: %s", what, text);
}

/* Rank 0's argv, packed as NUL-terminated strings, on every rank. */
static hc_status_t share_arguments(hc_mpi_world_t *w, int argc, char **argv) {
  long long len = 0;
  char *packed = NULL;
  if (w->rank == 0) {
    for (int i = 0; i < argc; i++) len += (long long)strlen(argv[i]) + 1;
    if (len > 1 << 30) return hc_error(HC_ERR_PARAM, "MPI: the command line has %lld bytes", len);
  }
  long long head[2] = {argc, len};
  int rc = MPI_Bcast(head, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return world_error(rc, "sharing the command line");
  w->argc = (int)head[0];
  len = head[1];
  packed = malloc((size_t)len + 1);
  w->argv = calloc((size_t)w->argc + 1, sizeof *w->argv);
  if (!packed || !w->argv) {
    free(packed);
    return hc_error(HC_ERR_NO_MEMORY, "MPI: out of memory for the command line");
  }
  if (w->rank == 0) {
    char *p = packed;
    for (int i = 0; i < argc; i++) p = stpcpy(p, argv[i]) + 1;
  }
  rc = MPI_Bcast(packed, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    free(packed);
    return world_error(rc, "sharing the command line");
  }
  const char *p = packed;
  for (int i = 0; i < w->argc; i++, p += strlen(p) + 1)
    if (!(w->argv[i] = strdup(p))) {
      free(packed);
      return hc_error(HC_ERR_NO_MEMORY, "MPI: out of memory for the command line");
    }
  free(packed);
  return HC_OK;
}

static void version_line(hc_mpi_world_t *w) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) v[0] = '\0';
  v[strcspn(v, ",\n")] = '\0';
  snprintf(w->library, sizeof w->library, "%s", v);
}

HC_API hc_status_t hc_mpi_world_start(int argc, char **argv, hc_mpi_world_t *w) {
  if (!w) return hc_error(HC_ERR_INVALID_ARG, "hc_mpi_world_start: NULL argument");
  memset(w, 0, sizeof *w);
  int provided = 0;
  int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return world_error(rc, "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w->ranks);
  version_line(w);
  if (provided < MPI_THREAD_FUNNELED)
    return hc_error(HC_ERR_UNSUPPORTED, "MPI: the library gives thread level %d, hc needs MPI_THREAD_FUNNELED",
                    provided);
  hc_status_t st = share_arguments(w, argc, argv);
  MPI_Comm node;
  if (st == HC_OK) {
    rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS) st = world_error(rc, "finding the ranks of this node");
  }
  if (st == HC_OK) {
    MPI_Comm_rank(node, &w->local_rank);
    MPI_Comm_size(node, &w->local_ranks);
    MPI_Comm_free(&node);
    st = hc_mpi_transport_create(MPI_COMM_WORLD, &w->transport);
  }
  return st;
}

HC_API int hc_mpi_world_finish(hc_mpi_world_t *w) {
  if (!w || !w->ranks) return 1;
  int clean = hc_mpi_transport_clean(w->transport);
  if (w->transport) {
    /* Every rank leaves together: after a failed run the launcher ends the
     * others as soon as one exits, and rank 0 must have reported by then.
     * MPI_Finalize is collective, so the ranks also agree on calling it:
     * all of them or none (a rank that finalised alone would wait in it
     * for the others until the launcher killed it, and the launcher
     * itself can hang on that). */
    hc_status_t all_clean = clean ? HC_OK : HC_ERR_DEVICE;
    if (w->transport->ops->agree(w->transport, (uint32_t)w->rank, &all_clean, NULL, 0, NULL) != HC_OK ||
        all_clean != HC_OK)
      clean = 0;
    w->transport->ops->destroy(w->transport);
  }
  w->transport = NULL;
  for (int i = 0; w->argv && i < w->argc; i++) free(w->argv[i]);
  free(w->argv);
  w->argv = NULL;
  if (clean) MPI_Finalize();
  w->ranks = 0;
  return clean;
}

HC_API hc_status_t hc_mpi_agree(hc_transport_t *t, hc_status_t st) {
  if (!t) return hc_error(HC_ERR_INVALID_ARG, "hc_mpi_agree: NULL transport");
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", st == HC_OK ? "" : hc_last_error());
  uint32_t from = 0, me = t->ops->self(t);
  hc_status_t decided = st;
  hc_status_t ast = t->ops->agree(t, me, &decided, msg, sizeof msg, &from);
  if (ast != HC_OK) return ast;
  if (decided == HC_OK) return HC_OK;
  return from == me ? hc_error(decided, "%s", msg) : hc_error(decided, "rank %u: %s", from, msg);
}

/* Device i is of pick's type and backend (the id's prefix, blen bytes and
 * the ':') and can run the workload. */
static int same_kind(hc_context_t *ctx, uint32_t i, const hc_device_info_t *pick, const char *id, size_t blen,
                     const char *workload) {
  hc_device_info_t info;
  return hc_device_query(ctx, i, &info) == HC_OK && info.type == pick->type &&
         !strncmp(hc_device_id(ctx, i), id, blen + 1) && (!workload || hc_workload_can_run(ctx, workload, i, NULL));
}

HC_API hc_status_t hc_mpi_rank_device(hc_context_t *ctx, const char *workload, int local_rank, uint32_t *idx) {
  if (!ctx || !idx || local_rank < 0) return hc_error(HC_ERR_INVALID_ARG, "hc_mpi_rank_device: bad argument");
  hc_device_info_t pick;
  hc_status_t st = hc_device_query(ctx, *idx, &pick);
  if (st != HC_OK || pick.type == HC_DEVICE_CPU) return st;
  const char *id = hc_device_id(ctx, *idx);
  size_t blen = strcspn(id, ":"); /* its backend: "cuda" of "cuda:0" */
  uint32_t k = 0;
  for (uint32_t i = 0; i < hc_device_count(ctx); i++) k += same_kind(ctx, i, &pick, id, blen, workload);
  uint32_t want = k ? (uint32_t)local_rank % k : 0;
  for (uint32_t i = 0, n = 0; i < hc_device_count(ctx) && k; i++)
    if (same_kind(ctx, i, &pick, id, blen, workload) && n++ == want) {
      *idx = i;
      break;
    }
  return HC_OK;
}
