/* Rows that follow the parts' measured speed while a split runs
 * (hc_part_rebalance): the planned shares are a guess (the history's, or
 * equal), and a part whose device runs slower than planned, or slows down
 * mid-run (a core shared with another process, a busier memory node),
 * holds every other part back at each exchange. Every part gives its rows
 * and its own work since its rows last moved (the time less its waits for
 * the others); every part computes the same new boundaries from the same
 * figures, and rows move only between neighbours, through the transport's
 * halo exchange, so that any transport (threads, MPI ranks) carries them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

/* A move must promise at least this much less time for the slowest part
 * in a window like the last (below it the figures' noise would move rows
 * back and forth), and over the windows left at least twice what the
 * parts' last move took. */
#define REBALANCE_MIN_GAIN 0.10
#define REBALANCE_COST_FACTOR 2.0
/* What a move costs at least, per byte of the fields laid out as slabs:
 * each is made again at its new size (its pages touched anew) and its kept
 * rows copied, and the part then remakes what follows its rows (the bench
 * report's "rows that move" table shows what that costs a short run). */
#define REBALANCE_SLAB_BYTES_PER_S 1.0e9
/* Rows go half the way to the measured shares each time: one window's
 * figures may be off, and the next call corrects the rest. */
#define REBALANCE_STEP 0.5
/* Parts whose windows (two or more added up) differ by this factor move
 * rows once even when the rows-proportional model promises little (see
 * plan_moves). */
#define REBALANCE_PROBE 1.25

typedef struct {
  double busy_s;  /* its own work over the windows since rows last moved */
  double row_s;   /* a window's work per row, from its last two row counts (0: not known) */
  double fixed_s; /* a window's work that does not grow with its rows (with row_s) */
  double move_s;  /* what moving would cost it */
  int64_t rows;
  int32_t can_move; /* 0: this part's rows are fixed (a bridge's part, HC_SPLIT_REBALANCE=off) */
  int32_t mode;     /* HC_SPLIT_REBALANCE: 0 auto, 1 on, 3 always */
  uint32_t backend; /* a hash of its device's backend name */
  uint32_t pad;
} balance_fig_t;

/* A part's model of one window's work: fixed + rows * per_row. Until its
 * rows have moved once it is taken as proportional to its rows. */
static void window_model(const balance_fig_t *f, double windows, double *fixed, double *per_row) {
  const double window = f->busy_s / windows;
  if (f->row_s > 0) {
    *per_row = f->row_s;
    *fixed = f->fixed_s;
  } else {
    *per_row = window / (double)f->rows;
    *fixed = 0;
  }
}

/* FNV-1a of the backend part of a device name ("cpu" of "cpu:1"). */
static uint32_t backend_hash(const hc_device_t *dev) {
  uint32_t h = 2166136261u;
  for (const char *c = hc_device_name(dev); *c && *c != ':'; c++) h = (h ^ (uint8_t)*c) * 16777619u;
  return h;
}

/* Whether rows may ever move between these parts: not when one of them
 * keeps its rows (a bridge's part, HC_SPLIT_REBALANCE=off), nor between
 * devices of two backends, which may round differently, unless every part
 * allows it (by default the rows stay where they were planned, so that a
 * run repeats bit for bit). None of it changes during a run. */
static int rows_can_move(const balance_fig_t *fig, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (!fig[i].can_move || (fig[i].backend != fig[0].backend && !(fig[i].mode && fig[0].mode))) return 0;
  return 1;
}

/* New boundaries b[1..n-1] (b[0] = 0, b[n] = rows) from the figures (of
 * `windows` calls' work since the last move), or 0 when nothing should
 * move. old[] the current boundaries; every new one stays inside its two
 * parts' current rows, min_rows from their ends, so that each row (and
 * each ghost row) comes from a neighbour. The targets give every part the
 * same time per window under its model (fixed + rows * per_row). */
