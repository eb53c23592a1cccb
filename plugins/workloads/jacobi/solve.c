/* jacobi — the run: buffers, the start, the sweep loop with its residual
 * checks, then metrics, errors, verification and outputs.
 *
 * Two solution buffers are swapped every sweep; the loop launches sweeps
 * back to back with no host round trip and allocates nothing. Every
 * `check` sweeps it waits for the device (a residual reduction when tol is
 * set) to report progress and test the stopping rule. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jacobi.h"

typedef struct {
  hc_job_t *job;
  hc_device_t *dev;
  jacobi_problem_t *p;
  jacobi_kernels_t k;
  hc_field_t *u[2];     /* the two solution buffers */
  hc_field_t *f_built;  /* a built-in f stored as a field */
  hc_field_t *f_input;  /* an input f: the job's, then the part's own once its rows moved */
  hc_buffer_t *tab;     /* right-hand-side factors */
  hc_buffer_t *partial; /* reduction partials */
  hc_buffer_t *f;       /* what the kernels read as f (NULL: computed) */
  double f2;            /* ||f||² over the interior */
  double r2_start;      /* ||f + Δu_0||² */
  double *htab;         /* host copy of the factors (3 axes) */
  size_t ntab;
} run_t;

/* Sums (or maxima) over the parts of a split run; nothing on a whole run. */
static hc_status_t across_parts(const run_t *r, hc_reduce_op_t op, double *v, uint32_t n) {
  return r->p->part ? hc_part_allreduce(r->p->part, op, v, n) : HC_OK;
}

/* The residual ||f + Δu||² and ||f||² over the whole grid. */
static hc_status_t residual(run_t *r, double *r2, double *f2) {
  hc_status_t st = jacobi_residual(&r->k, r->p, hc_field_buffer(r->u[0]), r->f, r->tab, r->partial, r2, f2);
  double v[2] = {*r2, *f2};
  if (st == HC_OK && (st = across_parts(r, HC_REDUCE_SUM, v, 2)) == HC_OK) *r2 = v[0], *f2 = v[1];
  return st;
}

static double relative(const run_t *r, double r2) {
  if (!isfinite(r2)) return r2; /* never a finite number that hides a NaN */
  if (r->f2 > 0) return sqrt(r2 / r->f2);
  return r->r2_start > 0 ? sqrt(r2 / r->r2_start) : 0;
}

/* Uploads [a | b] (two factor tables) for the compare kernel. */
static hc_status_t compare_with(run_t *r, const int *mode_a, const int *mode_b, double sa, double sb, double out[4]) {
  double *t = malloc(2 * r->ntab * sizeof *t);
  if (!t) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory");
  jacobi_sine_tables(r->p, mode_a, t);
  jacobi_sine_tables(r->p, mode_b, t + r->ntab);
  hc_buffer_t *b = NULL;
  hc_status_t st = jacobi_upload_table(r->dev, r->p, t, 2 * r->ntab, &b);
  free(t);
  if (st == HC_OK) st = jacobi_compare(&r->k, r->p, hc_field_buffer(r->u[0]), b, sa, sb, r->partial, out);
  hc_buffer_destroy(b);
  double sums[3] = {out[0], out[2], out[3]};
  if (st == HC_OK) st = across_parts(r, HC_REDUCE_SUM, sums, 3);
  if (st == HC_OK) st = across_parts(r, HC_REDUCE_MAX, &out[1], 1);
  out[0] = sums[0], out[2] = sums[1], out[3] = sums[2];
  return st;
}

/* Largest value of Π sin(k_d π x_d) on the grid points. */
static double sine_max(const jacobi_problem_t *p, const int *mode) {
  double m = 1;
  for (int a = 3 - p->dim; a < 3; a++) {
    double best = 0;
    for (int64_t i = 1; i < p->gn[a] - 1; i++) {
      double v = fabs(sin((mode ? mode[a] : 1) * M_PI * (double)i * p->h[a]));
      best = v > best ? v : best;
    }
    m *= best;
  }
  return m;
}

/* What follows the part's rows: the right-hand side's factor tables and
 * the reduction partials (the kernels' geometry gives their count). */
