/* bpm: the 3-D run by Peaceman-Rachford ADI. Each z-step is two launches,
 * x-lines then y-lines (bpm_adi_slow, bpm_adi_fast), between the field and
 * a scratch field on the device; the power by rows is summed on the device
 * at every saved step. Nothing comes back to the host until the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/tuning.h>

#include "bpm.h"
#include "host.h"

static size_t pow2_floor(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

typedef struct {
  size_t T, chunk, line, W, C, xchunk, Tp; /* fast: T threads x chunk; slow: W x C chunks of xchunk; power: Tp */
  int staged;
  int unroll; /* BPM_PRAGMA_UNROLL */
} shape3_t;

/* bpm's per-device tuning of the 3-D step (hc/tuning.h). Re-measure with
 * group= and tile=WxC (tests/gpu/probe.sh bpm on a GPU), the rest by
 * editing a row, each then with bench/run --only=bpm.
 *   y_unknowns    unknowns a thread of the y-lines solves (16 were slower
 *                 than 8 on both GPU backends)
 *   x_items       items per group of the x-lines
 *   x_rows, x_rows_c128  rows of a thread's chunk of an x-line (in c64,
 *                 c128); on a GPU 8 were faster at small sizes
 *   x_rows_full   rows of a chunk where x_rows would give more threads than
 *                 the device holds at once; 16 were faster at large sizes
 *                 on both GPU backends, in c64 and c128
 *   items_per_cu  work-items a compute unit holds at once (2048 on NVIDIA's
 *                 SMs since Volta); 0: no such limit is considered
 *   unroll        the kernels' loops carry unroll pragmas */
typedef struct {
  const char *device;
  int y_unknowns, x_items, x_rows, x_rows_c128, x_rows_full, items_per_cu, unroll;
} bpm_tuning_t;

static const bpm_tuning_t bpm_tuning[] = {
    {"gpu", 8, 1024, 8, 8, 16, 2048, 1},
    {"*", 8, 512, 32, 16, 0, 0, 0},
};

/* Work-group shapes within the device's limits; static local memory is
 * budgeted at 48 KiB (the CUDA limit without opt-in). */
static shape3_t pick_shapes(const bpm_config_t *c, const hc_device_info_t *info, const bpm_tuning_t *t) {
  shape3_t s;
  const int64_t yper = t->y_unknowns;
  const size_t cs = c->f64 ? 16 : 8;
  size_t maxg = info->max_work_group_size ? info->max_work_group_size : 256;
  size_t budget = info->local_mem_bytes ? info->local_mem_bytes : 49152;
  if (budget > 49152) budget = 49152;
  /* y-lines: about yper unknowns a thread */
  if (c->group > 0)
    s.T = pow2_floor((size_t)c->group);
  else
    for (s.T = 32; s.T < 256 && (int64_t)s.T * yper < c->ny;) s.T <<= 1;
  while (s.T > maxg) s.T >>= 1;
  /* stage the row in local memory if it fits, with fewer threads (and
   * more unknowns each, down to 64 threads) if that makes it fit */
  s.line = (size_t)c->ny;
  for (;;) {
    s.chunk = ((size_t)c->ny + s.T - 1) / s.T;
    s.staged = (s.line + s.line / s.chunk + 1) * cs + 4 * s.T * cs + 6 * cs <= budget;
    if (s.staged || s.T <= 64 || c->group > 0) break;
    s.T >>= 1;
  }
  if (!s.staged) {
    if (c->group <= 0)
      for (s.T = 32; s.T < 256 && (int64_t)s.T * yper < c->ny;) s.T <<= 1;
    while (s.T > maxg) s.T >>= 1;
    s.chunk = ((size_t)c->ny + s.T - 1) / s.T;
    s.line = 1;
  }
  /* x-lines: a thread holds a chunk of rows in registers, C chunks (a
   * power of two) per column, and as many neighbouring columns as make the
   * group (at most 32: a row segment of 32 values is one 256-byte
   * transaction in c64). The kernel declares its group shape, so the
   * compiler fits its registers to it. */
  const uint64_t resident = (uint64_t)(info->compute_units ? info->compute_units : 1) * (uint64_t)t->items_per_cu;
  size_t mmax = (size_t)(c->f64 ? t->x_rows_c128 : t->x_rows);
  if (t->items_per_cu && (uint64_t)c->nx * (uint64_t)c->ny / mmax > resident) mmax = (size_t)t->x_rows_full;
  const size_t xthreads = (size_t)t->x_items;
  for (s.C = 1; s.C < maxg && s.C * mmax < (size_t)c->nx;) s.C <<= 1;
  s.W = xthreads / s.C < 32 ? xthreads / s.C : 32;
  if (s.W < 1) s.W = 1;
  if (c->tile_w > 0) s.W = (size_t)c->tile_w, s.C = (size_t)c->tile_c;
  while (s.W * s.C > maxg && s.W > 1) s.W >>= 1;
  while (s.W * s.C > maxg && s.C > 1) s.C >>= 1;
  while ((4 * s.C * s.W + 6 * s.W) * cs > budget && s.W * s.C > 1) {
    if (s.W > 1)
      s.W >>= 1;
    else
      s.C >>= 1;
  }
  s.xchunk = ((size_t)c->nx + s.C - 1) / s.C;
  s.Tp = s.T;
  s.unroll = t->unroll;
  return s;
}

