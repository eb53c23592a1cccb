/* bpm: the medium (index profile, absorbing layer, core mask) and the
 * launch field, on the host in double precision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpm.h"

static double xnode(const bpm_config_t *c, int64_t i) { return (double)(i + 1) * c->hx; }
static double ynode(const bpm_config_t *c, int64_t j) { return (double)(j + 1) * c->hy; }

/* Reads a .npy named by a parameter into complex doubles of the run's
 * transverse shape; every failure is the user's: HC_ERR_PARAM. */
static hc_status_t load_npy(const bpm_config_t *c, const char *param, const char *path, double complex **out) {
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[HC_MAX_DIMS];
  void *data = NULL;
  *out = NULL;
  hc_status_t st = hc_npy_read(path, &dt, &rank, shape, &data);
  if (st != HC_OK) return hc_error_prefix(HC_ERR_PARAM, "%s=", param);
  int ok = c->dim == 2 ? (rank == 1 && shape[0] == c->ny) : (rank == 2 && shape[0] == c->nx && shape[1] == c->ny);
  if (!ok) {
    char got[96] = "(", *p = got + 1;
    for (uint32_t i = 0; i < rank && p < got + 80; i++) p += sprintf(p, "%s%lld", i ? ", " : "", (long long)shape[i]);
    strcpy(p, rank == 1 ? ",)" : ")");
    free(data);
    if (c->dim == 2)
      return hc_error(HC_ERR_PARAM, "%s=%s: shape %s, but n=%lld needs shape (%lld,)", param, path, got,
                      (long long)c->ny, (long long)c->ny);
    return hc_error(HC_ERR_PARAM, "%s=%s: shape %s, but n=%lldx%lld needs shape (%lld, %lld)", param, path, got,
                    (long long)c->nx, (long long)c->ny, (long long)c->nx, (long long)c->ny);
  }
  size_t count = (size_t)(c->nx * c->ny);
  double complex *v = malloc(count * sizeof *v);
  if (!v) {
    free(data);
    return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory reading %s", path);
  }
  for (size_t i = 0; i < count; i++) {
    switch (dt) {
    case HC_F32: v[i] = ((const float *)data)[i]; break;
    case HC_F64: v[i] = ((const double *)data)[i]; break;
    case HC_C64: v[i] = CMPLXF(((const float *)data)[2 * i], ((const float *)data)[2 * i + 1]); break;
    default: v[i] = CMPLX(((const double *)data)[2 * i], ((const double *)data)[2 * i + 1]); break;
    }
    if (!isfinite(creal(v[i])) || !isfinite(cimag(v[i]))) {
      free(data);
      free(v);
      return hc_error(HC_ERR_PARAM, "%s=%s: element %zu is not finite", param, path, i);
    }
  }
  free(data);
  *out = v;
  return HC_OK;
}

/* Complex index at every node into nidx (nx*ny). */
static hc_status_t index_profile(const hc_job_t *job, const bpm_config_t *c, double complex *nidx,
                                 unsigned char *core) {
  const double xc = c->Lx / 2, yc = c->Ly / 2, hw = c->width / 2;
  if (c->profile == BPM_PROFILE_FILE) {
    double complex *f = NULL;
    hc_status_t st = load_npy(c, "profile", hc_job_string(job, "profile"), &f);
    if (st != HC_OK) return st;
    size_t count = (size_t)(c->nx * c->ny);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < count; i++) {
      if (creal(f[i]) <= 0) {
        free(f);
        return hc_error(HC_ERR_PARAM, "profile=%s: element %zu has index %g (must be > 0)",
                        hc_job_string(job, "profile"), i, creal(f[i]));
      }
      lo = fmin(lo, creal(f[i])), hi = fmax(hi, creal(f[i]));
    }
    memcpy(nidx, f, count * sizeof *f);
    free(f);
    /* The core of a given profile: where the index is in its upper half. */
    if (hi > lo) {
      for (size_t i = 0; i < count; i++) core[i] = creal(nidx[i]) > (lo + hi) / 2;
      return HC_OK;
    }
  }
  for (int64_t i = 0; i < c->nx; i++)
    for (int64_t j = 0; j < c->ny; j++) {
      double dx = c->dim == 3 ? xnode(c, i) - xc : 0, dy = ynode(c, j) - yc;
      int in_box = fabs(dx) < hw && fabs(dy) < hw;
      double r2 = (dx * dx + dy * dy) / (hw * hw);
      size_t k = (size_t)(i * c->ny + j);
      switch (c->profile) {
      case BPM_PROFILE_SLAB:
        nidx[k] = in_box ? c->n_core : c->n_clad;
        core[k] = (unsigned char)in_box;
        break;
      case BPM_PROFILE_GRADED: {
        double d2 = c->n_core * c->n_core - c->n_clad * c->n_clad;
        nidx[k] = r2 < 1 ? sqrt(c->n_core * c->n_core - d2 * r2) : c->n_clad;
        core[k] = r2 < 1;
        break;
      }
      case BPM_PROFILE_FILE: /* flat file profile: keep its index */ core[k] = (unsigned char)in_box; break;
      default:
        nidx[k] = c->n_clad;
        core[k] = (unsigned char)in_box;
        break;
      }
    }
  return HC_OK;
}

