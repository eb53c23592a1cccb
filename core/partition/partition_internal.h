/* The partition layer's own declarations: a device set, a part, and what
 * the files of core/partition share. */
#ifndef HC_PARTITION_INTERNAL_H
#define HC_PARTITION_INTERNAL_H

#include "hc/transport.h"
#include "layer.h"

struct hc_devset {
  hc_context_t *ctx;
  uint32_t n;
  hc_device_t *dev[HC_DEVSET_MAX];
  hc_transport_t *tr; /* a transport's one part (hc_devset_set_transport), or NULL */
  double *weight;     /* as given, one per part; NULL: equal shares */
  uint32_t nweights;
  int auto_shares; /* shares from the performance history (history.c) */
  /* The last run. */
  uint32_t nparts;
  hc_part_stats_t *stats; /* nparts of them */
  char **in_parts;        /* outputs left with their parts (too large to gather) */
  uint32_t nin_parts;
  int64_t lo, hi, rows; /* this process's rows of them, of rows */
  char plan[512];
  /* The best single device the history predicts for the last run (the
   * one with the highest rate for its configuration) and its time; < 0
   * with why in best_single when some device has no figure. */
  char best_single[128];
  double best_single_s;
};

/* One part's side of a halo exchange (the transport's exchange, widened
 * for parts in one process). Host rows: to_lo/to_hi go to the neighbours,
 * from_lo/from_hi receive theirs. A side marked peer moves device to
 * device instead: the part copies its neighbour's boundary rows out of the
 * neighbour's buffer into its own halo rows (hc_buffer_copy), and that
 * side's host pointers are unused. Offsets are bytes into buf. */
typedef struct halo_sides {
  const void *to_lo, *to_hi;
  void *from_lo, *from_hi;
  size_t lo_bytes, hi_bytes;
  uint8_t peer_lo, peer_hi;
  hc_buffer_t *buf;
  size_t own_lo_off, own_hi_off;   /* my first and last own rows: what the neighbours take */
  size_t halo_lo_off, halo_hi_off; /* where theirs land */
} halo_sides_t;

struct hc_part {
  hc_context_t *ctx; /* for its trace events */
  uint32_t index, count;
  int64_t rows, lo, hi;
  uint32_t halo, below, above;
  uint32_t min_rows;  /* the split's fewest rows per part */
  uint8_t fixed_rows; /* its rows cannot move (a bridge's part: hc_part_rebalance) */
  hc_transport_t *tr;
  hc_part_stats_t stats;
  /* The workload's timed region begins with its device's timer span
   * (hc_device_timer_begin): the reported figures count from the span
   * that began last, whose number spans_seen holds, at the running totals
   * timed_base and timed_in_ops then (part.c hc__part_span). */
  hc_device_t *dev;
  uint32_t spans_seen;
  hc_part_stats_t timed_base;
  double timed_in_ops;
  char *stage; /* host staging of halo rows: 4 areas of stage_area bytes */
  size_t stage_area;
  hc_device_t *stage_dev; /* whose hc_host_alloc gave it */
  /* In-process runs: the neighbour below / above is on this part's
   * backend, which has a peer copy; that halo moves device to device. */
  uint8_t peer_below, peer_above;
  uint8_t peer_all; /* every part's device is a peer of this one's */
  /* The time spent inside exchanges and collectives, running total (for
   * the history: split_run.c record_parts). */
  double in_ops_s;
  /* The halo exchange begun (hc_part_halo_exchange_begin) and not ended. */
  struct {
    int active;
    int deferred; /* the transport has no exchange_begin: it all runs at the end */
    hc_field_t *f;
    halo_sides_t h;
    size_t staged_lo, staged_hi;
    int direct; /* the transport moves the rows in place (takes_memory) */
  } x;
  /* hc_part_rebalance: what it measures since it started (or rows last
   * moved): from t0, with the waits from idle0 and its own calls'
   * time (excluded) left out, over `windows` calls; this part's rate
   * (rows per second of its own work), the time its last move of rows
   * took, and the moves made. Its work per row (row_s, 0 until known)
   * comes from its window before a move (fit_rows rows, fit_window
   * seconds; fit_point: not yet used) and the one after. never: every
   * part learnt from the figures that no row can move in this run (the
   * calls return at once from then on). */
  struct {
    int started, moved_last, fit_point, never;
    uint32_t windows;
    int64_t fit_rows;
    double t0, idle0, excluded, rate, move_s, row_s, fit_window;
    uint32_t moves;
    int64_t rows_moved;
  } balance;
};
/* Releases the part's staging memory. */
void hc__part_free_stage(hc_part_t *part);
/* Called first by every exchange and collective: where dev's timer span
 * began since the part's last one, the timed region starts here. */
void hc__part_span(hc_part_t *part);
/* The part's stats, and its time in exchanges and collectives, in the
 * workload's timed region (all of them where it began none); lo, hi,
 * weight, times and device are left for the caller. */
void hc__part_timed_stats(hc_part_t *part, hc_part_stats_t *out, double *in_ops_s);