/* Coefficients of the x-lines (one per column j, or one line when the
 * medium is uniform) and y-lines, laid out as the kernels read them:
 * fac = [inv | cp], zc = [z0 | z1], per node (i ny + j) or per position;
 * the y-lines' thread-major for a device kernel of yT threads x ym unknowns
 * (position j at (j % ym) yT + j / ym of a line padded to yT ym), natural
 * for the host kernels (yT = 0). */
typedef struct {
  double complex *rr_x, *rr_y, *fac_x, *fac_y, *zc_x, *zc_y;
  size_t nrr, nfx, nfy; /* elements of rr, and of each half of fac_x, fac_y */
} coef3_t;

static void coef3_free(coef3_t *k) {
  free(k->rr_x), free(k->rr_y), free(k->fac_x), free(k->fac_y), free(k->zc_x), free(k->zc_y);
}

static hc_status_t build_coef3(const bpm_config_t *c, const bpm_problem_t *p, int percol, const bpm_axis_t *ax,
                               const bpm_axis_t *ay, size_t yT, size_t ym, coef3_t *k) {
  const int64_t nx = c->nx, ny = c->ny, mx = nx > ny ? nx : ny;
  const size_t ly = yT ? yT * ym : (size_t)ny; /* one y-line's length as stored */
  const int tbc = c->bc == BPM_BC_TRANSPARENT;
  memset(k, 0, sizeof *k);
  k->nrr = percol ? (size_t)(nx * ny) : 1;
  k->nfx = percol ? (size_t)(nx * ny) : (size_t)nx;
  k->nfy = percol ? (size_t)nx * ly : ly;
  k->rr_x = malloc(k->nrr * sizeof *k->rr_x);
  k->rr_y = malloc(k->nrr * sizeof *k->rr_y);
  k->fac_x = malloc(2 * k->nfx * sizeof *k->fac_x);
  k->fac_y = calloc(2 * k->nfy, sizeof *k->fac_y);
  k->zc_x = calloc(tbc ? 2 * k->nfx : 1, sizeof *k->zc_x);
  k->zc_y = calloc(tbc ? 2 * k->nfy : 1, sizeof *k->zc_y);
  double complex *cp = malloc((size_t)mx * sizeof *cp), *inv = malloc((size_t)mx * sizeof *inv),
                 *z = malloc(2 * (size_t)mx * sizeof *z);
  if (!k->rr_x || !k->rr_y || !k->fac_x || !k->fac_y || !k->zc_x || !k->zc_y || !cp || !inv || !z) {
    free(cp), free(inv), free(z);
    coef3_free(k);
    return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the 3-D coefficients");
  }
  for (size_t i = 0; i < k->nrr; i++) {
    k->rr_x[i] = 1 + ax->beta * (-2 + ax->vscale * p->v[i]);
    k->rr_y[i] = 1 + ay->beta * (-2 + ay->vscale * p->v[i]);
  }
  /* x-lines: column j, nodes i ny + j */
  for (int64_t j = 0; j < (percol ? ny : 1); j++) {
    bpm_factor_line(ax, c->theta, nx, p->v + j, (ptrdiff_t)ny, cp, inv);
    if (tbc) {
      memset(z, 0, 2 * (size_t)nx * sizeof *z);
      z[0] = 1, z[2 * nx - 1] = 1;
      bpm_solve_line(ax, nx, cp, inv, z, z);
      bpm_solve_line(ax, nx, cp, inv, z + nx, z + nx);
    }
    for (int64_t i = 0; i < nx; i++) {
      size_t o = percol ? (size_t)(i * ny + j) : (size_t)i;
      k->fac_x[o] = inv[i], k->fac_x[k->nfx + o] = cp[i];
      if (tbc) k->zc_x[o] = z[i], k->zc_x[k->nfx + o] = z[nx + i];
    }
  }
  /* y-lines: row i, nodes i ny + j */
  for (int64_t i = 0; i < (percol ? nx : 1); i++) {
    bpm_factor_line(ay, c->theta, ny, p->v + i * ny, 1, cp, inv);
    if (tbc) {
      memset(z, 0, 2 * (size_t)ny * sizeof *z);
      z[0] = 1, z[2 * ny - 1] = 1;
      bpm_solve_line(ay, ny, cp, inv, z, z);
      bpm_solve_line(ay, ny, cp, inv, z + ny, z + ny);
    }
    for (int64_t j = 0; j < ny; j++) {
      size_t o = (percol ? (size_t)i * ly : 0) + (yT ? (size_t)j % ym * yT + (size_t)j / ym : (size_t)j);
      k->fac_y[o] = inv[j], k->fac_y[k->nfy + o] = cp[j];
      if (tbc) k->zc_y[o] = z[j], k->zc_y[k->nfy + o] = z[ny + j];
    }
  }
  free(cp), free(inv), free(z);
  return HC_OK;
}