static int plan_moves(const balance_fig_t *fig, uint32_t n, const int64_t *old, int64_t min_rows, double windows,
                      double windows_left, int64_t *b) {
  double slowest = 0, fastest = INFINITY, move_s = 0, inv_sum = 0, fixed_sum = 0;
  int every_time = 1; /* HC_SPLIT_REBALANCE=always on every part: no gain or cost asked */
  int modelled = 0;   /* parts whose rows have moved once: a fixed cost is known */
  for (uint32_t i = 0; i < n; i++) {
    move_s = fmax(move_s, fig[i].move_s);
    if (!(fig[i].busy_s > 0) || fig[i].rows < 1) return 0;
    every_time &= fig[i].mode == 3;
    modelled += fig[i].row_s > 0;
    double fixed, per_row;
    window_model(&fig[i], windows, &fixed, &per_row);
    inv_sum += 1 / per_row;
    fixed_sum += fixed / per_row;
    slowest = fmax(slowest, fig[i].busy_s / windows);
    fastest = fmin(fastest, fig[i].busy_s / windows);
  }
  /* the common time T with sum_i (T - fixed_i) / per_row_i = all rows */
  const double total = (double)old[n], common = (total + fixed_sum) / inv_sum;
  double acc = 0;
  b[0] = 0;
  b[n] = old[n];
  for (uint32_t i = 0; i + 1 < n; i++) {
    double fixed, per_row;
    window_model(&fig[i], windows, &fixed, &per_row);
    const double target = (common - fixed) / per_row;
    acc += (double)fig[i].rows + REBALANCE_STEP * (target - (double)fig[i].rows);
    const int64_t v = (int64_t)llround(acc), lo = old[i] + min_rows, hi = old[i + 2] - min_rows;
    b[i + 1] = v < lo ? lo : v > hi ? hi : v;
  }
  int changed = 0;
  double predicted = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (b[i + 1] - b[i] < min_rows) return 0;
    changed |= b[i + 1] != old[i + 1];
    double fixed, per_row;
    window_model(&fig[i], windows, &fixed, &per_row);
    predicted = fmax(predicted, fixed + (double)(b[i + 1] - b[i]) * per_row);
  }
  const double saving = slowest - predicted; /* a window's */
  if (!changed || every_time) return changed;
  /* Before any part knows its fixed cost the model may call a part with
   * few rows slow per row: a clear imbalance, over two windows at least
   * (one may be noise), moves rows once anyway (the direction is right),
   * so that every part learns its own. */
  const int probe = !modelled && windows >= 2 && slowest > REBALANCE_PROBE * fastest;
  return saving > 0 && (saving > REBALANCE_MIN_GAIN * slowest || probe) &&
         saving * (windows_left > 1 ? windows_left : 1) > REBALANCE_COST_FACTOR * move_s;
}

/* Rows [a, b) ∩ [c, d) as [*lo, *hi) (empty: *hi <= *lo). */
static void overlap(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *lo, int64_t *hi) {
  *lo = a > c ? a : c;
  *hi = b < d ? b : d;
  if (*hi < *lo) *hi = *lo;
}

/* The rows of this part's new layout that its neighbours owned come from
 * them, and they take theirs from the rows it owned: src holds global rows
 * from src_first on, dst from dst_first on (the same buffer and first for
 * a field held whole), rb bytes a row; a new layout spans the own rows and
 * w rows on each side that has a neighbour. */
