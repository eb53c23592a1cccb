/* multigrid — the solve: V-cycles until the relative residual reaches tol
 * (checked after every cycle), then metrics (residual per cycle,
 * convergence factor, time to solution), verification and outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"

/* The discrete solution of f = d pi^2 prod sin(pi x_d) is c prod sin(pi x_d). */
static double sin_discrete_scale(const mg_t *m) {
  double s = 0;
  for (int d = 0; d < m->dim; d++) {
    double h = m->lv[0].h[d], t = sin(M_PI * h / 2);
    s += 4 * t * t / (h * h);
  }
  return m->dim * M_PI * M_PI / s;
}

/* max |u - a prod sin(pi x_d)| over the interior (one fused reduction). */
static hc_status_t sine_error(mg_t *m, double a, double *out) {
  hc_gfunc_t fn;
  memset(&fn, 0, sizeof fn);
  fn.size = sizeof fn;
  fn.kind = HC_GFUNC_SIN;
  fn.amplitude = a;
  fn.k[0] = fn.k[1] = fn.k[2] = 1;
  hc_gexpr_t *e = hc_gexpr_sub(m->g, hc_gexpr_dense(m->g, m->lv[0].u), hc_gexpr_computable(m->g, &fn));
  return mg_reduce(m, HC_GRID_MAXABS, m->lv[0].u, e, out);
}

/* The smallest relative residual the dtype can hold u to on this grid: a
 * sweep's update s r_i (s = 1 / sum_d 2/h_d^2) is lost in rounding once it
 * is below eps |u_i|, so ||r|| / ||f|| stops near eps sum_d 2/h_d^2 ||u|| /
 * ||f||; twice that is the bound (eps: the unit roundoff, 2^-24 or 2^-53). */
hc_status_t mg_rounding_floor(mg_t *m, double *out) {
  double u2 = 0, s = 0;
  hc_status_t st = mg_reduce(m, HC_GRID_SUMSQ, m->lv[0].u, hc_gexpr_dense(m->g, m->lv[0].u), &u2);
  if (st != HC_OK) return st;
  for (int d = 0; d < m->dim; d++) s += 2 / (m->lv[0].h[d] * m->lv[0].h[d]);
  const double eps = m->dtype == HC_F64 ? 0x1p-53 : 0x1p-24;
  *out = 2 * eps * (1 + s * sqrt(u2) / m->f_norm);
  return HC_OK;
}

static hc_status_t write_csv(mg_t *m) {
  if (!hc_job_output_dir(m->job)) return HC_OK;
  char path[4096], *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return hc_error(HC_ERR_NO_MEMORY, "multigrid: out of memory writing the residual history");
  fprintf(mem, "cycle,relative_residual,factor\n");
  for (int64_t c = 0; c <= m->done; c++)
    fprintf(mem, "%lld,%.6e,%.4f\n", (long long)c, m->res[c], c ? m->res[c] / m->res[c - 1] : 0.0);
  fclose(mem);
  hc_status_t st = hc_job_output_file(m->job, "multigrid_residuals.csv", path, sizeof path);
  if (st == HC_OK) st = hc_write_file_atomic(path, text, len);
  free(text);
  return st;
}

static hc_status_t restart(mg_t *m) {
  hc_status_t st;
  if (m->u0) {
    size_t b = hc_field_bytes(m->lv[0].u);
    void *tmp = malloc(b);
    if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory");
    /* the warm-up cycle left u changed: start again from the input */
    st = hc_field_read(m->u0, tmp);
    if (st == HC_OK && hc_field_dtype(m->u0) == m->dtype)
      st = hc_field_write(m->lv[0].u, tmp);
    else if (st == HC_OK) {
      size_t n = hc_field_count(m->lv[0].u);
      void *conv = malloc(b);
      if (!conv) st = hc_error(HC_ERR_NO_MEMORY, "multigrid: out of host memory");
      for (size_t i = 0; st == HC_OK && i < n; i++) {
        double v = hc_field_dtype(m->u0) == HC_F64 ? ((double *)tmp)[i] : ((float *)tmp)[i];
        if (m->dtype == HC_F64)
          ((double *)conv)[i] = v;
        else
          ((float *)conv)[i] = (float)v;
      }
      if (st == HC_OK) st = hc_field_write(m->lv[0].u, conv);
      free(conv);
    }
    free(tmp);
    return st;
  }
  return hc_grid_assign(m->g, m->lv[0].u, m->lv[0].zero, NULL, NULL);
}