typedef struct {
  hc_buffer_t *rr_x, *rr_y, *fac_x, *fac_y, *zc_x, *zc_y, *mask, *partial;
  hc_field_t *scratch, *rhs; /* rhs: the x-lines' right-hand side (BPM_FWD) */
  hc_kernel_t *slow, *fast, *power;
} run3d_t;

static void run3d_free(run3d_t *s) {
  hc_buffer_destroy(s->rr_x), hc_buffer_destroy(s->rr_y), hc_buffer_destroy(s->fac_x), hc_buffer_destroy(s->fac_y);
  hc_buffer_destroy(s->zc_x), hc_buffer_destroy(s->zc_y), hc_buffer_destroy(s->mask), hc_buffer_destroy(s->partial);
  hc_field_destroy(s->scratch), hc_field_destroy(s->rhs);
  hc_kernel_destroy(s->slow), hc_kernel_destroy(s->fast), hc_kernel_destroy(s->power);
}

static hc_status_t build_kernels(hc_device_t *dev, const bpm_config_t *c, int percol, int fwd, shape3_t *sh,
                                 run3d_t *s) {
  const bpm_host_kernels_t *hk = &bpm_host[c->f64];
  for (;;) {
    /* the run's sizes, and its walls and medium where they allow the
     * cheaper code, as constants (kernels.hcl, BPM_RUN_ARGS: a faster
     * step on both GPU backends; making a varying medium or Hadley's walls
     * constants too made a slab much slower on CUDA); int indices
     * where the largest, 2 nx (ny + T) with the y-lines' padding, fits */
    const int tbc = c->bc == BPM_BC_TRANSPARENT, idx32 = 2 * (uint64_t)c->nx * ((uint64_t)c->ny + sh->T) < INT32_MAX;
    char opts[400], more[160];
    snprintf(more, sizeof more, " -DBPM_NX=%d -DBPM_NY=%d -DBPM_IDX=%s%s%s", (int)c->nx, (int)c->ny,
             idx32 ? "int" : "long", percol ? "" : " -DBPM_PERCOL=0 -DBPM_RUNI=1", tbc ? "" : " -DBPM_TBC=0");
    snprintf(opts, sizeof opts,
             "-DBPM_T=%zu -DBPM_CHUNK=%zu -DBPM_LINE=%zu -DBPM_STAGED=%d -DBPM_W=%zu -DBPM_C=%zu -DBPM_XCHUNK=%zu "
             "-DBPM_PRAGMA_UNROLL=%d -DBPM_FWD=%d%s",
             sh->T, sh->chunk, sh->line, sh->staged, sh->W, sh->C, sh->xchunk, sh->unroll, fwd, more);
    hc_status_t st;
    if ((st = bpm_kernel(dev, c->f64, "bpm_adi_slow", hk->adi_slow, opts, &s->slow)) != HC_OK) return st;
    if ((st = bpm_kernel(dev, c->f64, "bpm_adi_fast", hk->adi_fast, opts, &s->fast)) != HC_OK) return st;
    if ((st = bpm_kernel(dev, c->f64, "bpm_power3d", hk->power3d, opts, &s->power)) != HC_OK) return st;
    if (hc_kernel_language(s->fast) == HC_LANG_HOST) return HC_OK;
    int fits_fast = hc_kernel_max_group_size(s->fast) >= sh->T && hc_kernel_max_group_size(s->power) >= sh->T;
    int fits_slow = hc_kernel_max_group_size(s->slow) >= sh->W * sh->C;
    if (fits_fast && fits_slow) return HC_OK;
    hc_kernel_destroy(s->slow), hc_kernel_destroy(s->fast), hc_kernel_destroy(s->power);
    s->slow = s->fast = s->power = NULL;
    if (!fits_fast && sh->T > 1) {
      sh->T >>= 1;
      sh->chunk = ((size_t)c->ny + sh->T - 1) / sh->T;
      sh->Tp = sh->T;
    }
    if (!fits_slow) {
      if (sh->W > 1)
        sh->W >>= 1;
      else if (sh->C > 1)
        sh->C >>= 1;
      sh->xchunk = ((size_t)c->nx + sh->C - 1) / sh->C;
    }
    if (sh->T <= 1 && sh->W * sh->C <= 1)
      return hc_error(HC_ERR_UNSUPPORTED, "bpm: the device takes no work-group size");
  }
}

