/* jacobi — reading and checking the job's parameters and inputs. Every
 * user error is HC_ERR_PARAM with a message that names the parameter or
 * file, returned before anything is written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/workload_util.h>

#include "jacobi.h"

/* A field given as a .npy file, read to the host before the grid is known. */
typedef struct {
  const char *param; /* "f" or "init" */
  const char *path;
  hc_dtype_t dtype;
  uint32_t rank;
  int64_t shape[HC_MAX_DIMS];
  void *data;
} host_field_t;

static void shape_text(char *buf, size_t n, uint32_t rank, const int64_t *shape) {
  size_t len = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < rank && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "x" : "", (long long)shape[i]);
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* The file's header, and its data unless header_only (a part of a split
 * run reads its rows once the grid is known: read_part_rows). */
static hc_status_t read_host_field(host_field_t *hf, int header_only) {
  hc_status_t st = header_only ? hc_npy_read_rows(hf->path, 0, 0, &hf->dtype, &hf->rank, hf->shape, NULL)
                               : hc_npy_read(hf->path, &hf->dtype, &hf->rank, hf->shape, &hf->data);
  if (st != HC_OK) return hc_error_prefix(HC_ERR_PARAM, "%s=%s: ", hf->param, hf->path);
  if (hc_dtype_is_complex(hf->dtype))
    return hc_error(HC_ERR_PARAM, "%s=%s: dtype %s; a real field (<f4 or <f8) is needed", hf->param, hf->path,
                    hc_dtype_name(hf->dtype));
  if (hf->rank < 2 || hf->rank > 3)
    return hc_error(HC_ERR_PARAM, "%s=%s: rank %u; a 2-D or 3-D field is needed", hf->param, hf->path, hf->rank);
  return HC_OK;
}

/* The public shape of the grid in text ("64x64x32"). */
static void grid_text(const jacobi_problem_t *p, char *buf, size_t n) {
  shape_text(buf, n, (uint32_t)p->dim, p->n + (3 - p->dim));
}

/* Checks that a field of (rank, shape) fits the grid. */
static hc_status_t check_shape(const jacobi_problem_t *p, const char *what, uint32_t rank, const int64_t *shape) {
  int ok = (int)rank == p->dim;
  for (int d = 0; ok && d < p->dim; d++) ok = shape[d] == p->n[3 - p->dim + d];
  if (ok) return HC_OK;
  char a[96], b[96];
  shape_text(a, sizeof a, rank, shape);
  grid_text(p, b, sizeof b);
  return hc_error(HC_ERR_PARAM, "%s: shape %s does not match the grid n=%s", what, a, b);
}

/* Converts count values between real dtypes. */
static void convert(void *dst, hc_dtype_t dt, const void *src, hc_dtype_t st, size_t count) {
  for (size_t i = 0; i < count; i++) {
    double v = st == HC_F64 ? ((const double *)src)[i] : ((const float *)src)[i];
    if (dt == HC_F64)
      ((double *)dst)[i] = v;
    else
      ((float *)dst)[i] = (float)v;
  }
}

/* Puts host data of dtype `dt` on the device as the problem's dtype. */
static hc_status_t upload(hc_device_t *dev, const jacobi_problem_t *p, const void *data, hc_dtype_t dt,
                          hc_field_t **out) {
  const int64_t *shape = p->n + (3 - p->dim);
  hc_status_t st = hc_field_create(dev, p->dtype, (uint32_t)p->dim, shape, out);
  if (st != HC_OK) return st;
  if (dt == p->dtype) return hc_field_write(*out, data);
  void *tmp = malloc(p->cells * p->es);
  if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory converting a field");
  convert(tmp, p->dtype, data, dt, p->cells);
  st = hc_field_write(*out, tmp);
  free(tmp);
  return st;
}

