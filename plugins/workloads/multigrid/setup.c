/* multigrid — reading and checking the job's parameters and inputs (every
 * user error is HC_ERR_PARAM naming the parameter or file, before anything
 * is put on the device), then the grid hierarchy: per level the fields u,
 * f (and t for weighted Jacobi) and the expressions the cycle assigns. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"

static void shape_text(char *buf, size_t n, uint32_t rank, const int64_t *shape) {
  size_t len = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < rank && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "x" : "", (long long)shape[i]);
}

static int is_builtin(const char *f) {
  return !strcmp(f, "sin") || !strcmp(f, "gauss") || !strcmp(f, "point") || !strcmp(f, "zero");
}

/* The public grid: from n and dim, or from a field's shape when n is not given. */
static hc_status_t settle_grid(hc_job_t *job, mg_t *m, uint32_t frank, const int64_t *fshape, const char *fwhat,
                               int64_t pub[3]) {
  hc_shape_t n = hc_job_shape(job, "n");
  char text[96];
  int dim = hc_job_given(job, "dim") ? (int)hc_job_int(job, "dim") : 0;
  if (!hc_job_given(job, "n") && frank) {
    if (dim && dim != (int)frank) return hc_error(HC_ERR_PARAM, "dim=%d, but %s is %u-D", dim, fwhat, frank);
    hc_job_param_unused(job, "n"); /* the field's shape, not the default n */
    dim = (int)frank;
    for (int d = 0; d < dim; d++) pub[d] = fshape[d];
  } else if (n.rank == 1) {
    if (!dim) dim = frank ? (int)frank : 2;
    for (int d = 0; d < dim; d++) pub[d] = n.dims[0];
  } else if (n.rank == 2 || n.rank == 3) {
    if (dim && dim != (int)n.rank) {
      shape_text(text, sizeof text, n.rank, n.dims);
      return hc_error(HC_ERR_PARAM, "n=%s has %u extents but dim=%d", text, n.rank, dim);
    }
    dim = (int)n.rank;
    for (int d = 0; d < dim; d++) pub[d] = n.dims[d];
  } else {
    shape_text(text, sizeof text, n.rank, n.dims);
    return hc_error(HC_ERR_PARAM, "n=%s: give one extent or two or three (NXxNY[xNZ])", text);
  }
  m->dim = dim;
  for (int d = 0; d < dim; d++) {
    int64_t v = pub[d];
    if (v < 5 || ((v - 1) & (v - 2)) != 0)
      return hc_error(HC_ERR_PARAM,
                      "%s: %lld points on axis %d; multigrid halves the intervals at every level, so each extent must "
                      "be 2^k+1 with k >= 2 (5, 9, 17, 33, 65, 129, 257, ...)",
                      hc_job_given(job, "n") || !frank ? "n" : fwhat, (long long)v, d);
  }
  return HC_OK;
}

/* Copies (converting the dtype if needed) a field of the grid's shape into dst. */
static hc_status_t copy_into(hc_field_t *dst, const hc_field_t *src) {
  size_t n = hc_field_count(dst);
  if (hc_field_dtype(src) == hc_field_dtype(dst))
    return hc_buffer_copy(hc_field_buffer(dst), 0, hc_field_buffer(src), 0, hc_field_bytes(dst));
  void *a = malloc(hc_field_bytes(src)), *b = malloc(hc_field_bytes(dst));
  hc_status_t st = (!a || !b) ? hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory converting a field")
                              : hc_field_read(src, a);
  for (size_t i = 0; st == HC_OK && i < n; i++) {
    double v = hc_field_dtype(src) == HC_F64 ? ((double *)a)[i] : ((float *)a)[i];
    if (hc_field_dtype(dst) == HC_F64)
      ((double *)b)[i] = v;
    else
      ((float *)b)[i] = (float)v;
  }
  if (st == HC_OK) st = hc_field_write(dst, b);
  free(a);
  free(b);
  return st;
}