hc_status_t bpm_run3d(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p, bpm_result_t *res) {
  hc_device_t *dev = hc_job_device(job);
  const hc_device_info_t *info = hc_device_info(dev);
  const int f64 = c->f64, tbc = c->bc == BPM_BC_TRANSPARENT, percol = !p->v_uniform;
  const size_t cs = f64 ? 16 : 8, rs = f64 ? 8 : 4, N = (size_t)(c->nx * c->ny);
  run3d_t s;
  coef3_t k;
  memset(&s, 0, sizeof s);
  memset(&k, 0, sizeof k);
  double *partial = NULL;
  hc_status_t st;
  size_t ncoef = percol ? N : (size_t)(c->nx + c->ny);
  const bpm_axis_t ax = bpm_axis(c, c->hx, 0.5), ay = bpm_axis(c, c->hy, 0.5);
  size_t row = 0;
  if ((st = HC_TUNING_PICK(info, bpm_tuning, &row)) != HC_OK) return st;
  shape3_t sh = pick_shapes(c, info, &bpm_tuning[row]);
  /* The half-steps hand each other their right-hand sides (kernels.hcl,
   * BPM_FWD) on device languages, in a uniform medium, with staged y-lines
   * and walls other than Hadley's (which read the field at the walls):
   * one pass over the field fewer per half-step, which the GPU runs of
   * the benchmark report show as a faster step; with a varying medium, whose
   * explicit diagonal the x-lines then load after their sweeps, it was no
   * faster, so it stays off there. forward_rhs=off turns it off, for
   * comparison (tests/gpu/probe.sh alternates the two on a GPU). */
  const int fwd = !(info->languages & HC_LANG_BIT(HC_LANG_HOST)) && !tbc && !percol && sh.staged && c->forward_rhs;
  uint64_t bytes = (uint64_t)N * cs * (fwd ? 3 : 2) + (uint64_t)ncoef * cs * (2 + 2 + (tbc ? 4 : 0)) + N * rs +
                   (uint64_t)c->nsaved * c->nx * 2 * rs;
  if ((st = hc_device_check_memory(dev, bytes, "bpm's 3-D field, scratch and coefficients")) != HC_OK) return st;

  if ((st = build_kernels(dev, c, percol, fwd, &sh, &s)) != HC_OK) goto out;
  const int host = hc_kernel_language(s.fast) == HC_LANG_HOST;
  if ((st = build_coef3(c, p, percol, &ax, &ay, host ? 0 : sh.T, sh.chunk, &k)) != HC_OK) goto out;
  int64_t shape[2] = {c->nx, c->ny};
  if ((st = hc_field_create(dev, f64 ? HC_C128 : HC_C64, 2, shape, &res->field)) != HC_OK) goto out;
  if ((st = hc_field_create(dev, f64 ? HC_C128 : HC_C64, 2, shape, &s.scratch)) != HC_OK) goto out;
  if (fwd && (st = hc_field_create(dev, f64 ? HC_C128 : HC_C64, 2, shape, &s.rhs)) != HC_OK) goto out;
  if ((st = bpm_upload_to(hc_field_buffer(res->field), f64, p->e0, N)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, k.rr_x, k.nrr, &s.rr_x)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, k.rr_y, k.nrr, &s.rr_y)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, k.fac_x, 2 * k.nfx, &s.fac_x)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, k.fac_y, 2 * k.nfy, &s.fac_y)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, k.zc_x, tbc ? 2 * k.nfx : 1, &s.zc_x)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, k.zc_y, tbc ? 2 * k.nfy : 1, &s.zc_y)) != HC_OK) goto out;
  {
    void *m = malloc(N * rs);
    if (!m) {
      st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
      goto out;
    }
    for (size_t i = 0; i < N; i++) {
      if (f64)
        ((double *)m)[i] = p->core[i];
      else
        ((float *)m)[i] = p->core[i];
    }
    if ((st = hc_buffer_create(dev, N * rs, &s.mask)) == HC_OK) st = hc_buffer_write(s.mask, 0, m, N * rs);
    free(m);
    if (st != HC_OK) goto out;
  }
  if ((st = hc_buffer_create(dev, (size_t)(c->nsaved * c->nx) * 2 * rs, &s.partial)) != HC_OK) goto out;

  if (!host)
    hc_job_note(job,
                "ADI line solvers: x-lines %zu columns x %zu chunks of %zu rows per work-group; y-lines %zu "
                "threads x %zu unknowns per row%s%s",
                sh.W, sh.C, sh.xchunk, sh.T, sh.chunk, sh.staged ? " (staged in local memory)" : "",
                fwd ? "; each half-step hands the next its right-hand side" : "");

  const int nxi = (int)c->nx, nyi = (int)c->ny, runi = !percol;
  const double lx_d[2] = {creal(ax.lo), cimag(ax.lo)}, ly_d[2] = {creal(ay.lo), cimag(ay.lo)};
  const double bx_d[2] = {creal(ax.beta), cimag(ax.beta)}, by_d[2] = {creal(ay.beta), cimag(ay.beta)};
  const float lx_f[2] = {(float)lx_d[0], (float)lx_d[1]}, ly_f[2] = {(float)ly_d[0], (float)ly_d[1]};
  const float bx_f[2] = {(float)bx_d[0], (float)bx_d[1]}, by_f[2] = {(float)by_d[0], (float)by_d[1]};