/* A port field of another dtype than the run's: converted through the host. */
static hc_status_t port_field(hc_job_t *job, const jacobi_problem_t *p, hc_field_t *in, hc_field_t **out, int *owned) {
  if (hc_field_dtype(in) == p->dtype) {
    *out = in;
    *owned = 0;
    return HC_OK;
  }
  void *tmp = malloc(hc_field_bytes(in));
  if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory converting an input field");
  hc_status_t st = hc_field_read(in, tmp);
  if (st == HC_OK) st = upload(hc_job_device(job), p, tmp, hc_field_dtype(in), out);
  free(tmp);
  *owned = *out != NULL;
  if (st == HC_OK) {
    hc_job_note(job, "input field %s converted from %s to %s", hc_field_name(in), hc_dtype_name(hc_field_dtype(in)),
                hc_dtype_name(p->dtype));
  }
  return st;
}

static void count_points(jacobi_problem_t *p) {
  p->cells = (size_t)(p->n[0] * p->n[1] * p->n[2]);
  p->interior = (size_t)(p->n[1] - 2) * (size_t)(p->n[2] - 2) * (p->dim == 3 ? (size_t)(p->n[0] - 2) : 1);
}

hc_status_t jacobi_split(const hc_job_t *job, hc_split_t *split) {
  int64_t shape[HC_MAX_DIMS];
  const int64_t rows = hc_poisson_shape(job, "init", shape) ? shape[0] : 0;
  if (rows < 3) return HC_OK; /* the run reports the bad n or file */
  split->kind = HC_SPLIT_SLABS;
  split->rows = rows;
  /* Input fields f and u0 come as the part's rows (a core that takes this
   * plugin's ABI has the member). */
  if (HC_SPLIT_HAS_SLAB_INPUTS(split)) split->slab_inputs = 1;
  /* k ghost rows: a part sweeps k times between exchanges, each sweep
   * one row fewer into the ghost rows (solve.c), so it can sweep twice per
   * pass over memory like one device, and exchanges every k sweeps. */
  const int64_t every = hc_job_int(job, "sweeps_per_exchange");
  split->halo = (uint32_t)(every >= 2 ? every : 2);
  split->min_rows = split->halo;       /* a neighbour's ghost rows are then its own rows */
  if (HC_SPLIT_HAS_CALIBRATE(split)) { /* a few sweeps */
    const long long iters = hc_job_int(job, "iters"), k = iters < 10 ? iters : 10;
    snprintf(split->calibrate, sizeof split->calibrate, "iters=%lld tol=0 check=%lld", k, k);
    split->calibrate_work = (double)k / (double)iters;
  }
  return HC_OK;
}

/* A part's rows of a file (with its ghost rows), once localize has
 * narrowed the problem. */
static hc_status_t read_part_rows(host_field_t *hf, const jacobi_problem_t *p) {
  int64_t shape[HC_MAX_DIMS];
  hc_status_t st = hc_npy_read_rows(hf->path, p->off, p->off + p->n[p->ax], &hf->dtype, &hf->rank, shape, &hf->data);
  return st == HC_OK ? HC_OK : hc_error_prefix(HC_ERR_PARAM, "%s=%s: ", hf->param, hf->path);
}

void jacobi_localize(jacobi_problem_t *p) {
  int64_t lo, hi;
  hc_part_range(p->part, &lo, &hi);
  uint32_t below = hc_part_halo_below(p->part), above = hc_part_halo_above(p->part);
  p->off = lo - below;
  p->n[p->ax] = hi - lo + below + above;
  count_points(p);
  /* The norms count the own rows: neither the ghost rows nor, at the
   * grid's edges, the boundary. */
  p->own_lo = below ? (int)below : 1;
  p->own_hi = (int)p->n[p->ax] - (above ? (int)above : 1);
}

/* A port field's shape as the whole grid's: a part's field holds its rows
 * (and ghost rows), the whole has the split's rows. */
static const int64_t *whole_shape(const hc_field_t *f, const hc_part_t *part, int64_t *out) {
  memcpy(out, hc_field_shape(f), hc_field_rank(f) * sizeof *out);
  if (part && hc_field_rank(f) >= 1) out[0] = hc_part_global_rows(part);
  return out;
}

