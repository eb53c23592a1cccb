/* multigrid — semi-coarsening transfers. On a grid whose spacings differ
 * (n=17x257: h = 1/16 and 1/256), a point smoother smooths only along the
 * axes of strong coupling, the ones with the finest spacing, and halving
 * every axis leaves a coarsest grid of 3 points on the short axis that no
 * number of sweeps solves. So the hierarchy halves only the axes with the
 * finest spacing until the spacings agree, then all of them (setup.c).
 *
 * The grid library's restriction and prolongation halve every axis at once,
 * so the levels that halve only some axes move between grids here: the
 * fine level's residual (one grid-expression assignment) is read, restricted
 * by full weighting (1/4, 1/2, 1/4) along the halved axes only, and written
 * to the coarse right-hand side; the correction is interpolated linearly
 * along the halved axes and added to u. */
#include <stdlib.h>
#include <string.h>

#include "mg.h"

static hc_status_t read_d(const mg_t *m, const hc_field_t *f, double *out) {
  size_t n = hc_field_count(f);
  if (m->dtype == HC_F64) return hc_field_read(f, out);
  float *t = malloc(n * sizeof *t);
  if (!t) return hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory (semi-coarsening)");
  hc_status_t st = hc_field_read(f, t);
  for (size_t i = 0; st == HC_OK && i < n; i++) out[i] = t[i];
  free(t);
  return st;
}

static hc_status_t write_d(const mg_t *m, hc_field_t *f, const double *in) {
  size_t n = hc_field_count(f);
  if (m->dtype == HC_F64) return hc_field_write(f, in);
  float *t = malloc(n * sizeof *t);
  if (!t) return hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory (semi-coarsening)");
  for (size_t i = 0; i < n; i++) t[i] = (float)in[i];
  hc_status_t st = hc_field_write(f, t);
  free(t);
  return st;
}

/* Extents as three axes (2-D: a leading axis of 1) and which are halved. */
static void ext3(const mg_t *m, int l, int64_t e[3], int half[3]) {
  int pad = 3 - m->dim;
  for (int d = 0; d < 3; d++) {
    e[d] = d < pad ? 1 : m->lv[l].n[d - pad];
    half[d] = d < pad ? 0 : (int)((m->lv[l].semi >> (d - pad)) & 1u);
  }
}

hc_status_t mg_semi_restrict(mg_t *m, int l) {
  mg_level_t *v = &m->lv[l], *c = &m->lv[l + 1];
  int64_t ef[3], ec[3];
  int half[3];
  ext3(m, l, ef, half);
  for (int d = 0; d < 3; d++) ec[d] = half[d] ? (ef[d] + 1) / 2 : ef[d];
  hc_status_t st = hc_grid_assign(m->g, v->r, v->residual, &m->interior, NULL);
  size_t nf = hc_field_count(v->r), nc = hc_field_count(c->f);
  double *r = malloc(nf * sizeof *r), *f = calloc(nc, sizeof *f);
  if (st == HC_OK && (!r || !f)) st = hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory (semi-coarsening)");
  if (st == HC_OK) st = read_d(m, v->r, r);
  static const double w[3] = {0.25, 0.5, 0.25};
  /* the coarse interior; along a kept axis of a 2-D grid's padding, index 0 */
  int64_t lo[3], hi[3];
  for (int d = 0; d < 3; d++) lo[d] = ec[d] == 1 ? 0 : 1, hi[d] = ec[d] == 1 ? 1 : ec[d] - 1;
  for (int64_t i = lo[0]; st == HC_OK && i < hi[0]; i++)
    for (int64_t j = lo[1]; j < hi[1]; j++)
      for (int64_t k = lo[2]; k < hi[2]; k++) {
        const int64_t I[3] = {half[0] ? 2 * i : i, half[1] ? 2 * j : j, half[2] ? 2 * k : k};
        double s = 0;
        for (int a = -half[0]; a <= half[0]; a++)
          for (int b = -half[1]; b <= half[1]; b++)
            for (int q = -half[2]; q <= half[2]; q++) {
              double wt = (half[0] ? w[a + 1] : 1) * (half[1] ? w[b + 1] : 1) * (half[2] ? w[q + 1] : 1);
              s += wt * r[((I[0] + a) * ef[1] + (I[1] + b)) * ef[2] + (I[2] + q)];
            }
        f[(i * ec[1] + j) * ec[2] + k] = s;
      }
  if (st == HC_OK) st = write_d(m, c->f, f);
  free(r);
  free(f);
  return st;
}

/* Linear interpolation weights of fine index i from the coarse axis:
 * even: the coarse point i/2; odd: the two around it, 1/2 each. */
static int interp(int half, int64_t i, int64_t j[2], double w[2]) {
  if (!half) return j[0] = i, w[0] = 1, 1;
  if (!(i & 1)) return j[0] = i / 2, w[0] = 1, 1;
  j[0] = i / 2, j[1] = i / 2 + 1, w[0] = w[1] = 0.5;
  return 2;
}

hc_status_t mg_semi_correct(mg_t *m, int l) {
  mg_level_t *v = &m->lv[l], *c = &m->lv[l + 1];
  int64_t ef[3], ec[3];
  int half[3];
  ext3(m, l, ef, half);
  for (int d = 0; d < 3; d++) ec[d] = half[d] ? (ef[d] + 1) / 2 : ef[d];
  size_t nf = hc_field_count(v->u), nc = hc_field_count(c->u);
  double *u = malloc(nf * sizeof *u), *uc = malloc(nc * sizeof *uc);
  hc_status_t st = (!u || !uc) ? hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory (semi-coarsening)") : HC_OK;
  if (st == HC_OK) st = read_d(m, v->u, u);
  if (st == HC_OK) st = read_d(m, c->u, uc);
  int64_t lo[3], hi[3];
  for (int d = 0; d < 3; d++) lo[d] = ef[d] == 1 ? 0 : 1, hi[d] = ef[d] == 1 ? 1 : ef[d] - 1;
  for (int64_t i = lo[0]; st == HC_OK && i < hi[0]; i++) {
    int64_t ji[2], jj[2], jk[2];
    double wi[2], wj[2], wk[2];
    int ni = interp(half[0], i, ji, wi);
    for (int64_t j = lo[1]; j < hi[1]; j++) {
      int nj = interp(half[1], j, jj, wj);
      for (int64_t k = lo[2]; k < hi[2]; k++) {
        int nk = interp(half[2], k, jk, wk);
        double s = 0;
        for (int a = 0; a < ni; a++)
          for (int b = 0; b < nj; b++)
            for (int q = 0; q < nk; q++) s += wi[a] * wj[b] * wk[q] * uc[(ji[a] * ec[1] + jj[b]) * ec[2] + jk[q]];
        u[(i * ef[1] + j) * ef[2] + k] += s;
      }
    }
  }
  if (st == HC_OK) st = write_d(m, v->u, u);
  free(u);
  free(uc);
  return st;
}