static hc_status_t check_port_shape(const mg_t *m, const char *what, const hc_field_t *f) {
  const int64_t *s = hc_field_shape(f);
  int ok = (int)hc_field_rank(f) == m->dim;
  for (int d = 0; ok && d < m->dim; d++) ok = s[d] == m->lv[0].n[d];
  if (ok) return HC_OK;
  char a[96], b[96];
  shape_text(a, sizeof a, hc_field_rank(f), s);
  shape_text(b, sizeof b, (uint32_t)m->dim, m->lv[0].n);
  return hc_error(HC_ERR_PARAM, "%s: shape %s does not match the grid n=%s", what, a, b);
}

/* The built-in right-hand side as a computable (jacobi's definitions). */
static hc_gexpr_t *rhs_expr(mg_t *m) {
  hc_gfunc_t fn;
  memset(&fn, 0, sizeof fn);
  fn.size = sizeof fn;
  if (!strcmp(m->rhs, "sin")) {
    fn.kind = HC_GFUNC_SIN;
    fn.amplitude = m->dim * M_PI * M_PI; /* -Δ prod sin(pi x_d) */
    fn.k[0] = fn.k[1] = fn.k[2] = 1;
  } else if (!strcmp(m->rhs, "gauss")) {
    fn.kind = HC_GFUNC_GAUSS;
    fn.amplitude = pow(2 * M_PI * MG_GAUSS_SIGMA * MG_GAUSS_SIGMA, -0.5 * m->dim);
    fn.center[0] = fn.center[1] = fn.center[2] = 0.5;
    fn.sigma = MG_GAUSS_SIGMA;
  } else if (!strcmp(m->rhs, "point")) {
    fn.kind = HC_GFUNC_POINT;
    fn.amplitude = 1;
    for (int d = 0; d < m->dim; d++) fn.amplitude /= m->lv[0].h[d];
    fn.center[0] = fn.center[1] = fn.center[2] = 0.5;
  } else {
    return hc_gexpr_scalar(m->g, 0.0);
  }
  return hc_gexpr_computable(m->g, &fn);
}

static hc_status_t read_params(hc_job_t *job, mg_t *m, int64_t pub[3]) {
  const char *f = hc_job_string(job, "f");
  hc_field_t *fport = hc_job_input(job, "f");
  m->dtype = !strcmp(hc_job_string(job, "dtype"), "f64") ? HC_F64 : HC_F32;
  m->es = hc_dtype_size(m->dtype);
  hc_status_t st;
  uint32_t frank = 0;
  int64_t fshape[HC_MAX_DIMS] = {0};
  const char *fwhat = "f";
  if (fport) {
    snprintf(m->rhs, sizeof m->rhs, "field");
    hc_job_param_unused(job, "f"); /* the report shows no default f=sin */
    m->f_in = fport;
    frank = hc_field_rank(fport);
    memcpy(fshape, hc_field_shape(fport), frank * sizeof *fshape);
    fwhat = "the input field f";
  } else if (is_builtin(f)) {
    snprintf(m->rhs, sizeof m->rhs, "%s", f);
  } else {
    snprintf(m->rhs, sizeof m->rhs, "field");
    hc_dtype_t dt;
    int64_t shape[HC_MAX_DIMS];
    void *data = NULL;
    if ((st = hc_npy_read(f, &dt, &frank, shape, &data)) != HC_OK)
      return hc_error_prefix(HC_ERR_PARAM, "f=%s: (not sin, gauss, point or zero, so read as a .npy file) ", f);
    free(data);
    if (hc_dtype_is_complex(dt) || frank < 2 || frank > 3)
      return hc_error(HC_ERR_PARAM, "f=%s: a real 2-D or 3-D field is needed (got %u-D %s)", f, frank,
                      hc_dtype_name(dt));
    memcpy(fshape, shape, sizeof fshape);
    fwhat = f;
  }
  if ((st = settle_grid(job, m, frank, fshape, fwhat, pub)) != HC_OK) return st;
  if (!fport && frank) {
    int same = (int)frank == m->dim;
    for (int d = 0; same && d < m->dim; d++) same = fshape[d] == pub[d];
    if (!same) {
      char a[96], b[96];
      shape_text(a, sizeof a, frank, fshape);
      shape_text(b, sizeof b, (uint32_t)m->dim, pub);
      return hc_error(HC_ERR_PARAM, "f=%s: shape %s does not match the grid n=%s", f, a, b);
    }
  }
  m->smoother = !strcmp(hc_job_string(job, "smoother"), "jacobi") ? MG_JACOBI : MG_RBGS;
  m->omega = hc_job_float(job, "omega");
  if (m->omega <= 0) m->omega = m->dim == 2 ? 0.8 : 6.0 / 7.0;
  m->pre = hc_job_int(job, "pre");
  m->post = hc_job_int(job, "post");
  m->coarse = hc_job_int(job, "coarse");
  m->cycles = hc_job_int(job, "cycles");
  m->tol = hc_job_float(job, "tol");
  if (m->pre + m->post == 0) return hc_error(HC_ERR_PARAM, "pre=0 and post=0: a V-cycle needs some smoothing");
  hc_grid_fuse_t fuse;
  hc_grid_host_t host;
  if ((st = hc_grid_fuse_from_name(hc_job_string(job, "fuse"), &fuse)) != HC_OK) return st;
  if ((st = hc_grid_host_from_name(hc_job_string(job, "host"), &host)) != HC_OK) return st;
  m->gopt = (hc_grid_options_t){sizeof m->gopt, fuse, host, 0};
  return HC_OK;
}