static hc_status_t make_tables(run_t *r) {
  jacobi_problem_t *p = r->p;
  hc_buffer_destroy(r->tab);
  hc_buffer_destroy(r->partial);
  free(r->htab);
  r->tab = r->partial = NULL;
  r->ntab = (size_t)(p->n[0] + p->n[1] + p->n[2]);
  r->htab = malloc(r->ntab * sizeof *r->htab);
  if (!r->htab) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory");
  jacobi_rhs_tables(p, r->htab, NULL);
  hc_status_t st = jacobi_upload_table(r->dev, p, r->htab, r->ntab, &r->tab);
  const size_t acc = r->k.acc_f64 ? sizeof(double) : sizeof(float);
  return st == HC_OK ? hc_buffer_create(r->dev, r->k.red_groups * 4 * acc, &r->partial) : st;
}

/* A built-in f stored as a field of the part's rows. */
static hc_status_t make_f(run_t *r, const int64_t *shape) {
  jacobi_problem_t *p = r->p;
  hc_field_destroy(r->f_built);
  r->f_built = NULL;
  hc_status_t st = hc_field_create(r->dev, p->dtype, (uint32_t)p->dim, shape, &r->f_built);
  if (st == HC_OK) st = jacobi_fill(&r->k, p, hc_field_buffer(r->f_built), r->tab, 1.0);
  r->f = st == HC_OK ? hc_field_buffer(r->f_built) : NULL;
  return st;
}

static hc_status_t setup(run_t *r) {
  jacobi_problem_t *p = r->p;
  hc_status_t st;
  int64_t shape[3];
  double h[3] = {0, 0, 0}, origin[3] = {0, 0, 0};
  for (int d = 0; d < p->dim; d++) shape[d] = p->n[3 - p->dim + d], h[d] = p->h[3 - p->dim + d];
  if ((st = make_tables(r)) != HC_OK) return st;
  for (int b = 0; b < 2; b++) {
    if ((st = hc_field_create(r->dev, p->dtype, (uint32_t)p->dim, shape, &r->u[b])) != HC_OK) return st;
    hc_field_set_spacing(r->u[b], h);
    hc_field_set_origin(r->u[b], origin);
    hc_field_set_name(r->u[b], "u");
  }
  /* f: a field, a built-in stored as a field, or computed in the kernels. */
  if ((r->f_input = p->f_field))
    r->f = hc_field_buffer(p->f_field);
  else if (p->f_stored && (st = make_f(r, shape)) != HC_OK)
    return st;
  /* The start, in both buffers (the boundary is never written again). */
  size_t bytes = p->cells * p->es;
  hc_buffer_t *eig = NULL;
  if (p->init == INIT_EIGEN) {
    double *t = malloc(r->ntab * sizeof *t);
    if (!t) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory");
    jacobi_sine_tables(p, p->mode, t);
    st = jacobi_upload_table(r->dev, p, t, r->ntab, &eig);
    free(t);
    if (st != HC_OK) return st;
  }
  for (int b = 0; b < 2 && st == HC_OK; b++) {
    hc_buffer_t *dst = hc_field_buffer(r->u[b]);
    static const double zero = 0;
    if (p->init == INIT_FIELD)
      st = hc_buffer_copy(dst, 0, hc_field_buffer(p->u0), 0, bytes);
    else if (p->init == INIT_ZERO)
      st = hc_buffer_fill(dst, 0, &zero, p->es, bytes);
    else
      st = jacobi_fill(&r->k, p, dst, eig, 1.0);
  }
  hc_buffer_destroy(eig);
  if (st != HC_OK) return st;
  st = residual(r, &r->r2_start, &r->f2);
  /* A NaN or an infinity in f or the start makes both norms non-finite; the
   * iteration cannot use it (status.h, "Non-finite values"): name it. */
  if (st == HC_OK && !(isfinite(r->f2) && isfinite(r->r2_start))) {
    if ((st = hc_job_check_finite(r->job, "f", p->f_field)) == HC_OK &&
        (st = hc_job_check_finite(r->job, "u0", p->u0)) == HC_OK)
      st = hc_error(HC_ERR_NUMERIC, "jacobi: the start's residual is not finite (||f||^2 = %g, ||f + Lap u0||^2 = %g)",
                    r->f2, r->r2_start);
  }
  return st;
}

