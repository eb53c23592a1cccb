/* A test workload that splits (slabs of rows, two ghost rows) and calls
 * the part API the way a workload should and the ways it should not: an
 * exchange's end without its begin, a second begin, an end on another
 * field, a field of the wrong shape, hc_part_own_rows on a field that is
 * neither whole nor the part's slab. Each misuse must be refused with
 * HC_ERR_INVALID_ARG and leave the split run working: the exchange that
 * follows fills the ghost rows with the neighbours' rows.
 *
 * u[r][c] = 1000 r + c over rows x cols (global row r); metrics (reduced
 * over the parts, 1 where every part saw what it should): refused (every
 * misuse refused), ghosts (the ghost rows hold the neighbours' rows after
 * the exchange), cores (the most cores a part's thread may run on) and
 * core_sum (the sum over the parts of the core each ran on: where the
 * backend binds its thread, which core that is). Output u: the parts' own
 * rows, gathered. With moves=N the parts then work N windows in
 * proportion to their rows and call hc_part_rebalance after each (rows
 * move as HC_SPLIT_REBALANCE says), with u and a borrowed field; metrics
 * moves (the calls that moved rows) and moved_right (1 where after every
 * move both hold their new rows' values and the borrowed one is as it
 * was). bad_move=1 adds a field of the wrong shape to those calls, which
 * a move must refuse; whole=1 splits with every part holding every row (a
 * replicated split, no ghost rows). calibrate= is
 * what its split declares as a short calibrating run (half the work), so
 * that a test can give it parameters it refuses. */
#include <hc/partition.h>
#include <hc/plugin.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const hc_param_spec_t params[] = {
    {"rows", HC_PARAM_INT, 0, "40", 4, 1e6, NULL, "rows (axis 0, split)"},
    {"cols", HC_PARAM_INT, 0, "8", 1, 1e6, NULL, "columns"},
    {"calibrate", HC_PARAM_STRING, 0, "", 1, 0, NULL, "the split's calibrating run (\"\": none)"},
    {"moves", HC_PARAM_INT, 0, "0", 0, 1000, NULL, "windows of work each followed by hc_part_rebalance"},
    {"bad_move", HC_PARAM_INT, 0, "0", 0, 1, NULL, "1: hc_part_rebalance also gets a field of the wrong shape"},
    {"whole", HC_PARAM_INT, 0, "0", 0, 1, NULL, "1: a replicated split (every part holds every row)"},
};

static const hc_port_spec_t outputs[] = {
    {"u", HC_DTYPE_BIT(HC_F64), 2, 2, HC_PORT_PRIMARY, "u[r][c] = 1000 r + c"},
};

static hc_status_t parts_split(const hc_job_t *job, hc_split_t *split) {
  const int whole = (int)hc_job_int(job, "whole");
  split->kind = whole ? HC_SPLIT_REPLICATED : HC_SPLIT_SLABS;
  split->rows = hc_job_int(job, "rows");
  split->halo = whole ? 0 : 2;
  split->min_rows = 2;
  if (HC_SPLIT_HAS_CALIBRATE(split)) {
    snprintf(split->calibrate, sizeof split->calibrate, "%s", hc_job_string(job, "calibrate"));
    split->calibrate_work = 0.5;
  }
  return HC_OK;
}

/* A field of `rows` rows whose row i holds global row first + i. */
static hc_status_t make_rows(hc_device_t *dev, int64_t rows, int64_t cols, int64_t first, hc_field_t **out) {
  int64_t shape[2] = {rows, cols};
  double *h = malloc((size_t)(rows * cols) * sizeof *h);
  if (!h) return hc_error(HC_ERR_NO_MEMORY, "parts: out of host memory");
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) h[r * cols + c] = 1000.0 * (double)(first + r) + (double)c;
  hc_status_t st = hc_field_create(dev, HC_F64, 2, shape, out);
  if (st == HC_OK) st = hc_field_write(*out, h);
  free(h);
  return st;
}

/* 1 when st is HC_ERR_INVALID_ARG (a refused misuse). */
static int refused(hc_status_t st) { return st == HC_ERR_INVALID_ARG; }

