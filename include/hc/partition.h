/* hc — several devices, one workload (the partition layer, core/partition).
 *
 * A job can run on a device set: the core splits the work into one part per
 * device ("owner computes"), runs every part at once on its own thread, and
 * gathers the parts' outputs into ordinary fields on the set's first
 * device, so that everything downstream (files, verification, pipelines)
 * sees a whole field.
 *
 * How a workload splits is declared by its ops table's `split` member
 * (hc_workload_ops_t): slabs along the slowest axis (axis 0) with a halo of
 * ghost rows, or replicated (every part holds all of an input, such as
 * nbody's positions, and owns a slice of the output). A workload that
 * declares nothing runs on the set's first device with a note.
 *
 * Inside run(), a part sees an ordinary job: hc_job_device(job) is its
 * device, hc_job_part(job) its part (NULL when the job is not split). Parts
 * talk only through the calls below, which go through one transport
 * interface (hc/transport.h): threads of this process by default, or the
 * processes of an MPI job (hc/mpi.h), one part per process, behind the
 * same calls. */
#ifndef HC_PARTITION_H
#define HC_PARTITION_H

#include <stddef.h>

#include "hc/hc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_devset hc_devset_t;
typedef struct hc_part hc_part_t;

/* The most devices in a set. */
#define HC_DEVSET_MAX 16

/* ---------------------------------------------------------------- splits */

typedef enum hc_split_kind {
  HC_SPLIT_NONE = 0,      /* does not split: runs whole on the first device */
  HC_SPLIT_SLABS = 1,     /* rows along axis 0 with `halo` ghost rows */
  HC_SPLIT_REPLICATED = 2 /* every part has all inputs, owns a slice of rows */
} hc_split_kind_t;

/* What a workload's split() fills for a configured job. */
typedef struct hc_split {
  uint32_t size;     /* sizeof(hc_split_t), set by the core */
  uint32_t kind;     /* hc_split_kind_t */
  int64_t rows;      /* extent of axis 0 (slabs) or of the items (replicated) */
  uint32_t halo;     /* ghost rows on each side that has a neighbour */
  uint32_t min_rows; /* the fewest rows a part may own (>= 1, >= halo) */
  char why[200];     /* kind NONE: why it does not split (shown as a note) */
  /* Appended (ABI 1.5); write them only when size covers them
   * (HC_SPLIT_HAS_CALIBRATE). A short run of the same configuration, for
   * auto shares over devices the performance history does not know yet:
   * the parameters that make it ("iters=8 tol=0"; "" none) and its work
   * as a fraction of the configured run's (0 < calibrate_work <= 1). */
  char calibrate[96];
  double calibrate_work;
  /* Appended (ABI 1.6); write it only when size covers it
   * (HC_SPLIT_HAS_SLAB_INPUTS). 1 (slabs only): every input field reaches
   * each part as its slab, laid out as the part's own fields ([below | own
   * rows | above]), not whole; a run with an input field whose axis 0 does
   * not have `rows` rows is refused before anything runs (HC_ERR_PARAM).
   * Either way a part's inputs are on its device when its run() starts. */
  uint32_t slab_inputs;
} hc_split_t;
#define HC_SPLIT_HAS_CALIBRATE(s) \
  ((s)->size >= offsetof(hc_split_t, calibrate_work) + sizeof(double))
#define HC_SPLIT_HAS_SLAB_INPUTS(s) \
  ((s)->size >= offsetof(hc_split_t, slab_inputs) + sizeof(uint32_t))

/* --------------------------------------------------------- device sets */

/* A device set from a spec: "cuda:0,cpu:0" (devices as hc_device_find
 * takes them, each once) or "all" (every device that can run `workload`).
 * HC_ERR_PARAM naming the problem for a device listed twice, an unknown
 * device, one that cannot run the workload (when workload is not NULL) or
 * more than HC_DEVSET_MAX devices. The set opens its devices; destroy it
 * with hc_devset_destroy. */
hc_status_t hc_devset_parse(hc_context_t *ctx, const char *spec,
                            const char *workload, hc_devset_t **out);