/* The parts a split over the set has: its devices, or the transport's parts. */
uint32_t hc__devset_part_count(const hc_devset_t *set);

/* How a run over a set is split (split_plan.c): the workload's split and
 * each part's rows and share. */
typedef struct split_plan {
  uint32_t nparts; /* 1: runs whole on the set's device dev[0] */
  int64_t *lo, *hi;
  double *share;
  hc_split_t split;
  uint32_t dev[HC_DEVSET_MAX]; /* threads: the set's device of each part */
  char shares[200];            /* how the shares were chosen, for the plan line */
  int from_history;            /* the history chose the devices and shares */
} split_plan_t;
/* Plans job over set: every device of the set can run it, the workload's
 * split, rows by weight. HC_ERR_PARAM naming the problem otherwise. */
hc_status_t hc__split_plan(hc_job_t *job, hc_devset_t *set, split_plan_t *pl);
void hc__split_plan_free(split_plan_t *pl);
/* New shares from weight[] (one per part, all > 0) and the rows they give. */
void hc__split_plan_reshare(split_plan_t *pl, const double *weight);
/* A plan of rows [lo, hi) of the plan whole over the set's devices
 * use[0..n) by weight[] (n of them, all > 0): as many parts as have
 * whole's fewest rows each, at most n. */
hc_status_t hc__split_plan_rows(const split_plan_t *whole, int64_t lo, int64_t hi, const double *weight,
                                const uint32_t *use, uint32_t n, split_plan_t *pl);
/* Fills the part's place in the plan (its transport and stats too). */
void hc__part_init(hc_part_t *part, hc_context_t *ctx, const split_plan_t *pl, uint32_t index, hc_transport_t *tr,
                   hc_device_t *dev);
/* A part's input fields on its own device (part_inputs.c): placed on the
 * job (or the part's copy of it) before the part runs, the job's own given
 * back after. */
#define PART_INPUTS_MAX 16
typedef struct part_inputs {
  uint32_t n;
  uint32_t port[PART_INPUTS_MAX]; /* input port index */
  hc_field_t *whole[PART_INPUTS_MAX], *mine[PART_INPUTS_MAX];
} part_inputs_t;
hc_status_t hc__part_inputs_place(hc_job_t *job, const split_plan_t *pl, const hc_part_t *part, hc_device_t *dev,
                                  part_inputs_t *pi);
void hc__part_inputs_restore(hc_job_t *job, part_inputs_t *pi);
/* A new field on f's device like f (dtype, other axes, name, spacing,
 * origin) with `rows` rows along axis 0, holding f's rows [from, from + n)
 * at row `at`; its other rows are not written. */
hc_status_t hc__field_rows_copy(const hc_field_t *f, int64_t rows, int64_t at, int64_t from, int64_t n,
                                hc_field_t **out);
/* A note on the job saying how often the part's rows moved, if they did
 * (every part knows the same moves). */
void hc__part_note_moves(const hc_part_t *part, hc_job_t *job);
/* The set's plan line after a split run. */
void hc__devset_describe(hc_devset_t *set, const split_plan_t *pl, const hc_transport_t *tr);

/* The performance history (history.c). Records a part's rate (rows per
 * second of its own work) and exchange overhead (seconds; < 0: not
 * measured) for the job's configuration on dev. */
void hc__history_record(hc_job_t *job, int64_t rows, hc_device_t *dev, double rate, double overhead);
/* The compute time of a split over the set's devices use[0..n) (in part
 * order), for the plan's check of its model against what ran. */
void hc__history_record_split(hc_job_t *job, int64_t rows, const hc_devset_t *set, const uint32_t *use, uint32_t n,
                              double compute_s);
/* A part's sample over the workload's timed region (compute_s long):
 * its rate and exchange overhead, none when its own work is too small to
 * measure (HISTORY_MIN_BUSY of the region). */
void hc__history_record_part(hc_job_t *job, int64_t rows, hc_device_t *dev, hc_part_t *p, double compute_s);
/* The device's figure for the job: the median rate of its samples, 0 when
 * it has none. */
double hc__history_rate(hc_job_t *job, int64_t rows, const hc_device_t *dev);
/* Short calibrating runs (split->calibrate) of the job on each device of
 * the set that has no figure for its configuration, alone, one after
 * another; their rates, scaled by split->calibrate_work, stand in for the
 * devices' figures until their own runs give some. ran: "" when none ran,
 * else each device with its run's compute and wall time. Nothing when
 * the workload declares no short run or the history is off; a failed
 * run's error names the device. */
hc_status_t hc__history_calibrate(hc_job_t *job, const hc_devset_t *set, const hc_split_t *split, char *ran,
                                  size_t ran_size);
/* A copy of the job (the parameters given, the same inputs), not run. */
hc_status_t hc__job_clone(hc_job_t *job, hc_job_t **out);
/* A part's own work (compute less idle and exchanges) below this fraction
 * of its compute time is not a sample. */