/* The misuses, then the exchange; *ok_refused and *ok_ghosts say how it went. */
static hc_status_t exercise(hc_part_t *part, hc_field_t *u, hc_field_t *twin, hc_field_t *other, double *ok_refused,
                            double *ok_ghosts) {
  int ok = refused(hc_part_halo_exchange_end(part, u));    /* end without begin */
  ok &= refused(hc_part_halo_exchange_begin(part, other)); /* wrong shape */
  ok &= refused(hc_part_halo_exchange(part, other));       /* wrong shape */
  hc_field_t *narrowed = other;
  ok &= refused(hc_part_own_rows(part, &narrowed)) && narrowed == other; /* left as it was */
  hc_status_t st = hc_part_halo_exchange_begin(part, u);
  if (st != HC_OK) return st;
  ok &= refused(hc_part_halo_exchange_begin(part, u));  /* a second begin */
  ok &= refused(hc_part_halo_exchange_end(part, twin)); /* another field's end */
  if ((st = hc_part_halo_exchange_end(part, u)) != HC_OK) return st;
  *ok_refused = ok;
  const int64_t *shape = hc_field_shape(u), rows = shape[0], cols = shape[1];
  double *h = malloc((size_t)(rows * cols) * sizeof *h);
  if (!h) return hc_error(HC_ERR_NO_MEMORY, "parts: out of host memory");
  int64_t lo;
  hc_part_range(part, &lo, NULL);
  const int64_t first = lo - hc_part_halo_below(part);
  int good = (st = hc_field_read(u, h)) == HC_OK;
  for (int64_t r = 0; good && r < rows; r++)
    for (int64_t c = 0; c < cols; c++) good &= h[r * cols + c] == 1000.0 * (double)(first + r) + (double)c;
  free(h);
  *ok_ghosts = good;
  return st;
}

/* 1 when every row i of f holds global row first + i. */
static int holds_rows(hc_field_t *f, int64_t first, hc_status_t *st) {
  const int64_t *shape = hc_field_shape(f), rows = shape[0], cols = shape[1];
  double *h = malloc((size_t)(rows * cols) * sizeof *h);
  if (!h) {
    *st = hc_error(HC_ERR_NO_MEMORY, "parts: out of host memory");
    return 0;
  }
  int good = (*st = hc_field_read(f, h)) == HC_OK;
  for (int64_t r = 0; good && r < rows; r++)
    for (int64_t c = 0; c < cols; c++) good &= h[r * cols + c] == 1000.0 * (double)(first + r) + (double)c;
  free(h);
  return good;
}

/* moves= windows of work (a sleep of 100 us per own row, so that alike
 * devices take time in proportion to their rows), each followed by
 * hc_part_rebalance with u and a borrowed twin (and `other`, of the wrong
 * shape, with bad_move=1). */
static hc_status_t move_rows(hc_job_t *job, hc_part_t *part, hc_field_t **u, hc_field_t *other, double *moves,
                             double *right) {
  const int64_t windows = hc_job_int(job, "moves");
  const int whole = (int)hc_job_int(job, "whole"), bad = (int)hc_job_int(job, "bad_move");
  const int64_t *shape = hc_field_shape(*u);
  int64_t lo, hi;
  hc_part_range(part, &lo, &hi);
  const int64_t first0 = whole ? 0 : lo - hc_part_halo_below(part);
  hc_field_t *lent0 = NULL; /* the borrowed field: the caller's, never freed nor written by the move */
  hc_status_t st = make_rows(hc_field_device(*u), shape[0], shape[1], first0, &lent0);
  hc_field_t *lent = lent0;
  int good = 1;
  for (int64_t w = 0; w < windows && st == HC_OK; w++) {
    hc_part_range(part, &lo, &hi);
    const int64_t us = 100 * (hi - lo);
    nanosleep(&(struct timespec){.tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000}, NULL);
    hc_field_t **fields[3] = {&other, u, &lent};
    /* lent0 goes in borrowed; the copy an earlier move made is the part's
     * own, replaced and destroyed by the next */
    int moved = 0;
    st = hc_part_rebalance(part, fields + !bad, bad ? 3 : 2, (lent == lent0) << (bad ? 2 : 1), whole,
                           (double)(windows - w), &moved);
    if (st != HC_OK) break;
    if (!moved) continue;
    *moves += 1;
    hc_part_range(part, &lo, &hi);
    const int64_t first = whole ? 0 : lo - hc_part_halo_below(part);
    good &=
        lent != lent0 && holds_rows(*u, first, &st) && holds_rows(lent, first, &st) && holds_rows(lent0, first0, &st);
  }
  if (lent != lent0) hc_field_destroy(lent);
  hc_field_destroy(lent0);
  *right = good;
  return st;
}