hc_status_t mg_solve(mg_t *m) {
  hc_job_t *job = m->job;
  hc_status_t st;
  double f2 = 0;
  if ((st = mg_reduce(m, HC_GRID_SUMSQ, m->lv[0].f, hc_gexpr_dense(m->g, m->lv[0].f), &f2)) != HC_OK) return st;
  m->f_norm = sqrt(f2);
  /* A NaN or an infinity in f cannot be solved for (status.h, "Non-finite
   * values"): refuse it, naming the element. */
  if (!isfinite(f2)) {
    if ((st = hc_job_check_finite(job, "f", m->f_in)) != HC_OK) return st;
    return hc_error(HC_ERR_NUMERIC, "multigrid: ||f||^2 over the interior is %g", f2);
  }
  if (m->f_norm == 0) {
    double r0 = 0;
    m->f_norm = 1;
    if ((st = mg_residual(m, &r0)) != HC_OK) return st;
    m->f_norm = r0 > 0 ? r0 : 1;
    hc_job_note(job, "f is zero: the residual is relative to the start's, ||Lap u|| / ||Lap u0||");
  }
  /* one untimed cycle generates every kernel (compiled once, then cached) */
  double tb = hc_now();
  if ((st = mg_vcycle(m, 0)) != HC_OK || (st = mg_residual(m, &m->res[0])) != HC_OK) return st;
  if ((st = hc_device_finish(m->dev)) != HC_OK) return st;
  double build_s = hc_now() - tb;
  /* a split run's levels worth splitting, now that the kernels are built */
  if ((st = mg_split_measure(m)) != HC_OK || (st = restart(m)) != HC_OK) return st;
  hc_grid_stats_t gs0;
  memset(&gs0, 0, sizeof gs0);
  gs0.size = sizeof gs0;
  hc_grid_stats(m->g, &gs0);

  if ((st = mg_residual(m, &m->res[0])) != HC_OK) return st;
  if (!isfinite(m->res[0])) {
    if ((st = hc_job_check_finite(job, "u0", m->u0)) != HC_OK) return st;
    return hc_error(HC_ERR_NUMERIC, "multigrid: the start's relative residual is %g", m->res[0]);
  }
  double dev_s = 0, t0 = hc_now(), floor_res = 0;
  int stagnated = 0, failed = 0; /* failed: 1 diverged, 2 stalled above the rounding floor */
  if ((st = hc_device_timer_begin(m->dev)) != HC_OK) return st;
  if ((st = mg_rebalance(m)) != HC_OK) return st;
  for (m->done = 0; m->done < m->cycles;) {
    if ((st = mg_vcycle(m, 0)) != HC_OK) break;
    m->done++;
    if ((st = mg_residual(m, &m->res[m->done])) != HC_OK) break;
    const double r = m->res[m->done], prev = m->res[m->done - 1];
    hc_job_progress(job, (double)m->done / (double)m->cycles, "cycle %lld: relative residual %.3e", (long long)m->done,
                    r);
    if (!isfinite(r)) {
      st = hc_error(HC_ERR_NUMERIC, "multigrid: the relative residual is %g after cycle %lld", r, (long long)m->done);
      break;
    }
    if (m->tol > 0 && r <= m->tol) break;
    /* A residual that rises, or one that stops falling while tol is not
     * reached, is put down to rounding only at the floor the dtype allows
     * on this grid; above it the cycle diverges or stalls. */
    int rising = r > prev, stalled = m->tol > 0 && m->done >= 3 && r > 0.8 * prev;
    if (rising || stalled) {
      if ((st = mg_rounding_floor(m, &floor_res)) != HC_OK) break;
      if (r <= floor_res) {
        if (m->tol > 0) {
          stagnated = 1;
          break;
        }
      } else {
        failed = rising ? 1 : 2;
        break;
      }
    }
    if (m->done < m->cycles && (st = mg_rebalance(m)) != HC_OK) break;
  }
  hc_status_t st2 = hc_device_timer_end(m->dev, &dev_s);
  double t = hc_now() - t0;
  if (st == HC_OK) st = st2;
  if (st != HC_OK) return st;
  if (failed) {
    int64_t k = m->done;
    return hc_error(
        HC_ERR_VERIFY,
        "multigrid: %s at cycle %lld: relative residual %.3e after %.3e (the %s rounding floor of this grid "
        "is %.3e)",
        failed == 1 ? "the V-cycle diverged" : "the V-cycle stalled", (long long)k, m->res[k], m->res[k - 1],
        hc_dtype_name(m->dtype), floor_res);
  }
  hc_job_set_times(job, t, dev_s);

  /* metrics */
  int64_t k = m->done;
  double rate = k ? pow(m->res[k] / m->res[0], 1.0 / (double)k) : 0, worst = 0;
  for (int64_t c = 1; c <= k; c++)
    if (m->res[c] / m->res[c - 1] > worst) worst = m->res[c] / m->res[c - 1];
  hc_job_add_metric(job, "cycles", (double)k, "");
  hc_job_add_metric(job, "residual", m->res[k], "");
  hc_job_add_metric(job, "residual_initial", m->res[0], "");
  hc_job_add_metric(job, "convergence_factor", rate, "");
  hc_job_add_metric(job, "convergence_factor_max", worst, "");
  hc_job_add_metric(job, "time_to_solution", t, "s");
  hc_job_add_metric(job, "cycle_time", k ? t / (double)k : 0, "s");
  hc_job_add_metric(job, "levels", (double)m->nlevels, "");
  hc_job_add_metric(job, "setup_time", build_s, "s");
  for (int64_t c = 1; c <= k && c <= 50; c++) {
    char name[48];
    snprintf(name, sizeof name, "residual_cycle_%lld", (long long)c);
    hc_job_add_metric(job, name, m->res[c], "");
  }
  char lv[768] = "";
  size_t len = 0;
  for (int l = 0; l < m->nlevels && len < sizeof lv - 72; l++)
    for (int d = 0; d < m->dim; d++)
      len += (size_t)snprintf(lv + len, sizeof lv - len, "%s%lld", d ? "x" : l ? " > " : "", (long long)m->lv[l].n[d]);
  hc_grid_stats_t gs;
  memset(&gs, 0, sizeof gs);
  gs.size = sizeof gs;
  hc_grid_stats(m->g, &gs);
  hc_job_note(job, "V(%lld,%lld) cycles, %s smoother%s, %d levels (%s), coarse solve %lld sweeps", (long long)m->pre,
              (long long)m->post, m->smoother == MG_RBGS ? "red-black Gauss-Seidel" : "weighted Jacobi",
              m->smoother == MG_RBGS ? "" : " (omega given)", m->nlevels, lv, (long long)m->coarse);
  if (m->part && m->split_measured)
    hc_job_note(job,
                "split: %d of the %d levels by slabs, the coarser ones whole on every part (measured, us per red "
                "half-sweep whole / slab with its share of an exchange, finest first: %s)",
                m->split_levels, m->nlevels, m->split_probe[0] ? m->split_probe : "no level to split");
  else if (m->part)
    hc_job_note(job,
                "split: %d of the %d levels by slabs, the coarser ones whole on every part (HC_MG_SPLIT_MIN_POINTS)",
                m->split_levels, m->nlevels);
  hc_job_note(job,
              "grid expressions: %llu kernels generated in the untimed warm-up cycle (%.3f s), %llu launches, "
              "%llu cache hits, %llu built during the timed cycles",
              (unsigned long long)gs0.kernels_built, build_s, (unsigned long long)gs.launches,
              (unsigned long long)gs.cache_hits, (unsigned long long)(gs.kernels_built - gs0.kernels_built));
  if (gs.compiler_fallbacks && hc_grid_compiler_unavailable(m->g))
    hc_job_note(job, "grid expressions: compiled host kernels unavailable (%s): the row evaluator ran instead",
                hc_grid_compiler_unavailable(m->g));
  if (stagnated)
    hc_job_note(job,
                "stopped at cycle %lld: the residual %.3e no longer falls, and is within the %s rounding floor of this "
                "grid, %.3e (2 eps sum_d 2/h_d^2 ||u|| / ||f||), which is above tol=%g",
                (long long)k, m->res[k], hc_dtype_name(m->dtype), floor_res, m->tol);
  if ((!m->part || hc_part_index(m->part) == 0) && (st = write_csv(m)) != HC_OK) return st;

  /* errors against the closed forms (f = sin) */
  double err = -1, derr = -1, c = sin_discrete_scale(m);
  if (!strcmp(m->rhs, "sin") && !m->u0) {
    if ((st = sine_error(m, 1.0, &err)) != HC_OK || (st = sine_error(m, c, &derr)) != HC_OK) return st;
    hc_job_add_metric(job, "error_max", err, "");
    hc_job_add_metric(job, "error_discrete", derr / c, "");
  }
  if (hc_job_verify_requested(job)) {
    /* The residual is held to tol; only a run that stopped at the rounding
     * floor computed for this grid and dtype (above tol) is held to that
     * floor instead, and says so. Non-finite values never pass. */
    double rb = stagnated ? floor_res : m->tol;
    char why[160] = "";
    if (stagnated)
      snprintf(why, sizeof why, "; tol %g is below the %s rounding floor of this grid, so the floor %.3e is the bound",
               m->tol, hc_dtype_name(m->dtype), floor_res);
    if (m->tol > 0 && !strcmp(m->rhs, "sin") && !m->u0) {
      /* the error against the discrete solution follows the residual:
       * ||e|| <= ||r|| ||f|| / lambda_min, lambda_min about d pi^2 */
      double etol = 10 * rb;
      int ok = isfinite(m->res[k]) && m->res[k] <= rb && isfinite(derr) && derr / c <= etol;
      hc_job_set_verified(job, ok,
                          "relative residual %.3e after %lld cycles (bound %.3g%s); max error against the discrete "
                          "solution %.3e (bound 10 x %.3g = %.3g)",
                          m->res[k], (long long)k, rb, why, derr / c, rb, etol);
    } else if (m->tol > 0) {
      hc_job_set_verified(job, isfinite(m->res[k]) && m->res[k] <= rb,
                          "relative residual %.3e after %lld cycles (bound %.3g%s)", m->res[k], (long long)k, rb, why);
    } else {
      hc_job_set_verified(job, isfinite(worst) && isfinite(m->res[k]) && worst < 0.5,
                          "convergence factor per cycle at most %.3f (bound 0.5)", worst);
    }
  }

  /* outputs */
  if (hc_job_bool(job, "residual")) {
    hc_field_t *r = NULL;
    if ((st = hc_field_create(m->dev, m->dtype, (uint32_t)m->dim, m->lv[0].n, &r)) != HC_OK) return st;
    hc_field_set_spacing(r, m->lv[0].h);
    hc_field_set_name(r, "residual");
    st = hc_grid_assign(m->g, r, m->lv[0].zero, NULL, NULL);
    if (st == HC_OK) st = mg_assign(m, 0, r, m->lv[0].residual, &m->interior);
    if (st == HC_OK) st = hc_part_own_rows(m->part, &r);
    if (st == HC_OK)
      st = hc_job_set_output(job, "residual", r);
    else
      hc_field_destroy(r);
    if (st != HC_OK) return st;
  }
  if ((st = hc_part_own_rows(m->part, &m->lv[0].u)) != HC_OK) return st;
  st = hc_job_set_output(job, "u", m->lv[0].u);
  m->lv[0].u = NULL; /* the job owns it now */
  return st;
}