#define RARG2(name, i) (f64 ? HC_ARG_VAL(name##_d[i]) : HC_ARG_VAL(name##_f[i]))
  hc_buffer_t *e = hc_field_buffer(res->field), *es = hc_field_buffer(s.scratch);
  /* x-lines implicit with lo_x, explicit along y with be_y and rr_y; then
   * y-lines implicit with lo_y, explicit along x with be_x and rr_x */
  /* BPM_FWD: the x-lines read the field on the first step (in_rhs = 0)
   * and the y-lines' right-hand side after; the y-lines write the x-lines'
   * into rhs, and the field too on a step whose end is saved (emit) */
  hc_buffer_t *rhs = fwd ? hc_field_buffer(s.rhs) : e;
  int in_rhs = 0, emit = 0;
  hc_arg_t aslow[18] = {
      HC_ARG_VAL(nxi), HC_ARG_VAL(nyi), HC_ARG_VAL(tbc),    HC_ARG_VAL(percol), HC_ARG_VAL(runi),    RARG2(lx, 0),
      RARG2(lx, 1),    RARG2(by, 0),    RARG2(by, 1),       HC_ARG_BUF(s.rr_y), HC_ARG_BUF(s.fac_x), HC_ARG_BUF(s.zc_x),
      HC_ARG_BUF(e),   HC_ARG_BUF(es),  HC_ARG_VAL(in_rhs), HC_ARG_BUF(s.rr_x), RARG2(bx, 0),        RARG2(bx, 1)};
  hc_arg_t afast[19] = {HC_ARG_VAL(nxi),  HC_ARG_VAL(nyi),    HC_ARG_VAL(tbc),     HC_ARG_VAL(percol),
                        HC_ARG_VAL(runi), RARG2(ly, 0),       RARG2(ly, 1),        RARG2(bx, 0),
                        RARG2(bx, 1),     HC_ARG_BUF(s.rr_x), HC_ARG_BUF(s.fac_y), HC_ARG_BUF(s.zc_y),
                        HC_ARG_BUF(es),   HC_ARG_BUF(rhs),    HC_ARG_VAL(emit),    HC_ARG_BUF(s.rr_y),
                        RARG2(by, 0),     RARG2(by, 1),       HC_ARG_BUF(e)};