/* Grid from n (and dim), or from the shape of a field when n is not given. */
static hc_status_t settle_grid(hc_job_t *job, jacobi_problem_t *p, uint32_t frank, const int64_t *fshape,
                               const char *fwhat) {
  hc_shape_t n = hc_job_shape(job, "n");
  char ntext[96];
  shape_text(ntext, sizeof ntext, n.rank, n.dims);
  int dim_given = hc_job_given(job, "dim");
  int dim = dim_given ? (int)hc_job_int(job, "dim") : 0;
  int64_t pub[3];
  if (!hc_job_given(job, "n") && frank) {
    if (dim && dim != (int)frank) return hc_error(HC_ERR_PARAM, "dim=%d, but %s is %u-D", dim, fwhat, frank);
    hc_job_param_unused(job, "n"); /* the field's shape, not the default n */
    dim = (int)frank;
    for (int d = 0; d < dim; d++) pub[d] = fshape[d];
  } else {
    if (n.rank == 1) {
      if (!dim) dim = frank ? (int)frank : 2;
      for (int d = 0; d < dim; d++) pub[d] = n.dims[0];
    } else if (n.rank == 2 || n.rank == 3) {
      if (dim && dim != (int)n.rank)
        return hc_error(HC_ERR_PARAM, "n=%s has %u extents but dim=%d", ntext, n.rank, dim);
      dim = (int)n.rank;
      for (int d = 0; d < dim; d++) pub[d] = n.dims[d];
    } else {
      return hc_error(HC_ERR_PARAM, "n=%s: give one extent or %s", ntext,
                      dim == 3 ? "three (NXxNYxNZ)" : "two or three (NXxNY[xNZ])");
    }
  }
  p->dim = dim;
  for (int d = 0; d < dim; d++)
    if (pub[d] < 3)
      return hc_error(HC_ERR_PARAM,
                      "%s: %lld points on axis %d; every axis needs at least 3 (two boundary "
                      "points and one interior point)",
                      hc_job_given(job, "n") ? "n" : fwhat, (long long)pub[d], d);
  p->n[0] = 1;
  for (int d = 0; d < dim; d++) p->n[3 - dim + d] = pub[d];
  count_points(p);
  memcpy(p->gn, p->n, sizeof p->gn);
  p->ax = 3 - dim;
  p->off = 0;
  p->own_lo = 1;
  p->own_hi = (int)p->n[p->ax] - 1;
  p->interior_global = p->interior;
  double sw = 0;
  for (int a = 0; a < 3; a++) {
    int used = a >= 3 - dim;
    p->h[a] = used ? 1.0 / (double)(p->n[a] - 1) : 0;
    p->w[a] = used ? 1.0 / (p->h[a] * p->h[a]) : 0;
    sw += p->w[a];
  }
  for (int a = 0; a < 3; a++) p->c[a] = p->w[a] / (2 * sw);
  p->cf = 1 / (2 * sw);
  if (p->cells > (size_t)1 << 62 || p->n[2] > INT32_MAX || p->n[1] > INT32_MAX || p->n[0] > INT32_MAX)
    return hc_error(HC_ERR_PARAM, "n: grid too large");
  return HC_OK;
}

static hc_status_t parse_mode(hc_job_t *job, jacobi_problem_t *p) {
  hc_vec_t m = hc_job_vec(job, "mode");
  char text[128] = "";
  size_t len = 0;
  for (uint32_t i = 0; i < m.count && len < sizeof text; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, "%s%g", i ? "," : "", m.v[i]);
  if (m.count != 1 && (int)m.count != p->dim)
    return hc_error(HC_ERR_PARAM, "mode=%s: give one wave number or %d (one per axis)", text, p->dim);
  p->mode[0] = 1;
  for (int d = 0; d < p->dim; d++) {
    double k = m.v[m.count == 1 ? 0 : d];
    int a = 3 - p->dim + d;
    if (k != floor(k) || k < 1 || k > (double)(p->n[a] - 2))
      return hc_error(HC_ERR_PARAM, "mode=%s: wave numbers are whole numbers from 1 to n-2 = %lld on axis %d", text,
                      (long long)(p->n[a] - 2), d);
    p->mode[a] = (int)k;
  }
  return HC_OK;
}

