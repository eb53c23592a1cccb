/* multigrid split over a device set (HC_SPLIT_REPLICATED): every part
 * holds every level's whole fields and updates its own slab of rows along
 * axis 0 (the slowest): its rows of the finest level, and on each coarser
 * level the rows its slab halves into (coarse row c is fine row 2c). After
 * each assignment the neighbours' copies of the two rows on each side of a
 * slab are brought up to date (a restriction reads the fine residual two
 * rows out, a prolongation one coarse row), so every point gets the
 * arithmetic of a whole run: parts that compute alike give the one-device
 * result bit for bit. From the first level that would leave some part
 * fewer than MG_SLAB_MIN rows, or that is not worth splitting, the parts
 * all-gather the level's right-hand side and run it and the coarser levels
 * whole, each the same: a coarse level can cost less computed whole than
 * the parts' meeting after each of its assignments. Which levels are worth
 * it is measured after the warm-up cycle (mg_split_measure), or given as a
 * count of points (HC_MG_SPLIT_MIN_POINTS). Reductions (the residual, the
 * errors) are summed over the slabs and combined in part order. Between
 * cycles the parts' rows may move to follow their speed (mg_rebalance). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/config.h>
#include <hc/partition.h>
#include <hc/workload_util.h>

#include "mg.h"

/* Rows a part must own on a level it updates by slabs: the exchanges send
 * two rows to each side. */
#define MG_SLAB_MIN 3
#define MG_HALO 2

hc_status_t mg_split(const hc_job_t *job, hc_split_t *split) {
  int64_t n[HC_MAX_DIMS];
  const uint32_t rank = hc_poisson_shape(job, NULL, n);
  if (rank < 1 || rank > 3 || n[0] < 3) return HC_OK; /* the run reports the bad n or file */
  for (uint32_t d = 1; d < rank; d++)
    if (n[d] != n[0]) {
      snprintf(split->why, sizeof split->why,
               "grids whose axes differ (semi-coarsened levels) do not split yet: give one n for every axis");
      return HC_OK;
    }
  split->kind = HC_SPLIT_REPLICATED;
  split->rows = n[0];
  split->halo = 0;
  split->min_rows = MG_SLAB_MIN;
  if (HC_SPLIT_HAS_CALIBRATE(split)) { /* one V-cycle (the most when tol stops it earlier) */
    snprintf(split->calibrate, sizeof split->calibrate, "cycles=1 tol=0");
    split->calibrate_work = 1.0 / (double)hc_job_int(job, "cycles");
  }
  return HC_OK;
}

hc_status_t mg_split_setup(mg_t *m) {
  if (!m->part) return HC_OK;
  int64_t lo, hi;
  hc_part_range(m->part, &lo, &hi);
  long long min_points = 0; /* unset: measured (mg_split_measure) */
  hc_status_t st = hc_config_int("HC_MG_SPLIT_MIN_POINTS", &min_points);
  m->split_measured = st == HC_OK && !min_points;
  /* This part's first level too thin for slabs (or not worth splitting);
   * every part's smallest (a part that failed to read the setting still
   * takes part). */
  double thin = st != HC_OK ? 0 : m->split_worth_known ? m->split_worth : m->nlevels;
  for (int l = 0; l < m->nlevels; l++) {
    m->slab_lo[l] = l ? (m->slab_lo[l - 1] + 1) / 2 : lo;
    m->slab_hi[l] = l ? (m->slab_hi[l - 1] + 1) / 2 : hi;
    /* points this part is spared by the split: the level's less its slab's */
    int64_t rows = m->slab_hi[l] - m->slab_lo[l], spared = m->lv[l].n[0] - rows;
    for (int d = 1; d < m->dim; d++) spared *= m->lv[l].n[d];
    if ((rows < MG_SLAB_MIN || (spared < min_points && !m->split_worth_known)) && thin > l) thin = l;
  }
  hc_status_t ar = hc_part_allreduce(m->part, HC_REDUCE_MIN, &thin, 1);
  m->split_levels = (int)thin;
  /* The levels worth splitting by count are decided once, on the planned
   * rows: rows that move later do not change them (only too thin slabs). */
  if (!m->split_measured && !m->split_worth_known && st == HC_OK && ar == HC_OK) {
    m->split_worth = m->split_levels;
    m->split_worth_known = 1;
  }
  return st != HC_OK ? st : ar;
}

int mg_slab_level(const mg_t *m, int l) { return m->part && l < m->split_levels; }