/* Sweeps between the parts' comparisons of their speed (hc_part_rebalance). */
#define JACOBI_BALANCE_SWEEPS 16

/* Lets the parts' rows follow their measured speed: the solution buffers
 * and an input f move with the rows; the kernels, tables and a built-in f
 * are made again for the part's new rows (from global indices, so every
 * point keeps its arithmetic). */
static hc_status_t rebalance(run_t *r, int64_t sweeps_left) {
  jacobi_problem_t *p = r->p;
  /* An input f is the job's, read and never freed by the part (borrowed)
   * until its rows move: then the part holds its own f of its new rows. */
  const uint32_t f_borrowed = r->f_input == p->f_field && !p->f_owned;
  hc_field_t **fields[3] = {&r->u[0], &r->u[1], &r->f_input};
  int moved = 0;
  const double windows_left = (double)sweeps_left / JACOBI_BALANCE_SWEEPS;
  hc_status_t st = hc_part_rebalance(p->part, fields, r->f_input ? 3 : 2, f_borrowed << 2, 0, windows_left, &moved);
  if (st != HC_OK || !moved) return st;
  if (r->f_input && r->f_input != p->f_field && p->f_owned) p->f_field = r->f_input; /* the old one is destroyed */
  int64_t shape[3];
  jacobi_localize(p);
  for (int d = 0; d < p->dim; d++) shape[d] = p->n[3 - p->dim + d];
  if ((st = jacobi_kernels_resize(r->dev, p, &r->k)) != HC_OK || (st = make_tables(r)) != HC_OK) return st;
  if (r->f_input)
    r->f = hc_field_buffer(r->f_input);
  else if (r->f_built)
    st = make_f(r, shape);
  return st;
}

/* One pass of a split run with its halo exchange overlapping the
 * interior (hc_job_split_overlap), two sweeps in -> out. A side with a
 * neighbour has two ghost rows; the own rows next to it that the
 * neighbour needs are swept first, the exchange begins, the rest is swept
 * while it runs, and it ends. In local rows (nl along the split axis) with
 * neighbours on both sides:
 *   one kernel for both sweeps (sweep2, in -> out): rows [2, 4) and
 *     [nl - 4, nl - 2) (each reads `in` two rows further), then [4, nl - 4);
 *   two launches, A: in -> mid and B: mid -> in: A [1, 5), B [2, 4), then
 *     A [nl - 5, nl - 1), B [nl - 4, nl - 2), then A [5, nl - 5), B [4,
 *     nl - 4), where A reads no row B has written.
 * Every point gets the arithmetic of the plain pass. 0 with nothing done
 * when the own rows are too few for an interior (the plain pass runs). */
static int overlapped_pass(run_t *r, hc_field_t *in, hc_field_t *mid, hc_status_t *st) {
  jacobi_problem_t *p = r->p;
  const int nl = (int)p->n[p->ax];
  const int below = hc_part_halo_below(p->part) > 0, above = hc_part_halo_above(p->part) > 0;
  const jacobi_rows_t b_mid = {below ? 4 : 1, above ? nl - 4 : nl - 1};
  const jacobi_rows_t a_mid = {below ? 5 : 1, above ? nl - 5 : nl - 1};
  if ((!below && !above) || a_mid.r1 <= a_mid.r0) return 0;
  hc_buffer_t *u = hc_field_buffer(in), *v = hc_field_buffer(mid);
  hc_field_t *result = r->k.sweep2 ? mid : in;
  const jacobi_rows_t b_lo = {2, 4}, b_hi = {nl - 4, nl - 2}, a_lo = {1, 5}, a_hi = {nl - 5, nl - 1};
  hc_status_t s = HC_OK;
  int begun = 0;
  if (r->k.sweep2) {
    if (below) s = jacobi_sweep2(&r->k, p, u, v, r->f, r->tab, b_lo);
    if (s == HC_OK && above) s = jacobi_sweep2(&r->k, p, u, v, r->f, r->tab, b_hi);
    if (s == HC_OK) begun = (s = hc_part_halo_exchange_begin(p->part, result)) == HC_OK;
    if (s == HC_OK) s = jacobi_sweep2(&r->k, p, u, v, r->f, r->tab, b_mid);
  } else {
    if (below && (s = jacobi_sweep(&r->k, p, u, v, r->f, r->tab, a_lo)) == HC_OK)
      s = jacobi_sweep(&r->k, p, v, u, r->f, r->tab, b_lo);
    if (s == HC_OK && above && (s = jacobi_sweep(&r->k, p, u, v, r->f, r->tab, a_hi)) == HC_OK)
      s = jacobi_sweep(&r->k, p, v, u, r->f, r->tab, b_hi);
    if (s == HC_OK) begun = (s = hc_part_halo_exchange_begin(p->part, result)) == HC_OK;
    if (s == HC_OK && (s = jacobi_sweep(&r->k, p, u, v, r->f, r->tab, a_mid)) == HC_OK)
      s = jacobi_sweep(&r->k, p, v, u, r->f, r->tab, b_mid);
  }
  /* An exchange begun is ended, also after a failed sweep (the part's
   * neighbours are waiting for it). */
  hc_status_t e = begun ? hc_part_halo_exchange_end(p->part, result) : HC_OK;
  *st = s != HC_OK ? s : e;
  return 1;
}