static hc_status_t parse_block(hc_job_t *job, jacobi_problem_t *p) {
  p->block[0] = p->block[1] = p->block[2] = 1;
  p->block_given = hc_job_given(job, "block");
  if (!p->block_given) return HC_OK;
  hc_shape_t b = hc_job_shape(job, "block");
  char text[96];
  shape_text(text, sizeof text, b.rank, b.dims);
  if ((p->dim == 2 && b.rank != 2) || (p->dim == 3 && b.rank != 2 && b.rank != 3))
    return hc_error(HC_ERR_PARAM, "block=%s: a %d-D grid takes a block of %s extents", text, p->dim,
                    p->dim == 2 ? "2" : "2 (a marching tile) or 3");
  p->block_rank = (int)b.rank;
  for (uint32_t d = 0; d < b.rank; d++) p->block[3 - b.rank + d] = (int)b.dims[d];
  return HC_OK;
}

hc_status_t jacobi_problem_init(hc_job_t *job, jacobi_problem_t *p) {
  memset(p, 0, sizeof *p);
  hc_device_t *dev = hc_job_device(job);
  host_field_t hf = {"f", NULL, HC_DTYPE_NONE, 0, {0}, NULL};
  host_field_t hu = {"init", NULL, HC_DTYPE_NONE, 0, {0}, NULL};
  hc_status_t st = HC_OK;
  /* A part of a split run: its input fields hold its rows with their ghost
   * rows (hc_split_t.slab_inputs), and it reads only those rows of files. */
  hc_part_t *part = hc_job_part(job);
  p->dtype = !strcmp(hc_job_string(job, "dtype"), "f64") ? HC_F64 : HC_F32;
  p->es = hc_dtype_size(p->dtype);

  /* Right-hand side: the input port, a built-in, or a file. */
  hc_field_t *fport = hc_job_input(job, "f");
  const char *fname = hc_job_string(job, "f");
  if (fport && hc_job_given(job, "f"))
    return hc_error(HC_ERR_PARAM, "f=%s and the input field f: give one of them", fname);
  if (fport)
    p->rhs = RHS_FIELD, hc_job_param_unused(job, "f"); /* the report shows no default f=sin */
  else if (!jacobi_rhs_from_name(fname, &p->rhs)) {
    if (!ends_with(fname, ".npy"))
      return hc_error(HC_ERR_PARAM,
                      "f=%s: neither a built-in right-hand side (sin, gauss, point, zero) nor a "
                      ".npy file",
                      fname);
    p->rhs = RHS_FIELD;
    hf.path = fname;
    if ((st = read_host_field(&hf, part != NULL)) != HC_OK) goto out;
  }

  /* Start: the input port, zero, eigen, or a file. */
  hc_field_t *uport = hc_job_input(job, "u0");
  const char *init = hc_job_string(job, "init");
  if (uport && hc_job_given(job, "init")) {
    st = hc_error(HC_ERR_PARAM, "init=%s and the input field u0: give one of them", init);
    goto out;
  }
  if (uport)
    p->init = INIT_FIELD, hc_job_param_unused(job, "init");
  else if (!strcmp(init, "zero"))
    p->init = INIT_ZERO;
  else if (!strcmp(init, "eigen"))
    p->init = INIT_EIGEN;
  else if (ends_with(init, ".npy")) {
    p->init = INIT_FIELD;
    hu.path = init;
    if ((st = read_host_field(&hu, part != NULL)) != HC_OK) goto out;
  } else {
    st = hc_error(HC_ERR_PARAM, "init=%s: not zero, eigen or a .npy file", init);
    goto out;
  }

  /* The grid: n, or the shape of the first field given. A part's input
   * fields are checked in the whole's terms: their axis 0 is the split's
   * rows (the core refuses input fields with other rows). */
  {
    int64_t whole_f[HC_MAX_DIMS], whole_u[HC_MAX_DIMS];
    const int64_t *fshape = fport ? whole_shape(fport, part, whole_f) : hf.shape;
    const int64_t *ushape = uport ? whole_shape(uport, part, whole_u) : hu.shape;
    uint32_t frank = 0;
    const int64_t *gshape = NULL;
    char what[4200] = "";
    if (fport)
      frank = hc_field_rank(fport), gshape = fshape, snprintf(what, sizeof what, "input f");
    else if (hf.path)
      frank = hf.rank, gshape = fshape, snprintf(what, sizeof what, "f=%s", hf.path);
    else if (uport)
      frank = hc_field_rank(uport), gshape = ushape, snprintf(what, sizeof what, "input u0");
    else if (hu.path)
      frank = hu.rank, gshape = ushape, snprintf(what, sizeof what, "init=%s", hu.path);
    if ((st = settle_grid(job, p, frank, gshape, what)) != HC_OK) goto out;
    if (fport && (st = check_shape(p, "input f", hc_field_rank(fport), fshape)) != HC_OK) goto out;
    snprintf(what, sizeof what, "f=%s", hf.path ? hf.path : "");
    if (hf.path && (st = check_shape(p, what, hf.rank, hf.shape)) != HC_OK) goto out;
    if (uport && (st = check_shape(p, "input u0", hc_field_rank(uport), ushape)) != HC_OK) goto out;
    snprintf(what, sizeof what, "init=%s", hu.path ? hu.path : "");
    if (hu.path && (st = check_shape(p, what, hu.rank, hu.shape)) != HC_OK) goto out;
  }
  if (p->init == INIT_EIGEN && (st = parse_mode(job, p)) != HC_OK) goto out;

  /* Stopping. */
  p->iters = hc_job_int(job, "iters");
  p->check = hc_job_int(job, "check");
  p->tol = hc_job_float(job, "tol");
  if (p->tol < 0) {
    st = hc_error(HC_ERR_PARAM, "tol=%g: must be >= 0 (a relative residual; 0 runs exactly iters sweeps)", p->tol);
    goto out;
  }

  /* Kernels. */
  const char *fm = hc_job_string(job, "f_mode");
  if (!strcmp(fm, "computed") && p->rhs == RHS_FIELD) {
    st = hc_error(HC_ERR_PARAM, "f_mode=computed: f is a field, it can only be stored");
    goto out;
  }
  p->f_stored = !strcmp(fm, "stored") || p->rhs == RHS_FIELD;
  p->variant = !strcmp(hc_job_string(job, "variant"), "naive") ? VARIANT_NAIVE : VARIANT_TILED;
  if ((st = parse_block(job, p)) != HC_OK) goto out;
  p->want_residual = hc_job_bool(job, "residual");
  p->depth = (int)hc_job_int(job, "depth");
  p->rows = (int)hc_job_int(job, "rows");
  p->sweeps_per_pass = (int)hc_job_int(job, "sweeps_per_pass");
  const char *stores = hc_job_string(job, "stores");
  p->stores = !strcmp(stores, "plain") ? 1 : !strcmp(stores, "streaming") ? 2 : 0;
  p->part = part;
  if (p->part) {
    jacobi_localize(p);
    if (hf.path && (st = read_part_rows(&hf, p)) != HC_OK) goto out;
    if (hu.path && (st = read_part_rows(&hu, p)) != HC_OK) goto out;
  }

  /* Memory: two solution buffers, f when stored, the residual field, and
   * the fields read from files. */
  uint64_t field = (uint64_t)p->cells * p->es;
  uint64_t need = 2 * field + (p->f_stored && !(fport && hc_field_dtype(fport) == p->dtype) ? field : 0) +
                  (p->want_residual ? field : 0) +
                  (hu.path || (uport && hc_field_dtype(uport) != p->dtype) ? field : 0);
  if ((st = hc_device_check_memory(dev, need, "jacobi's fields")) != HC_OK) goto out;

  /* Fields onto the device. */
  if (fport)
    st = port_field(job, p, fport, &p->f_field, &p->f_owned);
  else if (hf.path) {
    st = upload(dev, p, hf.data, hf.dtype, &p->f_field);
    p->f_owned = 1;
  }
  if (st != HC_OK) goto out;
  if (uport)
    st = port_field(job, p, uport, &p->u0, &p->u0_owned);
  else if (hu.path) {
    st = upload(dev, p, hu.data, hu.dtype, &p->u0);
    p->u0_owned = 1;
  }
out:
  free(hf.data);
  free(hu.data);
  return st;
}

void jacobi_problem_free(jacobi_problem_t *p) {
  if (p->f_owned) hc_field_destroy(p->f_field);
  if (p->u0_owned) hc_field_destroy(p->u0);
  p->f_field = p->u0 = NULL;
}