hc_status_t mg_rebalance(mg_t *m) {
  if (!m->part) return HC_OK;
  /* Between cycles only the finest u carries over (f is every part's
   * whole, the coarser levels start again): it is all that moves. */
  hc_field_t **fields[1] = {&m->lv[0].u};
  int moved = 0;
  hc_status_t st = hc_part_rebalance(m->part, fields, 1, 0, MG_HALO, (double)(m->cycles - m->done), &moved);
  /* The finest level stays split once it is (the levels worth splitting
   * are decided once, and min_rows leaves no part fewer than MG_SLAB_MIN
   * rows): it must, for each part's copy of u is current only on its rows
   * and their halo. */
  return st == HC_OK && moved ? mg_split_setup(m) : st;
}

/* range (NULL: the whole field) narrowed to the part's rows of level l
 * and `wide` rows beyond them on each side. */
static hc_grid_range_t slab_range(const mg_t *m, int l, const hc_field_t *f, const hc_grid_range_t *range,
                                  int64_t wide) {
  hc_grid_range_t r;
  if (range)
    r = *range;
  else
    memset(&r, 0, sizeof r);
  const int64_t rows = hc_field_shape(f)[0];
  if (r.lo[0] < m->slab_lo[l] - wide) r.lo[0] = m->slab_lo[l] - wide;
  if (r.hi[0] < rows - m->slab_hi[l] - wide) r.hi[0] = rows - m->slab_hi[l] - wide;
  return r;
}

hc_status_t mg_assign(mg_t *m, int l, hc_field_t *dst, hc_gexpr_t *e, const hc_grid_range_t *range) {
  if (!mg_slab_level(m, l)) return hc_grid_assign(m->g, dst, e, range, NULL);
  hc_grid_range_t r = slab_range(m, l, dst, range, 0);
  hc_status_t st = hc_grid_assign(m->g, dst, e, &r, NULL);
  /* a failing part still meets the others (they are waiting for it) */
  hc_status_t ex = hc_part_halo_exchange_rows(m->part, dst, m->slab_lo[l], m->slab_hi[l], MG_HALO);
  return st != HC_OK ? st : ex;
}

hc_status_t mg_assign_wide(mg_t *m, int l, hc_field_t *dst, hc_gexpr_t *e, const hc_grid_range_t *range, int64_t wide) {
  if (!mg_slab_level(m, l)) return hc_grid_assign(m->g, dst, e, range, NULL);
  hc_grid_range_t r = slab_range(m, l, dst, range, wide);
  return hc_grid_assign(m->g, dst, e, &r, NULL);
}

hc_status_t mg_restrict_to(mg_t *m, int l) {
  mg_level_t *c = &m->lv[l + 1];
  if (mg_slab_level(m, l + 1) || !mg_slab_level(m, l))
    return mg_assign(m, l + 1, c->f, m->lv[l].restrict_residual, &m->interior);
  /* The coarse level runs whole on every part: each restricts onto its
   * rows of it (its fine slab and halo hold what that reads), then the
   * parts all-gather the rows. */
  const int64_t a = (m->slab_lo[l] + 1) / 2, b = (m->slab_hi[l] + 1) / 2, rows = c->n[0];
  hc_status_t st = HC_OK;
  if (b > a) {
    hc_grid_range_t r = m->interior;
    if (r.lo[0] < a) r.lo[0] = a;
    if (r.hi[0] < rows - b) r.hi[0] = rows - b;
    if (r.lo[0] + r.hi[0] < rows) st = hc_grid_assign(m->g, c->f, m->lv[l].restrict_residual, &r, NULL);
  }
  const size_t rb = hc_field_bytes(c->f) / (size_t)rows;
  char *mine = malloc((size_t)(b - a) * rb + 1), *all = malloc(hc_field_bytes(c->f));
  if ((!mine || !all) && st == HC_OK) st = hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory");
  if (st == HC_OK && b > a) st = hc_buffer_read(hc_field_buffer(c->f), (size_t)a * rb, mine, (size_t)(b - a) * rb);
  size_t total = 0;
  /* every part takes part, whatever failed here (size 0 then) */
  hc_status_t ag = hc_part_allgather(m->part, mine, st == HC_OK ? (size_t)(b - a) * rb : 0, all,
                                     all ? hc_field_bytes(c->f) : 0, &total);
  if (st == HC_OK) st = ag;
  if (st == HC_OK && total != hc_field_bytes(c->f))
    st = hc_error(HC_ERR_INTERNAL, "multigrid: the parts' rows of level %d make %zu bytes, not %zu", l + 1, total,
                  hc_field_bytes(c->f));
  if (st == HC_OK) st = hc_field_write(c->f, all);
  free(mine);
  free(all);
  return st;
}

