/* How the ranks of one node share its cores (hc_mpi_share_cores).
 *
 * A launcher may bind each rank to cores of its own (Open MPI's
 * --bind-to core, Slurm's task affinity), bind several ranks to one socket,
 * or not bind at all. Ranks whose affinity masks are identical would each
 * start a thread per core of the mask and oversubscribe it k times over;
 * so those k ranks cut the mask's cores into k runs, in local rank order,
 * and each runs as many threads as its run has (pinned there with pin:
 * HC_MPI_PIN; by default the system places them, which measured as fast
 * or faster, docs/performance/history.md). */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <hc/mpi.h>
#include <hc/plugin.h>

#include "export.h"

static hc_status_t cores_error(int code, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
  return hc_error(HC_ERR_DEVICE, "MPI: %s: %s", what, text);
}

/* The k-th of parts even runs of mask's cores, in order, into *share. */
static void nth_run(const cpu_set_t *mask, int parts, int k, cpu_set_t *share) {
  const int count = CPU_COUNT(mask), lo = (int)((long long)count * k / parts),
            hi = (int)((long long)count * (k + 1) / parts);
  CPU_ZERO(share);
  for (int c = 0, seen = 0; c < CPU_SETSIZE && seen < hi; c++)
    if (CPU_ISSET(c, mask)) {
      if (seen >= lo) CPU_SET(c, share);
      seen++;
    }
}

/* "0-3,8" for the cores of a set (cut short to fit n). */
static void cores_text(const cpu_set_t *set, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
  for (int c = 0; c < CPU_SETSIZE && len < n; c++) {
    if (!CPU_ISSET(c, set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set)) last++;
    len += (size_t)snprintf(out + len, n - len, last > c ? "%s%d-%d" : "%s%d", len ? "," : "", c, last);
    c = last;
  }
}

/* What was decided for the k ranks sharing a mask of count cores. */
static void describe(char *said, size_t n, int k, int count, int pinned, const cpu_set_t *mine) {
  char where[96];
  cores_text(mine, where, sizeof where);
  if (k < 2)
    snprintf(said, n, "this rank runs on cores %s, which no other rank of its node shares", where);
  else if (count < k)
    snprintf(said, n, "%d ranks of this node share %d core%s (%s): one cpu thread each, not pinned", k, count,
             count == 1 ? "" : "s", where);
  else
    snprintf(said, n, "%d ranks of this node share %d cores (%s): %d%s cpu thread%s each, %s", k, count, where,
             count / k, count % k ? " or more" : "", count / k == 1 && !(count % k) ? "" : "s",
             pinned ? "each rank pinned to its own (HC_MPI_PIN)" : "not pinned");
}

/* Ranks with the same mask, found without gathering every mask: a split
 * of the node's ranks by a hash of it, then a check that the group's masks
 * agree bit for bit (the AND of the masks and of their complements);
 * a hash collision is taken as no sharing. */
#define MASK_WORDS (sizeof(cpu_set_t) / sizeof(unsigned long))

static unsigned mask_hash(const cpu_set_t *mask) {
  const unsigned char *b = (const unsigned char *)mask;
  unsigned h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < sizeof *mask; i++) h = (h ^ b[i]) * 16777619u;
  return h & 0x7fffffffu;
}

static hc_status_t sharing(const cpu_set_t *mine, int *k, int *index) {
  MPI_Comm node = MPI_COMM_NULL, same = MPI_COMM_NULL;
  int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return cores_error(rc, "finding the ranks of this node");
  rc = MPI_Comm_split(node, (int)mask_hash(mine), 0, &same);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return cores_error(rc, "grouping the ranks of this node by their cores");
  unsigned long words[2 * MASK_WORDS], agreed[2 * MASK_WORDS];
  memcpy(words, mine, sizeof *mine);
  for (size_t i = 0; i < MASK_WORDS; i++) words[MASK_WORDS + i] = ~words[i];
  rc = MPI_Allreduce(words, agreed, (int)(2 * MASK_WORDS), MPI_UNSIGNED_LONG, MPI_BAND, same);
  if (rc == MPI_SUCCESS) {
    MPI_Comm_size(same, k);
    MPI_Comm_rank(same, index);
    if (memcmp(words, agreed, sizeof words)) *k = 1, *index = 0;
  }
  MPI_Comm_free(&same);
  return rc == MPI_SUCCESS ? HC_OK : cores_error(rc, "comparing the ranks' cores");
}

HC_API hc_status_t hc_mpi_share_cores(const hc_mpi_world_t *w, int pin, int *threads, char *said, size_t n) {
  if (!w || !w->ranks || !threads || (!said && n))
    return hc_error(HC_ERR_INVALID_ARG, "hc_mpi_share_cores: bad argument");
  *threads = 0;
  if (n) said[0] = '\0';
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
  int k = 1, index = 0;
  hc_status_t st = sharing(&mine, &k, &index);
  if (st != HC_OK) return st;
  const int count = CPU_COUNT(&mine);
  if (!count) k = 1; /* the mask is unknown: nothing to share */
  int pinned = 0;
  if (k >= 2 && count >= k) {
    cpu_set_t share;
    nth_run(&mine, k, index, &share);
    *threads = CPU_COUNT(&share);
    /* This thread's mask: the threads hc starts later inherit it. */
    pinned = pin && sched_setaffinity(0, sizeof share, &share) == 0;
  } else if (k >= 2) {
    *threads = 1;
  }
  if (n) describe(said, n, k, count, pinned, &mine);
  return HC_OK;
}