static hc_status_t trade_rows(hc_part_t *p, hc_buffer_t *src, int64_t src_first, hc_buffer_t *dst, int64_t dst_first,
                              size_t rb, const int64_t *old, const int64_t *b, uint32_t w, const char *name) {
  const uint32_t i = p->index;
  const int64_t first = b[i] - (i > 0 ? w : 0), last = b[i + 1] + (i + 1 < p->count ? w : 0);
  /* To each neighbour: my rows in its new layout; from it: its rows in mine. */
  int64_t s_lo[2] = {0, 0}, s_hi[2] = {0, 0}, r_lo[2] = {0, 0}, r_hi[2] = {0, 0};
  if (i > 0) {
    overlap(b[i - 1] - w, b[i] + w, old[i], old[i + 1], &s_lo[0], &s_hi[0]);
    overlap(first, last, old[i - 1], old[i], &r_lo[0], &r_hi[0]);
  }
  if (i + 1 < p->count) {
    overlap(b[i + 1] - w, b[i + 2] + w, old[i], old[i + 1], &s_lo[1], &s_hi[1]);
    overlap(first, last, old[i + 1], old[i + 2], &r_lo[1], &r_hi[1]);
  }
  /* The transports' exchange sends and receives as many bytes on a side:
   * each side carries the larger of the two ways. */
  size_t send_b[2], recv_b[2], side[2];
  for (int k = 0; k < 2; k++) {
    send_b[k] = (size_t)(s_hi[k] - s_lo[k]) * rb;
    recv_b[k] = (size_t)(r_hi[k] - r_lo[k]) * rb;
    side[k] = send_b[k] > recv_b[k] ? send_b[k] : recv_b[k];
  }
  char *host = calloc(2 * (side[0] + side[1]) + 1, 1);
  hc_status_t st = host ? HC_OK : hc_error(HC_ERR_NO_MEMORY, "hc_part_rebalance: cannot stage rows of '%s'", name);
  char *send[2] = {host, host ? host + side[0] : NULL};
  char *recv[2] = {host ? host + side[0] + side[1] : NULL, host ? host + 2 * side[0] + side[1] : NULL};
  for (int k = 0; k < 2 && st == HC_OK; k++)
    if (send_b[k]) st = hc_buffer_read(src, (size_t)(s_lo[k] - src_first) * rb, send[k], send_b[k]);
  /* every part exchanges, whatever failed here (the others wait for it) */
  if (st != HC_OK) p->tr->ops->abort(p->tr, p->index);
  hc_status_t ex = p->tr->ops->exchange(p->tr, p->index, send[0], st == HC_OK ? side[0] : 0, send[1],
                                        st == HC_OK ? side[1] : 0, recv[0], recv[1], &p->stats.idle_s);
  if (st == HC_OK) st = ex;
  for (int k = 0; k < 2 && st == HC_OK; k++)
    if (recv_b[k]) st = hc_buffer_write(dst, (size_t)(r_lo[k] - dst_first) * rb, recv[k], recv_b[k]);
  free(host);
  return st;
}

/* One field to the new rows. Held whole (a replicated split), it keeps its
 * buffer and takes the rows that change hands, and `width` rows around
 * the new own rows. Laid out as [below | own rows | above] (a slab split),
 * it is replaced by a field of the new layout: the rows this part owned
 * are copied on the device, the neighbours send the rows they owned. A
 * borrowed field is never written nor destroyed: a whole one is replaced
 * by a copy that then takes the rows. */
static hc_status_t move_field(hc_part_t *p, hc_field_t **f, int borrowed, const int64_t *old, const int64_t *b,
                              uint32_t width) {
  const uint32_t i = p->index, rank = hc_field_rank(*f);
  const int64_t *shape = hc_field_shape(*f);
  const int whole = p->halo == 0;
  if (rank < 1 || shape[0] != (whole ? p->rows : old[i + 1] - old[i] + p->below + p->above)) {
    p->tr->ops->abort(p->tr, p->index); /* the others wait in this move's exchange */
    return hc_error(HC_ERR_INVALID_ARG, "hc_part_rebalance: field '%s' has %lld rows along axis 0, part %u's %s %lld",
                    hc_field_name(*f), rank ? (long long)shape[0] : 0LL, i,
                    whole ? "replicated split holds every row:" : "slab with its ghost rows has",
                    (long long)(whole ? p->rows : old[i + 1] - old[i] + p->below + p->above));
  }
  const size_t rb = hc_field_bytes(*f) / (size_t)shape[0];
  /* the new layout's rows [first, last) and the old one's first row */
  const int64_t first = whole ? 0 : b[i] - p->below, last = whole ? p->rows : b[i + 1] + p->above;
  const int64_t ofirst = whole ? 0 : old[i] - p->below;
  const uint32_t w = whole ? width : p->halo;
  if (whole && !borrowed)
    return trade_rows(p, hc_field_buffer(*f), 0, hc_field_buffer(*f), 0, rb, old, b, w, hc_field_name(*f));
  int64_t lo = first, hi = last; /* kept: a whole copy, or the own rows that stay */
  if (!whole) overlap(first, last, old[i], old[i + 1], &lo, &hi);
  hc_field_t *g = NULL;
  hc_status_t st = hc__field_rows_copy(*f, last - first, lo - first, lo - ofirst, hi - lo, &g);
  if (st != HC_OK) p->tr->ops->abort(p->tr, p->index); /* before the exchange the others wait in */
  hc_status_t tr = trade_rows(p, hc_field_buffer(*f), ofirst, g ? hc_field_buffer(g) : NULL, first, rb, old, b, w,
                              hc_field_name(*f));
  if (st == HC_OK) st = tr;
  if (st != HC_OK) {
    hc_field_destroy(g);
    return st;
  }
  if (!borrowed) hc_field_destroy(*f);
  *f = g;
  return HC_OK;
}