static void swap_u(run_t *r) {
  hc_field_t *t = r->u[0];
  r->u[0] = r->u[1];
  r->u[1] = t;
}

/* len sweeps from u[0], the result left in u[0]: two at a time in one
 * pass over memory where the kernel does that. In a split run sweep j of
 * the pass (from 1) updates the rows its successors need: all but j rows
 * at each side with a neighbour, whose ghost rows were exchanged before
 * the pass (the rows further out would read rows not yet swept that far).
 * After `halo` sweeps the part's own rows are all up to date. */
static hc_status_t pass(run_t *r, int64_t len) {
  jacobi_problem_t *p = r->p;
  const int nl = (int)p->n[p->ax];
  const int below = p->part && hc_part_halo_below(p->part) > 0, above = p->part && hc_part_halo_above(p->part) > 0;
  hc_status_t st = HC_OK;
  for (int64_t j = 1; j <= len && st == HC_OK;) {
    const int two = r->k.sweep2 && len - j >= 1; /* sweeps j and j + 1 */
    const int last = (int)(two ? j + 1 : j);     /* the rows of the last of them */
    const jacobi_rows_t rows = {below ? last : 1, above ? nl - last : nl - 1};
    hc_buffer_t *u0 = hc_field_buffer(r->u[0]), *u1 = hc_field_buffer(r->u[1]);
    st = two ? jacobi_sweep2(&r->k, p, u0, u1, r->f, r->tab, rows) : jacobi_sweep(&r->k, p, u0, u1, r->f, r->tab, rows);
    swap_u(r);
    j += two ? 2 : 1;
  }
  return st;
}

/* The sweeps. On return r->u[0] holds the result; *sweeps and *res say how
 * many ran and the last relative residual measured (NAN if none). */