#undef RARG2
  long save = 0;
  hc_arg_t apow[6] = {HC_ARG_VAL(nxi),    HC_ARG_VAL(nyi),       HC_ARG_BUF(e),
                      HC_ARG_BUF(s.mask), HC_ARG_BUF(s.partial), HC_ARG_VAL(save)};
  /* launch shapes: the cpu backend gets blocks of 32 columns (a block's
   * rows stay in cache between the sweeps) and its own split of rows */
  size_t sg0 = host ? (size_t)c->ny : ((size_t)c->ny + sh.W - 1) / sh.W * sh.W, sg1 = host ? 0 : sh.C;
  size_t sl0 = host ? 32 : sh.W, sl1 = host ? 0 : sh.C;
  size_t fg = host ? (size_t)c->nx : (size_t)c->nx * sh.T, fl = host ? 0 : sh.T;
  size_t pg = host ? (size_t)c->nx : (size_t)c->nx * sh.Tp, pl = host ? 0 : sh.Tp;

  double t0 = hc_now(), dev_s = 0;
  if ((st = hc_device_timer_begin(dev)) != HC_OK) goto out;
  st = bpm_launch(s.power, pg, 0, pl, 0, 6, apow);
  int64_t done = 0;
  for (save = 1; st == HC_OK && save < c->nsaved; save++) {
    int64_t todo = c->steps - done < c->save_every ? c->steps - done : c->save_every;
    for (int64_t q = 0; q < todo && st == HC_OK; q++) {
      emit = q == todo - 1;
      st = bpm_launch(s.slow, sg0, sg1, sl0, sl1, 18, aslow);
      if (st == HC_OK) st = bpm_launch(s.fast, fg, 0, fl, 0, 19, afast);
      if (fwd && !in_rhs) in_rhs = 1, aslow[12] = HC_ARG_BUF(rhs);
    }
    if (st == HC_OK) st = bpm_launch(s.power, pg, 0, pl, 0, 6, apow);
    done += todo;
    hc_job_progress(job, (double)done / (double)c->steps, "z = %.4g um", (double)done * c->hz);
  }
  hc_status_t st2 = hc_device_timer_end(dev, &dev_s);
  if (st == HC_OK) st = st2;
  if (st == HC_OK) st = hc_device_finish(dev);
  if (st != HC_OK) goto out;
  res->compute_s = hc_now() - t0;
  res->device_s = dev_s;
  res->step_s = (dev_s > 0 ? dev_s : res->compute_s) / (double)c->steps;
  /* algorithmic traffic of one ADI step: each half-step reads and writes
   * the field once, plus its per-node coefficients when the medium varies */
  res->bytes_per_step = (double)N * (double)cs * (4 + (percol ? 6 + (tbc ? 4 : 0) : 0));

  /* power trace and the cross-section at Lz, on the host */
  size_t np = (size_t)(c->nsaved * c->nx) * 2;
  partial = malloc(np * sizeof *partial);
  void *raw = malloc(np * rs);
  res->power = calloc((size_t)c->nsaved, sizeof *res->power);
  res->core_power = calloc((size_t)c->nsaved, sizeof *res->core_power);
  res->intensity = malloc(N * rs);
  void *ef = malloc(N * cs);
  if (!partial || !raw || !res->power || !res->core_power || !res->intensity || !ef) {
    free(raw), free(ef);
    st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
    goto out;
  }
  if ((st = hc_buffer_read(s.partial, 0, raw, np * rs)) == HC_OK) st = hc_field_read(res->field, ef);
  if (st == HC_OK) {
    for (size_t i = 0; i < np; i++) partial[i] = f64 ? ((double *)raw)[i] : ((float *)raw)[i];
    for (int64_t q = 0; q < c->nsaved; q++)
      for (int64_t i = 0; i < c->nx; i++) {
        res->power[q] += partial[(q * c->nx + i) * 2] * c->hx * c->hy;
        res->core_power[q] += partial[(q * c->nx + i) * 2 + 1] * c->hx * c->hy;
      }
    for (size_t i = 0; i < N; i++) {
      double re = f64 ? ((double *)ef)[2 * i] : ((float *)ef)[2 * i];
      double im = f64 ? ((double *)ef)[2 * i + 1] : ((float *)ef)[2 * i + 1];
      if (f64)
        ((double *)res->intensity)[i] = re * re + im * im;
      else
        ((float *)res->intensity)[i] = (float)(re * re + im * im);
    }
    if ((st = hc_field_create(dev, f64 ? HC_F64 : HC_F32, 2, shape, &res->intensity_f)) == HC_OK)
      st = hc_field_write(res->intensity_f, res->intensity);
  }
  free(raw), free(ef);
  if (st != HC_OK) goto out;
  double h[2] = {c->hx, c->hy}, o[2] = {c->hx, c->hy};
  hc_field_set_spacing(res->field, h), hc_field_set_origin(res->field, o);
  hc_field_set_spacing(res->intensity_f, h), hc_field_set_origin(res->intensity_f, o);
out:
  free(partial);
  coef3_free(&k);
  run3d_free(&s);
  return st;
}