hc_status_t mg_reduce(mg_t *m, hc_grid_reduce_op_t op, hc_field_t *like, hc_gexpr_t *e, double *out) {
  if (!mg_slab_level(m, 0)) return hc_grid_reduce(m->g, op, like, e, &m->interior, NULL, out);
  hc_grid_range_t r = slab_range(m, 0, like, &m->interior, 0);
  hc_status_t st = hc_grid_reduce(m->g, op, like, e, &r, NULL, out);
  if (st != HC_OK) *out = NAN; /* the others still combine with it */
  hc_status_t ar = hc_part_allreduce(m->part, op == HC_GRID_MAXABS ? HC_REDUCE_MAX : HC_REDUCE_SUM, out, 1);
  return st != HC_OK ? st : ar;
}

/* Seconds per call of `reps` calls of a red half-sweep of level l over
 * range, queued together, then waited for. */
static hc_status_t time_red(mg_t *m, int l, const hc_grid_range_t *range, int reps, double *out) {
  hc_grid_range_t red = *range;
  red.parity = HC_GRID_EVEN;
  const double t0 = hc_now();
  hc_status_t st = HC_OK;
  for (int r = 0; r < reps && st == HC_OK; r++) st = hc_grid_assign(m->g, m->lv[l].u, m->lv[l].smooth_u, &red, NULL);
  if (st == HC_OK) st = hc_device_finish(m->dev);
  *out = (hc_now() - t0) / reps;
  return st;
}

/* For each level the slabs allow, finest first, every part times a red
 * half-sweep over the whole level and over its slab, and an exchange of
 * the level's rows; the level is split while the slowest part's slab
 * sweep, with its share of an exchange, takes less than the slowest part's
 * whole sweep. Half of a red-black cycle's assignments on a split level
 * are followed by an exchange (the black halves and the restriction, not
 * the red halves and the correction), every one of weighted Jacobi's. The
 * first level that is not worth it ends the split levels. Each level's
 * probe runs twice and the second is kept (the first brings the level into
 * the caches, as a cycle would). The probes change the levels' u: the
 * solve starts again after them. */
#define MG_PROBE_REPS 2
hc_status_t mg_split_measure(mg_t *m) {
  if (!m->part || !m->split_measured) return HC_OK;
  const double exchanges_per_assignment = m->smoother == MG_RBGS ? 0.5 : 1.0;
  hc_status_t st = HC_OK;
  int worth = m->split_levels;
  char says[256] = "";
  size_t len = 0;
  for (int l = 0; l < m->split_levels; l++) {
    hc_grid_range_t slab = slab_range(m, l, m->lv[l].u, &m->interior, 0);
    /* [0] whole sweep, [1] slab sweep + exchange; a failing part still
     * takes part, with times that keep the level split */
    double t[2] = {0, 0}, ex0 = 0;
    for (int round = 0; round < 2; round++) {
      double whole = 0, part = 0;
      if (st == HC_OK) st = time_red(m, l, &m->interior, MG_PROBE_REPS, &whole);
      if (st == HC_OK) st = time_red(m, l, &slab, MG_PROBE_REPS, &part);
      hc_status_t b = hc_part_barrier(m->part);
      ex0 = hc_now();
      for (int r = 0; r < MG_PROBE_REPS && b == HC_OK; r++)
        b = hc_part_halo_exchange_rows(m->part, m->lv[l].u, m->slab_lo[l], m->slab_hi[l], MG_HALO);
      if (st == HC_OK) st = b;
      t[0] = whole;
      t[1] = part + exchanges_per_assignment * (hc_now() - ex0) / MG_PROBE_REPS;
    }
    if (st != HC_OK) t[0] = t[1] = 0;
    hc_status_t ar = hc_part_allreduce(m->part, HC_REDUCE_MAX, t, 2);
    if (st == HC_OK) st = ar;
    if (st != HC_OK) break;
    if (len < sizeof says - 64)
      len += (size_t)snprintf(says + len, sizeof says - len, "%s%.0f/%.0f", l ? ", " : "", t[0] * 1e6, t[1] * 1e6);
    if (t[1] >= t[0]) {
      worth = l;
      break;
    }
  }
  if (st != HC_OK) return st;
  snprintf(m->split_probe, sizeof m->split_probe, "%s", says);
  m->split_worth = worth;
  m->split_worth_known = 1;
  m->split_levels = worth;
  return HC_OK;
}