static hc_status_t iterate(run_t *r, int64_t *sweeps, double *res, int64_t *res_at, double *compute_s,
                           double *device_s) {
  jacobi_problem_t *p = r->p;
  hc_status_t st = HC_OK;
  int64_t s = 0;
  *res = NAN;
  *res_at = -1;
  double t0 = hc_now(), last_res = t0;
  const int overlap = p->part && hc_job_split_overlap(r->job);
  int64_t next_balance = JACOBI_BALANCE_SWEEPS;
  if ((st = hc_device_timer_begin(r->dev)) != HC_OK) return st;
  if (p->part && (st = rebalance(r, p->iters)) != HC_OK) return st; /* starts the parts' clocks */
  /* A split run's parts exchange their ghost rows every `halo` sweeps
   * (sweeps_per_exchange): the ghost rows on a side with a neighbour. */
  const int64_t halo = !p->part                      ? 0
                       : hc_part_halo_below(p->part) ? hc_part_halo_below(p->part)
                                                     : hc_part_halo_above(p->part);
  while (s < p->iters) {
    /* The sweeps of this pass: where no check or the end falls between
     * them, as many as a split run's ghost rows allow before the next
     * exchange, or two in one pass over memory where the kernel does that. */
    const int64_t next_check = (s / p->check + 1) * p->check;
    const int64_t room = (next_check < p->iters ? next_check : p->iters) - s;
    const int64_t len = p->part ? (room < halo ? room : halo) : r->k.sweep2 && room >= 2 ? 2 : 1;
    if (len == 2 && halo == 2 && overlap && overlapped_pass(r, r->u[0], r->u[1], &st)) {
      if (r->k.sweep2) swap_u(r); /* its result is in u[1] */
    } else {
      st = pass(r, len);
      /* A split run: the neighbours' new rows into the ghost rows. */
      if (st == HC_OK && p->part) st = hc_part_halo_exchange(p->part, r->u[0]);
    }
    if (st != HC_OK) break;
    s += len;
    if (p->part && s >= next_balance && s < p->iters) {
      next_balance = s + JACOBI_BALANCE_SWEEPS;
      if ((st = rebalance(r, p->iters - s)) != HC_OK) break;
    }
    if (s % p->check != 0 || s == p->iters) continue;
    /* The residual at every check when there is a tolerance; otherwise for
     * the progress line, at most once a second (it costs about a sweep),
     * except in a split run, where the parts must agree on when. */
    double now = hc_now();
    if (p->tol > 0 || (!p->part && now - last_res >= 1.0)) {
      double r2, f2;
      last_res = now;
      st = residual(r, &r2, &f2);
      if (st != HC_OK) break;
      *res = relative(r, r2);
      *res_at = s;
    } else if ((st = hc_device_finish(r->dev)) != HC_OK) {
      break;
    }
    double el = hc_now() - t0, frac = (double)s / (double)p->iters;
    /* With a tolerance, how far the residual has come down on a log scale. */
    if (p->tol > 0 && p->tol < 1 && *res > 0 && *res < 1) frac = fmax(frac, fmin(1, log(*res) / log(p->tol)));
    if (!p->part || hc_part_index(p->part) == 0)
      hc_job_progress(r->job, frac, "sweep %lld residual %.3e %.1f GLUP/s", (long long)s, *res,
                      el > 0 ? (double)p->interior * (double)s / el / 1e9 : 0.0);
    if (*res_at == s && !isfinite(*res)) {
      st = hc_error(HC_ERR_NUMERIC, "jacobi: the relative residual is %g after sweep %lld", *res, (long long)s);
      break;
    }
    if (p->tol > 0 && *res <= p->tol) break;
  }
  double dev_s = 0;
  hc_status_t st2 = hc_device_timer_end(r->dev, &dev_s);
  *compute_s = hc_now() - t0;
  *device_s = dev_s;
  *sweeps = s;
  if (st == HC_OK) st = st2;
  if (st == HC_OK) hc_job_progress(r->job, 1.0, "sweep %lld done", (long long)s);
  return st;
}

/* Metrics of the analytic cases: the error against Π sin(π x_d) for f =
 * sin, and the amplitude of the eigenmode for init=eigen. */
static hc_status_t analytic_metrics(run_t *r, int64_t sweeps) {
  jacobi_problem_t *p = r->p;
  hc_status_t st = HC_OK;
  double cell = 1;
  for (int a = 3 - p->dim; a < 3; a++) cell *= p->h[a];
  if (p->rhs == RHS_SIN && !p->f_field) {
    double o[4];
    if ((st = compare_with(r, NULL, NULL, 1.0, 0.0, o)) != HC_OK) return st;
    hc_job_add_metric(r->job, "error_max", o[1], "");
    hc_job_add_metric(r->job, "error_l2", sqrt(o[0] * cell), "");
    /* The converged discrete solution is c Π sin: its error is the
     * discretisation error, O(h²). */
    double c = jacobi_sin_discrete_scale(p);
    hc_job_add_metric(r->job, "error_converged", fabs(c - 1) * sine_max(p, NULL), "");
  }
  if (p->init == INIT_EIGEN) {
    double o[4];
    if ((st = compare_with(r, p->mode, p->mode, 0.0, 0.0, o)) != HC_OK) return st;
    double lam = jacobi_lambda(p, p->mode);
    hc_job_add_metric(r->job, "amplitude", o[3] > 0 ? o[2] / o[3] : 0, "");
    hc_job_add_metric(r->job, "lambda", lam, "");
    hc_job_add_metric(r->job, "lambda_pow_sweeps", pow(lam, (double)sweeps), "");
  }
  return st;
}

