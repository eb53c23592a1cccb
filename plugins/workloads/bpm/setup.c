/* bpm: parameters -> a validated run configuration. Every user error here
 * is HC_ERR_PARAM naming the parameter, before anything is allocated or
 * written. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "bpm.h"

/* The parameter's text as given (hc_job_string is "" for non-strings). */
const char *bpm_param_text(const hc_job_t *job, const char *name) {
  for (uint32_t i = 0; i < hc_job_param_count(job); i++) {
    const char *n, *v;
    if (hc_job_param_get(job, i, &n, &v) == HC_OK && !strcmp(n, name)) return v;
  }
  return "";
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcasecmp(s + a - b, suffix);
}

static hc_status_t parse_profile(const char *s, bpm_profile_t *out) {
  if (!strcmp(s, "uniform"))
    *out = BPM_PROFILE_UNIFORM;
  else if (!strcmp(s, "slab"))
    *out = BPM_PROFILE_SLAB;
  else if (!strcmp(s, "graded"))
    *out = BPM_PROFILE_GRADED;
  else if (ends_with(s, ".npy"))
    *out = BPM_PROFILE_FILE;
  else
    return hc_error(HC_ERR_PARAM, "parameter profile=%s: expected uniform, slab, graded or a .npy file", s);
  return HC_OK;
}

static hc_status_t parse_launch(const char *s, bpm_launch_t *out) {
  if (!strcmp(s, "mode"))
    *out = BPM_LAUNCH_MODE;
  else if (!strcmp(s, "gauss"))
    *out = BPM_LAUNCH_GAUSS;
  else if (ends_with(s, ".npy"))
    *out = BPM_LAUNCH_FILE;
  else
    return hc_error(HC_ERR_PARAM, "parameter launch=%s: expected mode, gauss or a .npy file", s);
  return HC_OK;
}

static hc_status_t parse_bc(const char *s, bpm_bc_t *out) {
  static const char *const names[] = {
#define BPM_BC_STR_(e, n) n,
      BPM_BC_LIST(BPM_BC_STR_)
#undef BPM_BC_STR_
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i])) {
      *out = (bpm_bc_t)i;
      return HC_OK;
    }
  return hc_error(HC_ERR_PARAM, "parameter bc=%s: unknown boundary", s);
}

/* offset= and tilt=: one value is the y component; two are x,y (3-D). */
static hc_status_t xy_vec(const hc_job_t *job, const char *name, int dim, double out[2]) {
  hc_vec_t v = hc_job_vec(job, name);
  out[0] = out[1] = 0;
  if (v.count == 1)
    out[1] = v.v[0];
  else if (v.count == 2 && dim == 3)
    out[0] = v.v[0], out[1] = v.v[1];
  else
    return hc_error(HC_ERR_PARAM, "parameter %s=%s: give %s", name, bpm_param_text(job, name),
                    dim == 3 ? "one value (y) or two (x,y)" : "one value (y) in 2-D");
  return HC_OK;
}