/* Imaginary index of the absorbing layers: kappa (d/w)^2 at depth d into a
 * layer of width w at each wall (both axes in 3-D). */
static double absorb_kappa(const bpm_config_t *c, double pos, double L) {
  double w = c->absorb_width, d = fmax(w - pos, pos - (L - w));
  return d > 0 ? c->kappa * (d / w) * (d / w) : 0;
}

static hc_status_t launch_field(const hc_job_t *job, const bpm_config_t *c, double complex *e0) {
  size_t count = (size_t)(c->nx * c->ny);
  if (c->launch == BPM_LAUNCH_FILE) {
    double complex *f = NULL;
    hc_status_t st = load_npy(c, "launch", hc_job_string(job, "launch"), &f);
    if (st != HC_OK) return st;
    memcpy(e0, f, count * sizeof *f);
    free(f);
    return HC_OK;
  }
  if (c->launch == BPM_LAUNCH_PORT) {
    const hc_field_t *in = hc_job_input(job, "field");
    const int64_t *sh = hc_field_shape(in);
    uint32_t rank = hc_field_rank(in);
    int ok = c->dim == 2 ? (rank == 1 && sh[0] == c->ny) : (rank == 2 && sh[0] == c->nx && sh[1] == c->ny);
    if (!ok)
      return hc_error(HC_ERR_PARAM, "input field: shape does not match n=%s (dim=%d)", bpm_param_text(job, "n"),
                      c->dim);
    /* A NaN or an infinity in the launched field cannot be propagated into
     * anything (status.h, "Non-finite values"). */
    hc_status_t fst = hc_job_check_finite((hc_job_t *)job, "field", in);
    if (fst != HC_OK) return fst;
    int f64 = hc_field_dtype(in) == HC_C128;
    void *h = malloc(count * (f64 ? 16 : 8));
    if (!h) return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
    hc_status_t st = hc_field_read(in, h);
    if (st == HC_OK)
      for (size_t i = 0; i < count; i++)
        e0[i] = f64 ? CMPLX(((double *)h)[2 * i], ((double *)h)[2 * i + 1])
                    : CMPLX(((float *)h)[2 * i], ((float *)h)[2 * i + 1]);
    free(h);
    return st;
  }
  const double xc = c->Lx / 2 + c->offset[0], yc = c->Ly / 2 + c->offset[1];
  const double kx = c->k0 * c->n0 * sin(c->tilt[0] * M_PI / 180), ky = c->k0 * c->n0 * sin(c->tilt[1] * M_PI / 180);
  for (int64_t i = 0; i < c->nx; i++)
    for (int64_t j = 0; j < c->ny; j++) {
      double x = xnode(c, i), y = ynode(c, j);
      double complex e;
      if (c->launch == BPM_LAUNCH_MODE) {
        e = sin(M_PI * y / c->Ly);
        if (c->dim == 3) e *= sin(M_PI * x / c->Lx);
      } else {
        double dx = c->dim == 3 ? x - xc : 0, dy = y - yc;
        e = exp(-(dx * dx + dy * dy) / (c->waist * c->waist)) * cexp(I * (kx * dx + ky * dy));
      }
      e0[i * c->ny + j] = e;
    }
  return HC_OK;
}

void bpm_problem_free(bpm_problem_t *p) {
  free(p->v);
  free(p->core);
  free(p->e0);
  memset(p, 0, sizeof *p);
}

hc_status_t bpm_problem_build(const hc_job_t *job, bpm_config_t *c, bpm_problem_t *p) {
  memset(p, 0, sizeof *p);
  size_t count = (size_t)(c->nx * c->ny);
  double complex *nidx = malloc(count * sizeof *nidx);
  p->v = malloc(count * sizeof *p->v);
  p->core = malloc(count);
  p->e0 = malloc(count * sizeof *p->e0);
  hc_status_t st = HC_OK;
  if (!nidx || !p->v || !p->core || !p->e0) {
    st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for %zu nodes", count);
    goto out;
  }
  if ((st = index_profile(job, c, nidx, p->core)) != HC_OK) goto out;
  if (c->n0 <= 0) { /* the largest index: the envelope then turns slowest in the guide */
    c->n0 = 0;
    for (size_t i = 0; i < count; i++) c->n0 = fmax(c->n0, creal(nidx[i]));
  }
  const double k2 = c->k0 * c->k0;
  p->v_uniform = 1;
  for (int64_t i = 0; i < c->nx; i++)
    for (int64_t j = 0; j < c->ny; j++) {
      size_t k = (size_t)(i * c->ny + j);
      double complex n = nidx[k];
      if (c->bc == BPM_BC_ABSORBING) {
        double kap = absorb_kappa(c, ynode(c, j), c->Ly);
        if (c->dim == 3) kap += absorb_kappa(c, xnode(c, i), c->Lx);
        n += I * kap;
      }
      p->v[k] = k2 * (n * n - c->n0 * c->n0);
      if (p->v[k] != p->v[0]) p->v_uniform = 0;
    }
  st = launch_field(job, c, p->e0);
out:
  free(nidx);
  if (st != HC_OK) bpm_problem_free(p);
  return st;
}