/* A set of already opened devices (the set takes references of its own). */
hc_status_t hc_devset_create(hc_context_t *ctx, hc_device_t *const *devices,
                             uint32_t n, hc_devset_t **out);
void hc_devset_destroy(hc_devset_t *set);
/* Relative shares of the work, one per device (> 0; normalised by the
 * core). NULL: equal shares. HC_ERR_PARAM on a wrong count or value. */
hc_status_t hc_devset_set_weights(hc_devset_t *set, const double *weights,
                                  uint32_t n);
/* Parses "0.8,0.2" into weights for the set; "equal" (what a parsed or
 * created set starts with); or "auto" (what hcrun, Python and pipeline
 * stages ask for): shares from the performance history of earlier runs,
 * leaving out the devices that would slow the run (docs/partition.md; a
 * device without a figure first runs the workload's short calibrating
 * run alone, where it declares one; otherwise, until every device of the
 * set has a figure, shares by the devices' declared fp32 peaks, or equal
 * where one declares none; over a transport, the parts' figures or
 * peaks). */
hc_status_t hc_devset_parse_weights(hc_devset_t *set, const char *text);
uint32_t hc_devset_count(const hc_devset_t *set);
hc_device_t *hc_devset_device(const hc_devset_t *set, uint32_t i);

/* --device=auto from measurement: of the devices that can run the
 * configured job, the one with the highest rate in the performance history
 * for these parameters (the same figures --split=auto uses: split runs'
 * parts, and runs recorded by hc_job_record_run). The device
 * hc_device_find_auto picks is the one to beat: until it has a figure of
 * its own it is the answer (its run is the calibration), as it is for a
 * workload that keeps no history (no split for these parameters). why
 * (optional) gets one line naming the device and the rule that chose it. */
hc_status_t hc_job_find_device(hc_job_t *job, uint32_t *index, char *why,
                               size_t why_size);
/* Adds the job's last run on dev alone to the performance history (its
 * rows per second of compute); hcrun does after every run on one device.
 * Nothing for a workload that keeps no history, or when the kernel cache
 * is off. */
void hc_job_record_run(hc_job_t *job, hc_device_t *dev);

/* Checks that the job can be split over the set (each device can run it,
 * no more parts than rows) without running anything: HC_ERR_PARAM naming
 * the problem, HC_ERR_UNSUPPORTED when a device cannot run it. */
hc_status_t hc_job_check_split(hc_job_t *job, hc_devset_t *set);

/* Runs the job over the set: one part per device, at once. Outputs are
 * fields of the set's first device; a field of the parts' rows keeps them
 * with the parts until it is first used (its buffer, a read, a copy),
 * which gathers it there, and a split run that takes it as an input
 * before that gives each of its parts its rows straight from the parts
 * that computed them (a pipeline's stages on one set). Metrics, notes and
 * verification are
 * the workload's global ones; times are the run's (wall) and the slowest
 * part's (compute, device). When a part fails, every part stops at its
 * next exchange, everything is freed, and the error names the device that
 * failed. A set of one device, or a workload that does not split, runs as
 * hc_job_run on the first device (with a note saying so). */
hc_status_t hc_job_run_split(hc_job_t *job, hc_devset_t *set, uint32_t flags);

/* What each part did in the set's last run. The idle, halo and collective
 * figures count from the workload's timed region: from its last
 * hc_device_timer_begin on the part's device, so that its warm-up and
 * set-up exchanges stay out of them. */
typedef struct hc_part_stats {
  uint32_t size;    /* sizeof(hc_part_stats_t), set by the caller */
  int64_t lo, hi;   /* rows [lo, hi) it owned */
  double weight;    /* its share, normalised */
  double compute_s; /* its workload's compute time */
  double device_s;  /* its device time */
  double idle_s;    /* waiting for other parts in exchanges and collectives */
  double halo_s;    /* halo exchanges: staging and copies (waits are idle) */
  uint64_t halo_bytes; /* halo bytes received */
  double collective_s; /* reductions, all-gathers, barriers (waits included) */
  uint64_t collectives;
  char device[48];            /* its device's name ("cuda:0"); across processes
                                 (hc/transport.h) the device of the process that ran it */
  uint64_t halo_peer_bytes;   /* of halo_bytes, those copied device to device
                                 (the backend's peer copy, not host staging) */
  uint64_t halo_direct_bytes; /* of halo_bytes, those the transport moved in
                                 place, from and to the field's own memory
                                 (not host staging: takes_memory) */
} hc_part_stats_t;