/* --verify: against the closed-form iterate where there is one (f = sin
 * or zero, start zero or an eigenvector), else against host reference
 * sweeps in double for small problems. */
static hc_status_t verify(run_t *r, int64_t sweeps) {
  jacobi_problem_t *p = r->p;
  double eps = p->dtype == HC_F64 ? DBL_EPSILON : FLT_EPSILON;
  double lam1 = jacobi_lambda(p, NULL);
  double depth = fmin((double)sweeps, 1 / (1 - lam1));
  if (!p->f_field && (p->rhs == RHS_SIN || p->rhs == RHS_ZERO) && p->init != INIT_FIELD) {
    /* u_n = J^n u_0 + (1 - J^n) u*: every term is a sine product. */
    double se = p->init == INIT_EIGEN ? pow(jacobi_lambda(p, p->mode), (double)sweeps) : 0;
    double c = jacobi_sin_discrete_scale(p);
    double ss = p->rhs == RHS_SIN ? c * (1 - pow(lam1, (double)sweeps)) : 0;
    double o[4];
    hc_status_t st = compare_with(r, p->init == INIT_EIGEN ? p->mode : NULL, NULL, se, ss, o);
    if (st != HC_OK) return st;
    double scale = fmax(fabs(se), fabs(ss)) > 0 ? fmax(fabs(se), fabs(ss)) : 1;
    /* rounding grows with the sweeps that still matter, about the
     * condition number; past 1e-3 of the solution it would pass a wrong one */
    double tol = fmin(8 * eps * (1 + depth), 1e-3) * scale + 8 * eps;
    hc_job_set_verified(r->job, o[1] <= tol,
                        "max |u - u_n| = %.3g against the closed-form iterate after %lld sweeps "
                        "(bound %.2g: 8 eps (1 + sweeps that matter), at most 1e-3, times max |u_n|)",
                        o[1], (long long)sweeps, tol);
    return HC_OK;
  }
  if (p->part) {
    hc_job_note(r->job, "verification skipped: a split run checks against closed forms only (f=sin or zero, "
                        "init=zero or eigen)");
    return HC_OK;
  }
  double work = (double)p->interior * (double)sweeps;
  if (work > 2e8) {
    hc_job_note(r->job,
                "verification skipped: no closed form for this f or start, and %.3g cell updates are too "
                "many for the host reference",
                work);
    return HC_OK;
  }
  hc_status_t st = HC_OK;
  double *f = calloc(p->cells, sizeof *f), *u0 = calloc(p->cells, sizeof *u0), *ref = calloc(p->cells, sizeof *ref);
  void *raw = malloc(p->cells * p->es);
  if (!f || !u0 || !ref || !raw) {
    st = hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory for the reference");
    goto out;
  }
  /* f: the field as the kernels read it, or the tables' product. */
  if (r->f) {
    if ((st = hc_buffer_read(r->f, 0, raw, p->cells * p->es)) != HC_OK) goto out;
    for (size_t c = 0; c < p->cells; c++) f[c] = p->dtype == HC_F64 ? ((double *)raw)[c] : ((float *)raw)[c];
  } else {
    const double *t = r->htab;
    for (int64_t i = 0; i < p->n[0]; i++)
      for (int64_t j = 0; j < p->n[1]; j++)
        for (int64_t k = 0; k < p->n[2]; k++)
          f[(i * p->n[1] + j) * p->n[2] + k] = t[i] * t[p->n[0] + j] * t[p->n[0] + p->n[1] + k];
  }
  if (p->init == INIT_FIELD) {
    if ((st = hc_field_read(p->u0, raw)) != HC_OK) goto out;
    for (size_t c = 0; c < p->cells; c++) u0[c] = p->dtype == HC_F64 ? ((double *)raw)[c] : ((float *)raw)[c];
  } else if (p->init == INIT_EIGEN) {
    double *t = malloc(r->ntab * sizeof *t);
    if (!t) {
      st = hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory");
      goto out;
    }
    jacobi_sine_tables(p, p->mode, t);
    for (int64_t i = 0; i < p->n[0]; i++)
      for (int64_t j = 0; j < p->n[1]; j++)
        for (int64_t k = 0; k < p->n[2]; k++)
          u0[(i * p->n[1] + j) * p->n[2] + k] = t[i] * t[p->n[0] + j] * t[p->n[0] + p->n[1] + k];
    free(t);
  }
  if ((st = jacobi_reference(p, f, u0, sweeps, ref)) != HC_OK) goto out;
  if ((st = hc_field_read(r->u[0], raw)) != HC_OK) goto out;
  double worst = 0, big = 0;
  for (size_t c = 0; c < p->cells; c++) {
    double v = p->dtype == HC_F64 ? ((double *)raw)[c] : ((float *)raw)[c];
    /* Not fmax: it drops a NaN, and a NaN must fail the check. */
    double d = fabs(v - ref[c]);
    worst = d > worst || isnan(d) ? (isnan(worst) ? worst : d) : worst;
    big = fmax(big, fabs(ref[c]));
  }
  double tol = fmin(8 * eps * (1 + depth), 1e-3) * (big > 0 ? big : 1);
  hc_job_set_verified(r->job, worst <= tol,
                      "max |u - u_ref| = %.3g against %lld host sweeps in double "
                      "(bound %.2g: 8 eps (1 + sweeps that matter), at most 1e-3, times max |u_ref|)",
                      worst, (long long)sweeps, tol);
out:
  free(f);
  free(u0);
  free(ref);
  free(raw);
  return st;
}