hc_status_t bpm_config_from_job(const hc_job_t *job, bpm_config_t *c) {
  hc_status_t st;
  memset(c, 0, sizeof *c);
  c->dim = hc_job_string(job, "dim")[0] == '3' ? 3 : 2;
  c->f64 = !strcmp(hc_job_string(job, "dtype"), "c128");

  hc_shape_t n = hc_job_shape(job, "n");
  if (c->dim == 2) {
    if (n.rank != 1)
      return hc_error(HC_ERR_PARAM, "parameter n=%s: dim=2 takes one extent (n=1000)", bpm_param_text(job, "n"));
    c->nx = 1, c->ny = n.dims[0];
  } else if (!hc_job_given(job, "n")) {
    c->nx = c->ny = 256;
  } else if (n.rank == 1) {
    c->nx = c->ny = n.dims[0];
  } else if (n.rank == 2) {
    c->nx = n.dims[0], c->ny = n.dims[1];
  } else {
    return hc_error(HC_ERR_PARAM, "parameter n=%s: dim=3 takes n or NXxNY", bpm_param_text(job, "n"));
  }

  c->lambda = hc_job_float(job, "lambda");
  c->k0 = 2 * M_PI / c->lambda;
  c->Ly = hc_job_float(job, "Ly");
  c->Lx = hc_job_float(job, "Lx") > 0 ? hc_job_float(job, "Lx") : c->Ly;
  c->Lz = hc_job_float(job, "Lz");
  c->hy = c->Ly / (double)(c->ny + 1);
  c->hx = c->dim == 3 ? c->Lx / (double)(c->nx + 1) : c->hy;

  /* z step: hz= or steps=, else the paper's hz = hy/pi; then adjusted so
   * that a whole number of steps ends exactly at Lz. */
  int hz_given = hc_job_given(job, "hz"), steps_given = hc_job_given(job, "steps");
  double hz = hc_job_float(job, "hz");
  int64_t steps = hc_job_int(job, "steps");
  if (hz_given && steps_given) return hc_error(HC_ERR_PARAM, "parameters hz= and steps=: give one of them, not both");
  if (hz_given && !(hz > 0))
    return hc_error(HC_ERR_PARAM, "parameter hz=%s: the z step must be > 0", bpm_param_text(job, "hz"));
  if (steps_given && steps < 1)
    return hc_error(HC_ERR_PARAM, "parameter steps=%s: must be >= 1", bpm_param_text(job, "steps"));
  if (!steps_given) {
    if (!hz_given) hz = fmin(c->hy, c->hx) / M_PI;
    double s = c->Lz / hz;
    if (s > 1e12) return hc_error(HC_ERR_PARAM, "parameter hz=%g: Lz/hz = %.3g steps is too many", hz, s);
    steps = (int64_t)llround(s);
    if (steps < 1) steps = 1;
  }
  c->steps = steps;
  c->hz = c->Lz / (double)steps;

  c->save_every = hc_job_int(job, "save_every");
  if (c->save_every <= 0) c->save_every = (c->steps + 255) / 256;
  if (c->save_every > c->steps) c->save_every = c->steps;
  c->nsaved = 1 + (c->steps + c->save_every - 1) / c->save_every;

  c->theta = hc_job_float(job, "theta");
  c->n_clad = hc_job_float(job, "n_clad");
  c->n_core = hc_job_float(job, "n_core");
  c->width = hc_job_float(job, "width");
  c->n0 = hc_job_float(job, "n0"); /* 0: chosen with the medium (medium.c) */

  if ((st = parse_bc(hc_job_string(job, "bc"), &c->bc)) != HC_OK) return st;
  c->kappa = hc_job_float(job, "kappa");
  c->absorb_width = hc_job_float(job, "absorb_width");
  double lmin = c->dim == 3 ? fmin(c->Lx, c->Ly) : c->Ly;
  if (c->absorb_width <= 0) c->absorb_width = lmin / 8;
  if (c->bc == BPM_BC_ABSORBING && c->absorb_width >= lmin / 2)
    return hc_error(HC_ERR_PARAM, "parameter absorb_width=%g: two layers must fit the window (< %g um)",
                    c->absorb_width, lmin / 2);

  c->solver = !strcmp(hc_job_string(job, "solver"), "richardson") ? BPM_SOLVER_RICHARDSON : BPM_SOLVER_DIRECT;
  if (c->solver == BPM_SOLVER_RICHARDSON && c->dim == 3)
    return hc_error(HC_ERR_PARAM, "parameter solver=richardson: the one-parameter iteration is for dim=2 (3-D uses ADI "
                                  "with direct line solves)");
  c->order = hc_job_string(job, "order")[0] == '4' ? 4 : 2;
  if (c->order == 4 && (c->solver != BPM_SOLVER_RICHARDSON || c->dim != 2 || c->bc == BPM_BC_TRANSPARENT))
    return hc_error(HC_ERR_PARAM,
                    "parameter order=4: the 5-point stencil makes a pentadiagonal matrix, solved here by "
                    "the paper's iteration only: give solver=richardson (2-D, walls conductor or absorbing)");
  c->iters = hc_job_int(job, "iters");
  c->tol = hc_job_float(job, "tol"); /* 0: chosen with the matrix (march2d.c) */

  if ((st = parse_profile(hc_job_string(job, "profile"), &c->profile)) != HC_OK) return st;
  if ((st = parse_launch(hc_job_string(job, "launch"), &c->launch)) != HC_OK) return st;
  if (hc_job_input(job, "field")) c->launch = BPM_LAUNCH_PORT;
  c->waist = hc_job_float(job, "waist");
  if ((st = xy_vec(job, "offset", c->dim, c->offset)) != HC_OK) return st;
  if ((st = xy_vec(job, "tilt", c->dim, c->tilt)) != HC_OK) return st;

  c->group = hc_job_int(job, "group");
  c->forward_rhs = strcmp(hc_job_string(job, "forward_rhs"), "off") != 0;
  const char *line = hc_job_string(job, "line");
  c->line = !strcmp(line, "private") ? BPM_LINE_PRIVATE : !strcmp(line, "global") ? BPM_LINE_GLOBAL : BPM_LINE_AUTO;
  hc_shape_t tile = hc_job_shape(job, "tile");
  if (tile.rank != 2 || (tile.dims[0] == 0) != (tile.dims[1] == 0))
    return hc_error(HC_ERR_PARAM, "parameter tile=%s: give WxC (e.g. 8x64), or 0x0 for automatic",
                    bpm_param_text(job, "tile"));
  c->tile_w = tile.dims[0], c->tile_c = tile.dims[1];
  hc_shape_t im = hc_job_shape(job, "image");
  if (im.rank != 2)
    return hc_error(HC_ERR_PARAM, "parameter image=%s: give WxH (e.g. 1024x384)", bpm_param_text(job, "image"));
  c->image_w = im.dims[0], c->image_h = im.dims[1];
  return HC_OK;
}