/* Parts of the last run (0: it did not split). */
uint32_t hc_devset_parts(const hc_devset_t *set);
hc_status_t hc_devset_part_stats(const hc_devset_t *set, uint32_t i,
                                 hc_part_stats_t *out);
/* Whether the last split run beat the best single device, as far as the
 * performance history knows: the time the device of the set with the
 * highest rate for this configuration would take alone (rows over its
 * rate, measured before this run), with *device its name; -1 when the
 * last run did not split or some device has no figure yet, with *device
 * saying why. Compare with the run's compute time (hc_job_times). */
double hc_devset_best_single(const hc_devset_t *set, const char **device);
/* How the last run was planned ("split 2 parts by weight ...", or why it
 * ran on one device); "" before a run. */
const char *hc_devset_plan(const hc_devset_t *set);

/* ---------------------------------------------------- inside a part's run */

/* The job's part, or NULL when the job runs whole. */
hc_part_t *hc_job_part(const hc_job_t *job);
uint32_t hc_part_index(const hc_part_t *part);
uint32_t hc_part_count(const hc_part_t *part);
/* Global extent of axis 0 (the split's rows). */
int64_t hc_part_global_rows(const hc_part_t *part);
/* Rows [lo, hi) this part owns. */
void hc_part_range(const hc_part_t *part, int64_t *lo, int64_t *hi);
/* Ghost rows below lo and above hi: the split's halo where there is a
 * neighbour on that side, 0 at the ends of axis 0. A part's field is laid
 * out along axis 0 as [below | own rows | above]. */
uint32_t hc_part_halo_below(const hc_part_t *part);
uint32_t hc_part_halo_above(const hc_part_t *part);

/* Fills the ghost rows of f (laid out as above, axis 0 slowest) from the
 * neighbours' own rows. Every part must call it, with fields of the same
 * dtype and row size. */
hc_status_t hc_part_halo_exchange(hc_part_t *part, hc_field_t *f);
/* hc_part_halo_exchange in two halves, so that the part computes while
 * its halo is on the way: begin takes the rows the neighbours need (they
 * must be current: it waits for the device's queued work) and starts
 * sending them; end fills the ghost rows and returns once the neighbours
 * have what they need. Between the two the part may queue and run work
 * that neither reads its ghost rows nor writes the rows it gives (its
 * first and last halo rows of own rows), and makes no other exchange or
 * collective. Every part calls both, on fields laid out as above; a
 * part's end without its begin is HC_ERR_INVALID_ARG. */
hc_status_t hc_part_halo_exchange_begin(hc_part_t *part, hc_field_t *f);
hc_status_t hc_part_halo_exchange_end(hc_part_t *part, hc_field_t *f);
/* Whether the job, a part of a split run, should overlap its halo
 * exchanges with its computation (the halves above): HC_SPLIT_OVERLAP,
 * whose default (auto) says yes on GPUs and accelerators, whose kernels
 * run while the host waits for the exchange, and no on cpu devices, whose
 * launches return when the work is done. 0 for a job that is not split. */
int hc_job_split_overlap(const hc_job_t *job);
/* The same for a field every part holds whole (a replicated split whose
 * parts each update their own rows of it, as multigrid's levels): this
 * part's rows [lo, hi) along axis 0 are current; afterwards its `width`
 * rows on each side that has a neighbour, [lo - width, lo) and [hi, hi +
 * width), are the neighbours' current ones. Every part calls it, each
 * with its own rows (adjacent: the part below's hi is this part's lo). */