static hc_status_t report(run_t *r, int64_t sweeps, double res, double compute_s, double device_s) {
  jacobi_problem_t *p = r->p;
  const hc_device_info_t *in = hc_device_info(r->dev);
  double t = device_s > 0 ? device_s : compute_s;
  hc_status_t st = across_parts(r, HC_REDUCE_MAX, &t, 1); /* the slowest part's */
  if (st != HC_OK) return st;
  double glups = t > 0 ? (double)p->interior_global * (double)sweeps / t / 1e9 : 0;
  double bpu = (double)p->es * (p->f_stored ? 3 : 2);
  hc_job_set_times(r->job, compute_s, device_s);
  hc_job_add_metric(r->job, "sweeps", (double)sweeps, "");
  hc_job_add_metric(r->job, "residual", res, "");
  hc_job_add_metric(r->job, "glups", glups, "GLUP/s");
  hc_job_add_metric(r->job, "bytes_per_update", bpu, "B");
  /* The grid crosses memory once per pass: bytes_per_update over this is
   * what a sweep moves. */
  hc_job_add_metric(r->job, "sweeps_per_pass", r->k.sweep2 ? 2 : 1, "");
  hc_job_add_metric(r->job, "bandwidth_gbs", glups * bpu, "GB/s");
  if (in->peak_bandwidth_gbs > 0)
    hc_job_add_metric(r->job, "bandwidth_fraction", glups * bpu / in->peak_bandwidth_gbs, "");
  hc_job_add_metric(r->job, "sweep_time", sweeps ? t / (double)sweeps : 0, "s");
  hc_job_add_metric(r->job, "interior_points", (double)p->interior_global, "");
  if (r->f2 == 0 && r->r2_start > 0)
    hc_job_note(r->job, "f is zero: the residual is relative to the start's, ||Lap u|| / ||Lap u0||");
  return analytic_metrics(r, sweeps);
}

