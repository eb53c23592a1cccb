/* The MPI transport (hc/transport.h): part r is rank r of the
 * communicator. Halos are packed contiguous rows sent with MPI_Isend /
 * MPI_Irecv between neighbours; reductions and all-gathers are
 * MPI_Iallgather(v), gathers MPI_Igather(v) (reductions gather the parts'
 * values and combine them in rank order with hc_reduce_combine, so that
 * every rank gets the bits the in-process transport gives).
 *
 * Nothing waits blindly: every operation is non-blocking and its wait also
 * watches for an abort message on a second communicator ("ctl"). A rank
 * that fails sends one to every other rank, so a rank waiting for the
 * failed one in a halo exchange or a collective returns HC_ERR_DEVICE
 * within a poll instead of hanging. The outcome is then agreed on ctl with
 * point-to-point messages only, which an abort never leaves unfinished. */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hc/config.h>
#include <hc/mpi.h>
#include <hc/plugin.h>

#include "cuda_check.h"
#include "export.h"

enum { TAG_HALO_UP = 11, TAG_HALO_DOWN = 12, TAG_ABORT = 13, TAG_AGREE = 14, TAG_VERDICT = 15 };

typedef struct {
  hc_transport_t base;
  MPI_Comm data, ctl;
  int rank, size;
  int aborted;    /* 0; 1: this rank aborted; 2: another rank did */
  int unfinished; /* an abort left a collective of `data` unfinished */
  int abort_flag; /* the abort message's payload */
  MPI_Request abort_recv;
  MPI_Request *abort_sends; /* size of them, MPI_REQUEST_NULL where none */
  /* The halo exchange begun (m_exchange_begin) and not ended: its
   * requests, where its receives are among them, and their sizes. */
  MPI_Request halo[4];
  int nhalo, recv_lo, recv_hi, lo, hi, halo_begun;
  int cuda_memory;      /* halos may be CUDA memory (HC_MPI_CUDA_AWARE) */
  char cuda_check[512]; /* what its check found ("" when not asked) */
} mpi_t;

/* What agree moves: a part's outcome, and the verdict. */
typedef struct {
  int32_t status;
  int32_t secondary; /* failed because another part aborted */
  int32_t from;
  char message[1024];
} outcome_t;

static hc_status_t mpi_error(int code, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
  return hc_error(HC_ERR_DEVICE, "MPI transport: %s: %s", what, text);
}

static hc_status_t aborted_error(void) { return hc_error(HC_ERR_DEVICE, "another part of the split run failed"); }