HC_API hc_status_t hc_part_rebalance(hc_part_t *p, hc_field_t **fields[], uint32_t nfields, uint32_t borrowed,
                                     uint32_t width, double windows_left, int *moved) {
  if (moved) *moved = 0;
  if (nfields > 32) return hc_error(HC_ERR_INVALID_ARG, "hc_part_rebalance: %u fields, at most 32", nfields);
  if (!p || !moved || (nfields && !fields)) return hc_error(HC_ERR_INVALID_ARG, "hc_part_rebalance: NULL argument");
  for (uint32_t k = 0; k < nfields; k++)
    if (!fields[k] || !*fields[k]) return hc_error(HC_ERR_INVALID_ARG, "hc_part_rebalance: field %u is NULL", k);
  if (p->balance.never) return HC_OK;
  hc__part_span(p);
  /* The first call only starts measuring, and so does the first after a
   * move: the time since holds the part's remaking of what follows its
   * rows (every part knows the same moves, so every part skips alike).
   * Until rows move, the figures add up over the calls: a straggler that
   * stays one shows through the noise of single windows. */
  const double now = hc_now(), idle_now = p->stats.idle_s;
  if (!p->balance.started || p->balance.moved_last) {
    p->balance.started = 1;
    p->balance.moved_last = 0;
    p->balance.t0 = now;
    p->balance.idle0 = idle_now;
    p->balance.excluded = 0;
    p->balance.windows = 0;
    return HC_OK;
  }
  p->balance.windows++;
  const double t0 = now;
  long long mode = 0;                                                /* auto, on, off, always */
  if (hc_config_int("HC_SPLIT_REBALANCE", &mode) != HC_OK) mode = 0; /* checked when the context was made */
  /* What moving would cost this part: the last move's time, and on a
   * device whose memory is the host's at least what remaking its slab
   * fields takes (fresh pages, a copy on the part's own cores). */
  double slab_bytes = 0;
  for (uint32_t k = 0; k < nfields && p->halo > 0; k++) slab_bytes += (double)hc_field_bytes(*fields[k]);
  const int host_memory = nfields && hc_device_info(hc_field_device(*fields[0]))->type == HC_DEVICE_CPU;
  const double busy = now - p->balance.t0 - (idle_now - p->balance.idle0) - p->balance.excluded;
  const int64_t rows = p->hi - p->lo;
  /* The work per row from this part's rows before and after its last move. */
  if (p->balance.fit_point && rows != p->balance.fit_rows) {
    const double per_row = (busy / p->balance.windows - p->balance.fit_window) / (double)(rows - p->balance.fit_rows);
    if (per_row > 0 && isfinite(per_row)) p->balance.row_s = per_row;
  }
  p->balance.fit_point = 0;
  const double window = busy / p->balance.windows;
  balance_fig_t mine = {busy,
                        p->balance.row_s,
                        p->balance.row_s > 0 ? fmax(0, window - (double)rows * p->balance.row_s) : 0,
                        fmax(p->balance.move_s, host_memory ? slab_bytes / REBALANCE_SLAB_BYTES_PER_S : 0),
                        rows,
                        mode != 2 && !p->fixed_rows,
                        mode == 1 || mode == 3 ? (int32_t)mode : 0,
                        nfields ? backend_hash(hc_field_device(*fields[0])) : 0,
                        0};
  if (mine.busy_s > 0) p->balance.rate = (double)mine.rows / mine.busy_s;
  balance_fig_t *fig = malloc(p->count * sizeof *fig);
  int64_t *old = malloc((p->count + 1) * sizeof *old), *b = malloc((p->count + 1) * sizeof *b);
  hc_status_t st = fig && old && b ? HC_OK : hc_error(HC_ERR_NO_MEMORY, "hc_part_rebalance: out of host memory");
  if (st != HC_OK) p->tr->ops->abort(p->tr, p->index);
  size_t total = 0;
  hc_status_t ag = p->tr->ops->allgather(p->tr, p->index, &mine, st == HC_OK ? sizeof mine : 0, fig,
                                         st == HC_OK ? p->count * sizeof *fig : 0, &total, &p->stats.idle_s);
  if (st == HC_OK) st = ag;
  if (st == HC_OK && total != p->count * sizeof *fig)
    st = hc_error(HC_ERR_INTERNAL, "hc_part_rebalance: the parts gave %zu bytes of figures, not %zu", total,
                  p->count * sizeof *fig);
  int go = 0;
  if (st == HC_OK) {
    old[0] = 0;
    for (uint32_t i = 0; i < p->count; i++) old[i + 1] = old[i] + fig[i].rows;
    /* a new boundary stays min_rows inside the old rows of both its parts,
     * so that every row a part needs, ghost rows too, is a neighbour's */
    int64_t min_rows = p->min_rows > p->halo ? p->min_rows : p->halo;
    if (min_rows < (int64_t)width) min_rows = width;
    p->balance.never = !rows_can_move(fig, p->count);
    go = !p->balance.never && old[p->count] == p->rows &&
         plan_moves(fig, p->count, old, min_rows > 0 ? min_rows : 1, p->balance.windows, windows_left, b);
  }
  const double move0 = hc_now();
  for (uint32_t k = 0; k < nfields && st == HC_OK && go; k++)
    st = move_field(p, fields[k], (borrowed >> k) & 1u, old, b, width);
  if (st == HC_OK && go) {
    p->balance.move_s = hc_now() - move0;
    p->balance.moved_last = 1;
    p->balance.fit_point = 1; /* this window against the next, for the work per row */
    p->balance.fit_rows = rows;
    p->balance.fit_window = window;
    int64_t rows_moved = 0;
    for (uint32_t i = 1; i < p->count; i++) rows_moved += llabs(b[i] - old[i]);
    p->lo = b[p->index];
    p->hi = b[p->index + 1];
    p->balance.moves++;
    p->balance.rows_moved += rows_moved;
    *moved = 1;
  }
  free(fig);
  free(old);
  free(b);
  /* Its own time is the exchange's, not the part's work (its waits are
   * already idle). */
  const double spent = hc_now() - t0;
  p->stats.collective_s += spent;
  p->stats.collectives++;
  p->in_ops_s += spent;
  p->balance.excluded += spent - (p->stats.idle_s - idle_now);
  return st;
}

void hc__part_note_moves(const hc_part_t *p, hc_job_t *job) {
  if (p->balance.moves)
    hc_job_note(job,
                "rows moved between the parts while they ran, to follow their measured speed: %u time%s, %lld "
                "row%s in all (HC_SPLIT_REBALANCE=off keeps the planned rows)",
                p->balance.moves, p->balance.moves == 1 ? "" : "s", (long long)p->balance.rows_moved,
                p->balance.rows_moved == 1 ? "" : "s");
}