static void describe(run_t *r) {
  jacobi_problem_t *p = r->p;
  static const char *sweep_names[] = {"naive", "tiled", "tiled (marching along the slowest axis)"};
  char b[64] = "";
  size_t len = 0;
  int rank = p->block_rank ? p->block_rank : p->dim;
  for (int a = 3 - rank; a < 3; a++)
    len += (size_t)snprintf(b + len, sizeof b - len, "%s%d", a > 3 - rank ? "x" : "", p->block[a]);
  if (r->k.lang == HC_LANG_HOST)
    hc_job_note(r->job, "kernel: host, %s cache blocks of %s points, f %s, %s",
                p->variant == VARIANT_NAIVE ? "slab" : "marching", b, p->f_stored ? "stored" : "computed",
                !r->k.sweep2  ? "1 sweep per pass over memory"
                : r->k.stream ? "2 sweeps per pass over memory, streaming stores"
                              : "2 sweeps per pass over memory, plain stores");
  else
    hc_job_note(r->job, "kernel: %s %s, block %s, f %s", hc_language_name(r->k.lang), sweep_names[p->sweep], b,
                p->f_stored ? "stored" : "computed");
  if (p->sweep == SWEEP_MARCH && r->k.lang != HC_LANG_HOST)
    hc_job_note(r->job, "marching chunks of %d planes, %d planes loaded ahead", r->k.chunk, p->depth);
  if (p->rhs == RHS_POINT)
    for (int a = 3 - p->dim; a < 3; a++)
      if (p->n[a] % 2 == 0) {
        hc_job_note(r->job, "f=point: an even number of points on an axis; the source sits just below the centre");
        break;
      }
}

static hc_status_t outputs(run_t *r) {
  jacobi_problem_t *p = r->p;
  hc_status_t st = HC_OK;
  if (p->want_residual) {
    hc_field_t *rf = NULL;
    static const double zero = 0;
    int64_t shape[3];
    for (int d = 0; d < p->dim; d++) shape[d] = p->n[3 - p->dim + d];
    if ((st = hc_field_create(r->dev, p->dtype, (uint32_t)p->dim, shape, &rf)) == HC_OK &&
        (st = hc_buffer_fill(hc_field_buffer(rf), 0, &zero, p->es, p->cells * p->es)) == HC_OK &&
        (st = jacobi_residual_field(&r->k, p, hc_field_buffer(r->u[0]), r->f, r->tab, hc_field_buffer(rf))) == HC_OK) {
      hc_field_set_spacing(rf, hc_field_spacing(r->u[0]));
      hc_field_set_origin(rf, hc_field_origin(r->u[0]));
      hc_field_set_name(rf, "residual");
      /* a split run hands over its own rows only: the core gathers them */
      if ((st = hc_part_own_rows(p->part, &rf)) == HC_OK)
        st = hc_job_set_output(r->job, "residual", rf);
      else
        hc_field_destroy(rf);
    } else {
      hc_field_destroy(rf);
    }
    if (st != HC_OK) return st;
  }
  if ((st = hc_part_own_rows(p->part, &r->u[0])) != HC_OK) return st;
  st = hc_job_set_output(r->job, "u", r->u[0]);
  r->u[0] = NULL;
  return st;
}

hc_status_t jacobi_solve(hc_job_t *job, jacobi_problem_t *p) {
  run_t r;
  memset(&r, 0, sizeof r);
  r.job = job;
  r.dev = hc_job_device(job);
  r.p = p;
  int64_t sweeps = 0, res_at = -1;
  double res = NAN, compute_s = 0, device_s = 0;
  hc_status_t st = jacobi_kernels_create(r.dev, p, &r.k);
  if (st == HC_OK) st = setup(&r);
  if (st == HC_OK) st = iterate(&r, &sweeps, &res, &res_at, &compute_s, &device_s);
  if (st == HC_OK && res_at != sweeps) {
    double r2, f2;
    st = residual(&r, &r2, &f2);
    res = relative(&r, r2);
    if (st == HC_OK && !isfinite(res))
      st = hc_error(HC_ERR_NUMERIC, "jacobi: the relative residual is %g after sweep %lld", res, (long long)sweeps);
  }
  if (st == HC_OK) describe(&r);
  if (st == HC_OK) st = report(&r, sweeps, res, compute_s, device_s);
  if (st == HC_OK && hc_job_verify_requested(job)) st = verify(&r, sweeps);
  if (st == HC_OK) st = outputs(&r);
  hc_field_destroy(r.u[0]);
  hc_field_destroy(r.u[1]);
  hc_field_destroy(r.f_built);
  if (r.f_input != p->f_field) hc_field_destroy(r.f_input);
  hc_buffer_destroy(r.tab);
  hc_buffer_destroy(r.partial);
  free(r.htab);
  jacobi_kernels_destroy(&r.k);
  return st;
}