hc_status_t mg_setup(hc_job_t *job, mg_t *m) {
  memset(m, 0, sizeof *m);
  m->job = job;
  m->dev = hc_job_device(job);
  m->part = hc_job_part(job);
  int64_t pub[3] = {0, 0, 0};
  hc_status_t st = read_params(job, m, pub);
  if (st != HC_OK) return st;
  /* levels: while the spacings differ, halve only the axes with the finest
   * one (n = 2^k + 1: the largest k); then every axis, down to 3 points
   * (or `levels`). The coarsest grid has one unknown, which its sweeps
   * solve. */
  int most = 1;
  for (int d = 0; d < m->dim; d++) {
    int k = 0;
    while (((int64_t)1 << (k + 1)) + 1 <= pub[d]) k++;
    if (k > most) most = k;
  }
  int want = (int)hc_job_int(job, "levels");
  m->nlevels = want > 0 && want < most ? want : most;
  if (m->nlevels > MG_MAX_LEVELS) m->nlevels = MG_MAX_LEVELS;
  uint64_t bytes = 0, prev_cells = 0;
  for (int l = 0; l < m->nlevels; l++) {
    uint64_t cells = 1;
    int64_t finest = 0, coarsest = INT64_MAX;
    if (l > 0)
      for (int d = 0; d < m->dim; d++) {
        if (m->lv[l - 1].n[d] > finest) finest = m->lv[l - 1].n[d];
        if (m->lv[l - 1].n[d] < coarsest) coarsest = m->lv[l - 1].n[d];
      }
    for (int d = 0; d < m->dim; d++) {
      int64_t prev = l ? m->lv[l - 1].n[d] : 0;
      int halve = l > 0 && (finest == coarsest || prev == finest);
      m->lv[l].n[d] = l == 0 ? pub[d] : halve ? (prev + 1) / 2 : prev;
      if (l > 0 && halve && finest != coarsest) m->lv[l - 1].semi |= 1u << d;
      m->lv[l].h[d] = 1.0 / (double)(m->lv[l].n[d] - 1);
      cells *= (uint64_t)m->lv[l].n[d];
    }
    bytes += cells * m->es * (m->smoother == MG_JACOBI ? 3 : 2);
    if (l > 0 && m->lv[l - 1].semi) bytes += prev_cells * m->es; /* the finer level's r */
    prev_cells = cells;
  }
  hc_field_t *u0 = hc_job_input(job, "u0");
  if (m->f_in && (st = check_port_shape(m, "the input field f", m->f_in)) != HC_OK) return st;
  if (u0 && (st = check_port_shape(m, "the input field u0", u0)) != HC_OK) return st;
  if ((st = hc_device_check_memory(m->dev, bytes, "multigrid's grid hierarchy")) != HC_OK) return st;
  if (!m->f_in && !strcmp(m->rhs, "field")) {
    const char *path = hc_job_string(job, "f");
    if ((st = hc_field_load_npy(m->dev, path, &m->f_in)) != HC_OK) return hc_error_prefix(HC_ERR_PARAM, "f=%s: ", path);
    m->f_in_owned = 1;
  }
  m->u0 = u0;
  if ((st = mg_split_setup(m)) != HC_OK) return st;
  if ((st = hc_grid_create(m->dev, &m->gopt, &m->g)) != HC_OK) return st;
  m->interior = hc_grid_interior(1);
  for (int l = 0; l < m->nlevels; l++) {
    mg_level_t *v = &m->lv[l];
    hc_field_t **fs[3] = {&v->u, &v->f, &v->t};
    for (int i = 0; i < (m->smoother == MG_JACOBI ? 3 : 2); i++) {
      if ((st = hc_field_create(m->dev, m->dtype, (uint32_t)m->dim, v->n, fs[i])) != HC_OK) return st;
      hc_field_set_spacing(*fs[i], v->h);
      double zero = 0;
      float zf = 0;
      if ((st = hc_buffer_fill(hc_field_buffer(*fs[i]), 0, m->dtype == HC_F64 ? (void *)&zero : (void *)&zf, m->es,
                               hc_field_bytes(*fs[i]))) != HC_OK)
        return st;
    }
    hc_field_set_name(v->u, "u");
    if (v->semi) {
      if ((st = hc_field_create(m->dev, m->dtype, (uint32_t)m->dim, v->n, &v->r)) != HC_OK) return st;
      hc_field_set_spacing(v->r, v->h);
    }
  }
  /* expressions (built once; the cycle only assigns them) */
  hc_grid_t *g = m->g;
  hc_gop_t *L = hc_gop_laplacian(g, (uint32_t)m->dim, NULL); /* each level's own spacing */
  hc_gop_t *R = hc_gop_restrict_fw(g, (uint32_t)m->dim), *P = hc_gop_prolong_linear(g, (uint32_t)m->dim);
  for (int l = 0; l < m->nlevels; l++) {
    mg_level_t *v = &m->lv[l];
    double s = 0;
    for (int d = 0; d < m->dim; d++) s += 2.0 / (v->h[d] * v->h[d]);
    s = 1.0 / s;
    hc_gexpr_t *U = hc_gexpr_dense(g, v->u), *F = hc_gexpr_dense(g, v->f);
    v->residual = hc_gexpr_add(g, F, hc_gexpr_apply(g, L, U));
    if (m->smoother == MG_RBGS) {
      v->smooth_u = hc_gexpr_add(g, U, hc_gexpr_scale(g, s, v->residual));
    } else {
      hc_gexpr_t *T = hc_gexpr_dense(g, v->t);
      v->copy_t = T;
      v->smooth_u = hc_gexpr_add(g, U, hc_gexpr_scale(g, m->omega * s, v->residual));
      v->smooth_t = hc_gexpr_add(g, T, hc_gexpr_scale(g, m->omega * s, hc_gexpr_add(g, F, hc_gexpr_apply(g, L, T))));
    }
    v->zero = hc_gexpr_scalar(g, 0.0);
    if (l + 1 < m->nlevels && !v->semi) {
      v->restrict_residual = hc_gexpr_apply(g, R, v->residual);
      v->correct = hc_gexpr_add(g, U, hc_gexpr_apply(g, P, hc_gexpr_dense(g, m->lv[l + 1].u)));
    }
  }
  const char *why = NULL;
  if ((st = hc_grid_error(g, &why)) != HC_OK)
    return hc_error(st, "multigrid: building the cycle's expressions: %s", why);
  /* the right-hand side and the start */
  mg_level_t *top = &m->lv[0];
  if (m->f_in)
    st = copy_into(top->f, m->f_in);
  else
    st = hc_grid_assign(g, top->f, rhs_expr(m), NULL, NULL);
  if (st == HC_OK && m->u0) st = copy_into(top->u, m->u0);
  if (st == HC_OK && m->u0 && top->t) st = copy_into(top->t, m->u0); /* same boundary values */
  return st;
}

void mg_free(mg_t *m) {
  hc_grid_destroy(m->g);
  for (int l = 0; l < m->nlevels; l++) {
    hc_field_destroy(m->lv[l].u);
    hc_field_destroy(m->lv[l].f);
    hc_field_destroy(m->lv[l].t);
    hc_field_destroy(m->lv[l].r);
  }
  if (m->f_in_owned) hc_field_destroy(m->f_in);
  memset(m, 0, sizeof *m);
}