/* 1 once any rank has aborted (an abort message has arrived). */
static int abort_seen(mpi_t *t) {
  if (t->aborted) return 1;
  int flag = 0;
  if (MPI_Test(&t->abort_recv, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) t->aborted = 2;
  return t->aborted != 0;
}

/* MPI_Testall, with each request tested alone where no statuses are wanted
 * (MPI_STATUSES_IGNORE is a pointer some MPI headers' size annotations
 * take for an empty array). */
static int test_all(int n, MPI_Request *reqs, MPI_Status *statuses, int *done) {
  if (statuses) return MPI_Testall(n, reqs, done, statuses);
  *done = 1;
  for (int i = 0; i < n; i++) {
    int flag = 0, rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    if (!flag) *done = 0;
  }
  return MPI_SUCCESS;
}

/* Waits for reqs; with watch, stops at an abort (the operation is then
 * left unfinished: only cancelled receives are ever reused). Polls, and
 * yields the core between polls, so that ranks sharing cores progress. */
static hc_status_t wait_all(mpi_t *t, int n, MPI_Request *reqs, MPI_Status *statuses, int watch, double *waited_s) {
  double t0 = MPI_Wtime();
  hc_status_t st = HC_OK;
  for (;;) {
    int done = 0;
    int rc = test_all(n, reqs, statuses, &done);
    if (rc != MPI_SUCCESS) {
      st = mpi_error(rc, "waiting for a message");
      break;
    }
    if (done) break;
    if (watch && abort_seen(t)) {
      t->unfinished = 1;
      st = aborted_error();
      break;
    }
    /* MPI progresses inside the tests: poll at once for the first
     * milliseconds (exchanges between busy ranks are short), then sleep
     * between polls (a rank waiting for a slow one). */
    if (MPI_Wtime() - t0 < 2e-3) {
      sched_yield();
    } else {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
  if (waited_s) *waited_s += MPI_Wtime() - t0;
  return st;
}

static int as_count(size_t bytes, int *out) {
  if (bytes > INT_MAX) return 0;
  *out = (int)bytes;
  return 1;
}

static hc_status_t too_large(const char *what, size_t bytes) {
  return hc_error(HC_ERR_UNSUPPORTED, "MPI transport: %s of %zu bytes (one message carries at most %d)", what, bytes,
                  INT_MAX);
}

static uint32_t m_count(hc_transport_t *tr) { return (uint32_t)((mpi_t *)tr)->size; }
static uint32_t m_self(hc_transport_t *tr) { return (uint32_t)((mpi_t *)tr)->rank; }

static hc_status_t m_barrier(hc_transport_t *tr, uint32_t part, double *waited_s) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  if (abort_seen(t)) return aborted_error();
  MPI_Request r;
  int rc = MPI_Ibarrier(t->data, &r);
  return rc != MPI_SUCCESS ? mpi_error(rc, "barrier") : wait_all(t, 1, &r, NULL, 1, waited_s);
}

static hc_status_t m_exchange_begin(hc_transport_t *tr, uint32_t part, const void *to_lo, size_t lo_bytes,
                                    const void *to_hi, size_t hi_bytes, void *from_lo, void *from_hi) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  if (t->halo_begun) return hc_error(HC_ERR_INTERNAL, "MPI transport: a halo exchange was begun and not ended");
  if (abort_seen(t)) return aborted_error();
  int lo, hi;
  if (!as_count(lo_bytes, &lo) || !as_count(hi_bytes, &hi)) return too_large("a halo", lo_bytes + hi_bytes);
  MPI_Request *r = t->halo;
  int k = 0, rc = MPI_SUCCESS;
  t->recv_lo = t->recv_hi = -1;
  if (t->rank > 0 && lo) {
    t->recv_lo = k;
    rc = MPI_Irecv(from_lo, lo, MPI_BYTE, t->rank - 1, TAG_HALO_UP, t->data, &r[k++]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(to_lo, lo, MPI_BYTE, t->rank - 1, TAG_HALO_DOWN, t->data, &r[k++]);
  }
  if (rc == MPI_SUCCESS && t->rank + 1 < t->size && hi) {
    t->recv_hi = k;
    rc = MPI_Irecv(from_hi, hi, MPI_BYTE, t->rank + 1, TAG_HALO_DOWN, t->data, &r[k++]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(to_hi, hi, MPI_BYTE, t->rank + 1, TAG_HALO_UP, t->data, &r[k++]);
  }
  if (rc != MPI_SUCCESS) {
    t->unfinished = 1;
    return mpi_error(rc, "halo exchange");
  }
  t->nhalo = k, t->lo = lo, t->hi = hi, t->halo_begun = 1;
  return HC_OK;
}

static hc_status_t m_exchange_end(hc_transport_t *tr, uint32_t part, double *waited_s) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  if (!t->halo_begun) return hc_error(HC_ERR_INTERNAL, "MPI transport: no halo exchange was begun");
  MPI_Status s[4];
  t->halo_begun = 0;
  hc_status_t st = wait_all(t, t->nhalo, t->halo, s, 1, waited_s);
  for (int side = 0; side < 2 && st == HC_OK; side++) {
    int at = side ? t->recv_hi : t->recv_lo, got = 0;
    if (at < 0) continue;
    MPI_Get_count(&s[at], MPI_BYTE, &got);
    if (got != (side ? t->hi : t->lo))
      st = hc_error(HC_ERR_INTERNAL, "halo exchange: rank %d sent %d bytes, rank %d expects %d",
                    t->rank + (side ? 1 : -1), got, t->rank, side ? t->hi : t->lo);
  }
  return st;
}

static hc_status_t m_exchange(hc_transport_t *tr, uint32_t part, const void *to_lo, size_t lo_bytes, const void *to_hi,
                              size_t hi_bytes, void *from_lo, void *from_hi, double *waited_s) {
  hc_status_t st = m_exchange_begin(tr, part, to_lo, lo_bytes, to_hi, hi_bytes, from_lo, from_hi);
  return st == HC_OK ? m_exchange_end(tr, part, waited_s) : st;
}

/* allgather (root < 0) or gather to root. Every rank first learns every
 * rank's size and capacity, so that all of them decide alike whether the
 * data fits before any of it moves (no rank is left in a collective
 * alone). */
static hc_status_t gather_any(mpi_t *t, int root, const void *mine, size_t bytes, void *all, size_t capacity,
                              size_t *total, double *waited_s) {
  if (abort_seen(t)) return aborted_error();
  int64_t me[2] = {(int64_t)bytes, (int64_t)(capacity > INT64_MAX ? INT64_MAX : capacity)};
  int64_t *sizes = calloc((size_t)t->size * 2, sizeof *sizes);
  int *counts = calloc((size_t)t->size, sizeof *counts), *displs = calloc((size_t)t->size, sizeof *displs);
  hc_status_t st = sizes && counts && displs ? HC_OK : hc_error(HC_ERR_NO_MEMORY, "MPI transport: out of memory");
  MPI_Request r;
  int rc;
  if (st == HC_OK) {
    rc = MPI_Iallgather(me, 2, MPI_INT64_T, sizes, 2, MPI_INT64_T, t->data, &r);
    st = rc == MPI_SUCCESS ? wait_all(t, 1, &r, NULL, 1, waited_s) : mpi_error(rc, "gathering sizes");
  }
  size_t sum = 0;
  for (int i = 0; i < t->size && st == HC_OK; i++) {
    size_t b = (size_t)sizes[2 * i];
    if (b > INT_MAX || sum > INT_MAX) st = too_large("a gather", sum + b);
    counts[i] = (int)b;
    displs[i] = (int)sum;
    sum += b;
  }
  for (int i = 0; i < t->size && st == HC_OK; i++)
    if ((root < 0 || i == root) && sum > (size_t)sizes[2 * i + 1])
      st = hc_error(HC_ERR_INVALID_ARG, "MPI transport: %zu bytes gathered do not fit rank %d's %lld", sum, i,
                    (long long)sizes[2 * i + 1]);
  if (st == HC_OK) {
    rc = root < 0 ? MPI_Iallgatherv(mine, counts[t->rank], MPI_BYTE, all, counts, displs, MPI_BYTE, t->data, &r)
                  : MPI_Igatherv(mine, counts[t->rank], MPI_BYTE, all, counts, displs, MPI_BYTE, root, t->data, &r);
    st = rc == MPI_SUCCESS ? wait_all(t, 1, &r, NULL, 1, waited_s) : mpi_error(rc, "gathering");
  }
  if (total) *total = sum;
  free(sizes);
  free(counts);
  free(displs);
  return st;
}

static hc_status_t m_allgather(hc_transport_t *tr, uint32_t part, const void *mine, size_t bytes, void *all,
                               size_t capacity, size_t *total, double *waited_s) {
  (void)part;
  return gather_any((mpi_t *)tr, -1, mine, bytes, all, capacity, total, waited_s);
}

static hc_status_t m_gather(hc_transport_t *tr, uint32_t part, const void *mine, size_t bytes, void *all,
                            size_t capacity, size_t *total, double *waited_s) {
  (void)part;
  return gather_any((mpi_t *)tr, 0, mine, bytes, all, capacity, total, waited_s);
}

static hc_status_t m_allreduce(hc_transport_t *tr, uint32_t part, hc_reduce_op_t op, double *values, uint32_t n,
                               double *waited_s) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  if (n > HC_PART_REDUCE_MAX)
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_allreduce: %u values (at most %d)", n, HC_PART_REDUCE_MAX);
  if (abort_seen(t)) return aborted_error();
  double *all = malloc((size_t)t->size * n * sizeof *all + 1);
  if (!all) return hc_error(HC_ERR_NO_MEMORY, "MPI transport: out of memory");
  MPI_Request r;
  int rc = MPI_Iallgather(values, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, t->data, &r);
  hc_status_t st = rc == MPI_SUCCESS ? wait_all(t, 1, &r, NULL, 1, waited_s) : mpi_error(rc, "reduction");
  if (st == HC_OK) hc_reduce_combine(op, all, (uint32_t)t->size, n, values);
  free(all);
  return st;
}

/* Does `a` decide over `b`? An own failure over one caused by an abort,
 * a failure over a failed verification, over success; then rank order. */
static int decides(const outcome_t *a, const outcome_t *b) {
  int ra = a->status == HC_OK ? 3 : a->status == HC_ERR_VERIFY ? 2 : a->secondary ? 1 : 0;
  int rb = b->status == HC_OK ? 3 : b->status == HC_ERR_VERIFY ? 2 : b->secondary ? 1 : 0;
  return ra < rb || (ra == rb && a->from < b->from);
}

static hc_status_t m_agree(hc_transport_t *tr, uint32_t part, hc_status_t *status, char *message, size_t cap,
                           uint32_t *from) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  outcome_t mine = {.status = *status, .secondary = *status != HC_OK && t->aborted == 2, .from = t->rank};
  snprintf(mine.message, sizeof mine.message, "%s", message ? message : "");
  outcome_t verdict = mine;
  hc_status_t st = HC_OK;
  int rc;
  if (t->rank == 0) {
    outcome_t *got = calloc((size_t)t->size, sizeof *got);
    MPI_Request *r = calloc((size_t)t->size, sizeof *r);
    if (!got || !r) {
      free(got);
      free(r);
      return hc_error(HC_ERR_NO_MEMORY, "MPI transport: out of memory");
    }
    for (int i = 1; i < t->size; i++) MPI_Irecv(&got[i], sizeof *got, MPI_BYTE, i, TAG_AGREE, t->ctl, &r[i - 1]);
    st = wait_all(t, t->size - 1, r, NULL, 0, NULL);
    for (int i = 1; i < t->size && st == HC_OK; i++)
      if (decides(&got[i], &verdict)) verdict = got[i];
    for (int i = 1; i < t->size && st == HC_OK; i++)
      if ((rc = MPI_Send(&verdict, sizeof verdict, MPI_BYTE, i, TAG_VERDICT, t->ctl)) != MPI_SUCCESS)
        st = mpi_error(rc, "sending the outcome");
    free(got);
    free(r);
  } else {
    MPI_Request r;
    rc = MPI_Send(&mine, sizeof mine, MPI_BYTE, 0, TAG_AGREE, t->ctl);
    if (rc == MPI_SUCCESS) rc = MPI_Irecv(&verdict, sizeof verdict, MPI_BYTE, 0, TAG_VERDICT, t->ctl, &r);
    st = rc == MPI_SUCCESS ? wait_all(t, 1, &r, NULL, 0, NULL) : mpi_error(rc, "agreeing on the outcome");
  }
  if (st != HC_OK) return st;
  verdict.message[sizeof verdict.message - 1] = '\0';
  *status = verdict.status;
  if (message && cap) snprintf(message, cap, "%s", verdict.message);
  if (from) *from = (uint32_t)verdict.from;
  return HC_OK;
}