#define HISTORY_MIN_BUSY 0.001
/* With a figure for every device of the set: weight[] (one per device)
 * from the rates, use[0..*nuse) the devices to run on (its predictions
 * are for run_rows of the configuration's rows), why the plan, and 1;
 * else 0 with why saying what is missing, and weight[] the devices' declared
 * fp32 peaks where each declares one (left as it was otherwise). */
int hc__history_plan(hc_job_t *job, const hc_devset_t *set, int64_t rows, int64_t run_rows, double *weight,
                     uint32_t *use, uint32_t *nuse, char *why, size_t why_size);

/* Fills set->best_single and best_single_s for the job's configuration
 * (before the run, so that its own samples do not count). */
void hc__history_best_single(hc_job_t *job, hc_devset_t *set, int64_t rows);

/* 1 when the context's devices a and b run on the same hardware (one GPU
 * shown by two backends, the host's cores by two backends), with what
 * ("one device (PCI ...)", "the host's cores"). */
/* Whether the transport's ops table has `member` and sets it. */
#define TRANSPORT_HAS(t, member) \
  ((t)->ops->size >= offsetof(hc_transport_ops_t, member) + sizeof(t)->ops->member && (t)->ops->member)

int hc__shared_hardware(hc_context_t *ctx, uint32_t a, uint32_t b, char *what, size_t n);

/* Forgets which outputs the last run left in parts. */
void hc__devset_forget_outputs(hc_devset_t *set);

/* A run of the set's one part of a transport's split (split_ranks.c). */
/* planned: the planning's status (pl is valid only when it is HC_OK). */
hc_status_t hc__run_transport_part(hc_job_t *job, hc_devset_t *set, hc_status_t planned, split_plan_t *pl,
                                   uint32_t flags);

/* A process of a transport's split with several devices (rank_devices.c).
 * Plans the process's rows (part's) over its devices into local, and
 * learns from the other processes where its parts are among all:
 * *first of *total. left_out: the devices' calibrating runs, if any ran,
 * and why the history left some of them out, or "". */
hc_status_t hc__rank_plan_devices(hc_job_t *job, hc_devset_t *set, const split_plan_t *pl, const hc_part_t *part,
                                  split_plan_t *local, uint32_t *first, uint32_t *total, char *left_out, size_t n_left);
/* Runs local's parts as parts first .. of total (hc__split_threads over a
 * bridge); *stats gets their stats as parts of the whole split (share:
 * the process's of the whole), to be freed. */
hc_status_t hc__rank_run_devices(hc_job_t *job, hc_devset_t *set, const split_plan_t *local, uint32_t first,
                                 uint32_t total, uint32_t flags, double share, hc_part_stats_t **stats);

/* Parts as threads of this process. */
hc_status_t hc__transport_inproc_create(uint32_t nparts, hc_transport_t **out);

/* Runs pl's parts of job, one thread each, over tr: an in-process
 * transport of pl's parts, or (bridged) a bridge whose parts first ..
 * first + pl->nparts - 1 they are, served by this thread while they
 * run. Gathers the outputs over pl's rows on the set's first device into
 * job, with the slowest part's times, the first part's metrics and notes,
 * and each part's stats in set->stats; records each part's sample in the
 * history. */
hc_status_t hc__split_threads(hc_job_t *job, hc_devset_t *set, const split_plan_t *pl, hc_transport_t *tr, int bridged,
                              uint32_t first, uint32_t flags);

/* The transport of a process whose several devices are parts first ..
 * first + n - 1 of total over the outer transport (transport_bridge.c):
 * the parts' calls meet in this process, and hc__bridge_serve, on the
 * thread that may use outer, serves them until every part has called
 * hc__bridge_part_done. */
hc_status_t hc__transport_bridge_create(hc_transport_t *outer, uint32_t first, uint32_t n, uint32_t total,
                                        hc_transport_t **out);
void hc__bridge_serve(hc_transport_t *t);
void hc__bridge_part_done(hc_transport_t *t, uint32_t part);

/* The in-process exchange with peer sides, in two halves as the
 * transport's exchange_begin and exchange_end (h is copied); the
 * neighbours must agree on which sides are peer (HC_ERR_INTERNAL
 * otherwise). */
hc_status_t hc__inproc_exchange_begin(hc_transport_t *t, uint32_t part, const halo_sides_t *h);
hc_status_t hc__inproc_exchange_end(hc_transport_t *t, uint32_t part, double *waited_s);
/* The in-process all-gather of rows between peer parts: every part copies
 * the others' [off, off + bytes) of their buffers into the same range of
 * its own (hc_buffer_copy). */
hc_status_t hc__inproc_allgather_buffers(hc_transport_t *t, uint32_t part, hc_buffer_t *buf, size_t off, size_t bytes,
                                         double *waited_s);
/* Whether two devices of an in-process split exchange halos device to
 * device: one backend with a peer copy, and HC_SPLIT_PEER not 0. */
int hc__peer_halos(hc_device_t *a, hc_device_t *b);

#endif