static hc_status_t parts_run(hc_job_t *job) {
  hc_device_t *dev = hc_job_device(job);
  hc_part_t *part = hc_job_part(job);
  const int64_t cols = hc_job_int(job, "cols");
  const int64_t rows = hc_job_int(job, "rows");
  const int whole = (int)hc_job_int(job, "whole");
  int64_t lo = 0, hi = rows;
  hc_part_range(part, &lo, &hi);
  const uint32_t below = hc_part_halo_below(part), above = hc_part_halo_above(part);
  hc_field_t *u = NULL, *twin = NULL, *other = NULL;
  /* Every row, or the slab with its ghost rows; the ghost rows start
   * wrong (-1). */
  hc_status_t st =
      whole ? make_rows(dev, rows, cols, 0, &u) : make_rows(dev, hi - lo + below + above, cols, lo - below, &u);
  if (st == HC_OK && part) {
    static const double wrong = -1;
    const size_t row = (size_t)cols * sizeof(double);
    if (below) st = hc_buffer_fill(hc_field_buffer(u), 0, &wrong, sizeof wrong, below * row);
    if (st == HC_OK && above)
      st = hc_buffer_fill(hc_field_buffer(u), (size_t)(hi - lo + below) * row, &wrong, sizeof wrong, above * row);
  }
  if (st == HC_OK) st = make_rows(dev, hi - lo + below + above, cols, 0, &twin);
  /* Neither the slab's rows nor the whole field's, whatever the shares:
   * a slab of 37 of 40 rows with its two ghost rows has all 40. */
  if (st == HC_OK) st = make_rows(dev, hi - lo + below + above + rows, cols, 0, &other);
  double v[2] = {1, 1};
  if (st == HC_OK && part && !whole) st = exercise(part, u, twin, other, &v[0], &v[1]);
  double moved[2] = {0, 1}; /* moves, moved_right */
  if (st == HC_OK && part && hc_job_int(job, "moves")) st = move_rows(job, part, &u, other, &moved[0], &moved[1]);
  if (st == HC_OK && part) st = hc_part_allreduce(part, HC_REDUCE_MIN, v, 2);
  if (st == HC_OK && part) st = hc_part_allreduce(part, HC_REDUCE_MIN, moved, 2);
  cpu_set_t mine;
  double cores = sched_getaffinity(0, sizeof mine, &mine) == 0 ? CPU_COUNT(&mine) : -1, core = sched_getcpu();
  if (st == HC_OK && part) st = hc_part_allreduce(part, HC_REDUCE_MAX, &cores, 1);
  if (st == HC_OK && part) st = hc_part_allreduce(part, HC_REDUCE_SUM, &core, 1);
  if (st == HC_OK) {
    hc_job_add_metric(job, "refused", v[0], "");
    hc_job_add_metric(job, "ghosts", v[1], "");
    hc_job_add_metric(job, "cores", cores, "");
    hc_job_add_metric(job, "core_sum", core, "");
    hc_job_add_metric(job, "moves", moved[0], "");
    hc_job_add_metric(job, "moved_right", moved[1], "");
    st = hc_part_own_rows(part, &u);
  }
  if (st == HC_OK) {
    st = hc_job_set_output(job, "u", u);
    u = NULL;
  }
  hc_field_destroy(u);
  hc_field_destroy(twin);
  hc_field_destroy(other);
  return st;
}

static const hc_workload_ops_t parts_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_OUTPUTS(outputs),
    .run = parts_run,
    .split = parts_split,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "parts",
                        "1.0",
                        "test workload: the part API, used rightly and wrongly",
                        &parts_ops};