static void m_abort(hc_transport_t *tr, uint32_t part) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  if (t->halo_begun) t->unfinished = 1; /* its requests stay pending */
  if (t->aborted) return;               /* this rank told the others already, or another rank did */
  t->aborted = 1;
  static const int one = 1;
  for (int i = 0; i < t->size; i++)
    if (i != t->rank) MPI_Isend(&one, 1, MPI_INT, i, TAG_ABORT, t->ctl, &t->abort_sends[i]);
}

/* The abort messages this rank sent are small and complete once sent; one
 * to a rank that is gone may stay pending: after 2 s the transport counts
 * as unfinished (MPI is then not finalised) instead of waiting on. */
static void settle_aborts(mpi_t *t) {
  double t0 = MPI_Wtime();
  int done = 0;
  while (test_all(t->size, t->abort_sends, NULL, &done) == MPI_SUCCESS && !done && MPI_Wtime() - t0 < 2.0)
    sched_yield();
  if (!done) t->unfinished = 1;
}

static void m_destroy(hc_transport_t *tr) {
  mpi_t *t = (mpi_t *)tr;
  if (!t) return;
  settle_aborts(t);
  /* Receives of aborts that never came are cancelled. */
  int flag = 0;
  MPI_Test(&t->abort_recv, &flag, MPI_STATUS_IGNORE);
  if (!flag) {
    MPI_Cancel(&t->abort_recv);
    MPI_Wait(&t->abort_recv, MPI_STATUS_IGNORE);
  }
  if (!t->unfinished) {
    MPI_Comm_free(&t->data);
    MPI_Comm_free(&t->ctl);
  }
  free(t->abort_sends);
  free(t);
}

