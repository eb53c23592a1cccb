/* multigrid — the V-cycle. Every step is one grid-expression assignment, so
 * one generated kernel: a red-black sweep is two (one per colour, in place),
 * the restricted residual one, the correction one. */
#include <math.h>

#include "mg.h"

hc_status_t mg_smooth(mg_t *m, int l, int64_t sweeps) {
  mg_level_t *v = &m->lv[l];
  hc_status_t st = HC_OK;
  if (m->smoother == MG_RBGS) {
    hc_grid_range_t red = m->interior, black = m->interior;
    red.parity = HC_GRID_EVEN;
    black.parity = HC_GRID_ODD;
    /* Split: the red half-sweep also updates the first row beyond the
     * part's slab on each side, as the neighbour does, from the black
     * points of the two rows beyond it that the last exchange brought (or
     * the correction computed); so only the black half-sweep is followed
     * by an exchange. */
    for (int64_t i = 0; i < sweeps && st == HC_OK; i++) {
      st = mg_assign_wide(m, l, v->u, v->smooth_u, &red, 1);
      if (st == HC_OK) st = mg_assign(m, l, v->u, v->smooth_u, &black);
    }
    return st;
  }
  /* weighted Jacobi: u -> t -> u ...; an odd count ends with a copy back */
  for (int64_t i = 0; i < sweeps && st == HC_OK; i++)
    st = (i & 1) ? mg_assign(m, l, v->u, v->smooth_t, &m->interior) : mg_assign(m, l, v->t, v->smooth_u, &m->interior);
  if (st == HC_OK && (sweeps & 1)) st = mg_assign(m, l, v->u, v->copy_t, &m->interior);
  return st;
}

hc_status_t mg_vcycle(mg_t *m, int l) {
  if (l == m->nlevels - 1) return mg_smooth(m, l, m->coarse);
  mg_level_t *v = &m->lv[l], *c = &m->lv[l + 1];
  hc_status_t st = mg_smooth(m, l, m->pre);
  /* f_H = R (f_h + Δ_h u_h) on the coarse interior, u_H = 0 */
  if (st == HC_OK) st = v->semi ? mg_semi_restrict(m, l) : mg_restrict_to(m, l);
  if (st == HC_OK) st = hc_grid_assign(m->g, c->u, c->zero, NULL, NULL);
  if (st == HC_OK) st = mg_vcycle(m, l + 1);
  /* u_h += P u_H. Split: on the part's rows and the two beyond them on
   * each side, as the neighbours do, with no exchange: u_h there is as
   * the last exchange left it (the restriction does not change it), and
   * the coarse rows that P reads lie within the coarse level's two rows
   * beyond its slab, which its last exchange brought. */
  if (st == HC_OK) st = v->semi ? mg_semi_correct(m, l) : mg_assign_wide(m, l, v->u, v->correct, &m->interior, 2);
  if (st == HC_OK) st = mg_smooth(m, l, m->post);
  return st;
}

hc_status_t mg_residual(mg_t *m, double *rel) {
  double r2 = 0;
  hc_status_t st = mg_reduce(m, HC_GRID_SUMSQ, m->lv[0].u, m->lv[0].residual, &r2);
  if (st != HC_OK) return st;
  *rel = m->f_norm > 0 ? sqrt(r2) / m->f_norm : sqrt(r2);
  return HC_OK;
}