hc_status_t hc_part_halo_exchange_rows(hc_part_t *part, hc_field_t *f,
                                       int64_t lo, int64_t hi, uint32_t width);

/* Moves rows between neighbouring parts so that each part's rows follow
 * its measured speed (docs/partition.md, "Rows that move while the parts
 * run"). Every part calls it at the same points of its run (a
 * collective), with its fields in the same order and the same
 * windows_left: how many more stretches of work like the one since the
 * last call the run has at most (1 when it cannot tell). In a slab split
 * each field is laid out as the part's [below | own rows | above], ghost
 * rows current; in a replicated split each is held whole (every row of
 * axis 0), its own rows and `width` rows on each side that has a
 * neighbour current.
 * The first call, and the first after a move, start measuring; each other
 * takes every part's rows and own work since then (its time less its
 * waits for the others and these calls) and moves rows when that promises
 * the slowest part at least 10 % less time and, over the windows left,
 * twice what the last move cost. Then *moved is 1 on every part, hc_part_range
 * gives the new rows, a field held whole has its new own rows and the
 * `width` rows around them current, and a slab field has been replaced
 * by one of the new layout (own and ghost rows current). Every row comes
 * from its previous owner; parts keep at least the split's min_rows, and
 * rows go only to a neighbour, half the way to the measured shares each
 * time. Nothing moves with HC_SPLIT_REBALANCE=off, across backends
 * unless it is on, or inside a process that drives several devices of a
 * split over processes.
 * A replaced field is destroyed, except one whose bit k is set in
 * `borrowed` (fields[k] is not the caller's to free or write, such as a
 * job's input): it is replaced by a new field of the new rows, even when
 * held whole, and left as it was; the new one is the caller's. At most 32
 * fields. */
hc_status_t hc_part_rebalance(hc_part_t *part, hc_field_t **fields[],
                              uint32_t nfields, uint32_t borrowed,
                              uint32_t width, double windows_left, int *moved);

/* Replaces *f, a field of this part holding either every row of axis 0
 * (a replicated split) or its rows laid out as [below | own rows | above]
 * (a slab split), by a new field on the same device holding only the own
 * rows [lo, hi): what a part's run() hands over as an output, which the
 * core gathers. Keeps dtype, the other axes, name, spacing and origin;
 * on failure *f is left as it was. Nothing to do when part is NULL. */
hc_status_t hc_part_own_rows(const hc_part_t *part, hc_field_t **f);

typedef enum hc_reduce_op {
  HC_REDUCE_SUM = 0,
  HC_REDUCE_MIN = 1,
  HC_REDUCE_MAX = 2,
  HC_REDUCE_L2 =
      3 /* each part gives its own L2 norm; the result is the whole's */
} hc_reduce_op_t;

/* The most values one reduction takes. */
#define HC_PART_REDUCE_MAX 16
/* Replaces values[0..n) by their reduction over the parts, in double,
 * combined in part order (every part gets the same bits). */
hc_status_t hc_part_allreduce(hc_part_t *part, hc_reduce_op_t op,
                              double *values, uint32_t n);
/* Concatenates every part's `bytes` bytes (sizes may differ) into all, in
 * part order; *total (may be NULL) gets the sum. HC_ERR_INVALID_ARG when it
 * exceeds capacity. */
hc_status_t hc_part_allgather(hc_part_t *part, const void *mine, size_t bytes,
                              void *all, size_t capacity, size_t *total);
hc_status_t hc_part_barrier(hc_part_t *part);
/* A replicated split's all-gather on the device (HC_SPLIT_REPLICATED):
 * buf holds row_bytes for every item, this part's rows [lo, hi) current;
 * afterwards every part's buf holds every part's rows. Between parts of
 * one process on one backend with a peer copy each part copies the others'
 * rows device to device; otherwise the rows go through host memory and
 * the transport (hc_part_allgather). Every part calls it. */
hc_status_t hc_part_allgather_rows(hc_part_t *part, hc_buffer_t *buf,
                                   size_t row_bytes);

#ifdef __cplusplus
}
#endif
#endif