/* MPI-IO: part 0 creates (or truncates) the file and writes the head;
 * every rank writes its bytes with MPI_File_write_at_all, in blocks of
 * 1 MiB (a count of blocks fits an int) and then the rest. */
static hc_status_t m_write_file(hc_transport_t *tr, uint32_t part, const char *path, const void *head,
                                size_t head_bytes, uint64_t offset, const void *data, size_t bytes) {
  (void)part;
  mpi_t *t = (mpi_t *)tr;
  if (abort_seen(t)) return aborted_error();
  enum { BLOCK = 1 << 20 };
  MPI_File fh;
  int rc = MPI_File_open(t->data, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  if (rc != MPI_SUCCESS) return mpi_error(rc, path);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  MPI_Datatype block;
  MPI_Type_contiguous(BLOCK, MPI_BYTE, &block);
  MPI_Type_commit(&block);
  size_t blocks = bytes / BLOCK, rest = bytes % BLOCK;
  /* Every rank makes the same calls (collective), with counts of 0 where
   * it has nothing. */
  int ok = blocks <= INT_MAX, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, t->data);
  hc_status_t st = all_ok ? HC_OK : too_large("a part of a file", bytes);
  if (st == HC_OK && (rc = MPI_File_set_size(fh, 0)) != MPI_SUCCESS) st = mpi_error(rc, path);
  if (st == HC_OK && t->rank == 0 && head_bytes &&
      (rc = MPI_File_write_at(fh, 0, head, (int)head_bytes, MPI_BYTE, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
    st = mpi_error(rc, path);
  int rc1 = MPI_SUCCESS, rc2 = MPI_SUCCESS;
  if (all_ok) {
    rc1 = MPI_File_write_at_all(fh, (MPI_Offset)offset, data, (int)blocks, block, MPI_STATUS_IGNORE);
    rc2 = MPI_File_write_at_all(fh, (MPI_Offset)(offset + blocks * BLOCK), (const char *)data + blocks * BLOCK,
                                (int)rest, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  if (st == HC_OK && (rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS)) st = mpi_error(rc1 != MPI_SUCCESS ? rc1 : rc2, path);
  MPI_Type_free(&block);
  if ((rc = MPI_File_close(&fh)) != MPI_SUCCESS && st == HC_OK) st = mpi_error(rc, path);
  return st;
}

HC_API int hc_mpi_transport_clean(hc_transport_t *tr) {
  if (!tr) return 1;
  settle_aborts((mpi_t *)tr);
  return !((mpi_t *)tr)->unfinished;
}

/* Host memory always; CUDA memory once the check passed on every node. */
static int m_takes_memory(hc_transport_t *tr, uint32_t kind) {
  return kind == HC_NATIVE_HOST || (kind == HC_NATIVE_CUDA && ((mpi_t *)tr)->cuda_memory);
}

/* The two tables differ in name only, which the split's plan shows. */
#define MPI_OPS(label)                                                                                                \
  {                                                                                                                   \
    .size = sizeof(hc_transport_ops_t), .name = label, .count = m_count, .self = m_self, .barrier = m_barrier,        \
    .exchange = m_exchange, .allreduce = m_allreduce, .allgather = m_allgather, .gather = m_gather, .agree = m_agree, \
    .abort = m_abort, .destroy = m_destroy, .write_file = m_write_file, .exchange_begin = m_exchange_begin,           \
    .exchange_end = m_exchange_end, .takes_memory = m_takes_memory,                                                   \
  }
static const hc_transport_ops_t mpi_ops = MPI_OPS("MPI"), mpi_cuda_ops = MPI_OPS("MPI, CUDA memory in place");

/* HC_MPI_CUDA_AWARE=1: the first rank of each node runs the check; CUDA
 * memory goes to MPI in place when no node's check failed and one passed.
 * Collective over the transport's communicator, whatever each rank's
 * setting says (a rank whose setting is bad fails them all alike). */
static hc_status_t decide_cuda_memory(mpi_t *t) {
  long long asked = 0;
  char bad[512] = "";
  if (hc_config_int("HC_MPI_CUDA_AWARE", &asked) != HC_OK) {
    snprintf(bad, sizeof bad, "%s", hc_last_error());
    asked = 2;
  }
  long long any = 0;
  int rc = MPI_Allreduce(&asked, &any, 1, MPI_LONG_LONG, MPI_MAX, t->data);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "agreeing on HC_MPI_CUDA_AWARE");
  if (any == 2) return hc_error(HC_ERR_PARAM, "%s", bad[0] ? bad : "HC_MPI_CUDA_AWARE is not valid on another rank");
  if (!any) return HC_OK;
  MPI_Comm node;
  rc = MPI_Comm_split_type(t->data, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "finding the ranks of this node");
  int local = 0, mine = CUDA_CHECK_NOTHING, all = CUDA_CHECK_FAILED;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  if (local == 0) mine = hc__mpi_cuda_check(t->cuda_check, sizeof t->cuda_check);
  rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, t->data);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "agreeing on CUDA memory");
  t->cuda_memory = all == CUDA_CHECK_PASSED;
  /* Rank 0 tells what decided: its node's check, else another node's. */
  if (t->rank == 0 && all != mine && all != CUDA_CHECK_NOTHING)
    snprintf(t->cuda_check, sizeof t->cuda_check, "the check %s on another node",
             all == CUDA_CHECK_PASSED ? "passed" : "failed");
  return HC_OK;
}

HC_API const char *hc_mpi_transport_cuda_check(hc_transport_t *tr) {
  return tr && tr->ops->takes_memory == m_takes_memory ? ((mpi_t *)tr)->cuda_check : "";
}

HC_API hc_status_t hc_mpi_transport_create(MPI_Comm comm, hc_transport_t **out) {
  if (!out) return hc_error(HC_ERR_INVALID_ARG, "hc_mpi_transport_create: NULL argument");
  *out = NULL;
  int init = 0;
  MPI_Initialized(&init);
  if (!init) return hc_error(HC_ERR_INVALID_ARG, "hc_mpi_transport_create: MPI is not initialised");
  mpi_t *t = calloc(1, sizeof *t);
  if (!t) return hc_error(HC_ERR_NO_MEMORY, "MPI transport: out of memory");
  int rc = MPI_Comm_dup(comm, &t->data);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(comm, &t->ctl);
  if (rc != MPI_SUCCESS) {
    free(t);
    return mpi_error(rc, "duplicating the communicator");
  }
  /* Errors come back as codes, turned into hc statuses with a message. */
  MPI_Comm_set_errhandler(t->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(t->ctl, MPI_ERRORS_RETURN);
  MPI_Comm_rank(t->data, &t->rank);
  MPI_Comm_size(t->data, &t->size);
  t->abort_sends = malloc((size_t)t->size * sizeof *t->abort_sends);
  if (!t->abort_sends) {
    MPI_Comm_free(&t->data);
    MPI_Comm_free(&t->ctl);
    free(t);
    return hc_error(HC_ERR_NO_MEMORY, "MPI transport: out of memory");
  }
  for (int i = 0; i < t->size; i++) t->abort_sends[i] = MPI_REQUEST_NULL;
  MPI_Irecv(&t->abort_flag, 1, MPI_INT, MPI_ANY_SOURCE, TAG_ABORT, t->ctl, &t->abort_recv);
  t->base.ops = &mpi_ops;
  hc_status_t st = decide_cuda_memory(t);
  if (st != HC_OK) {
    m_destroy(&t->base);
    return st;
  }
  if (t->cuda_memory) t->base.ops = &mpi_cuda_ops;
  *out = &t->base;
  return HC_OK;
}
