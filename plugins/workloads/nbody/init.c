/* nbody: the initial state — built-in distributions, a .npy file, or the
 * input ports — as n x 8 doubles (x y z vx vy vz q m). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbody.h"

/* ---------------------------------------------------------------- random */

/* splitmix64: small, fast, and the same sequence on every platform. */
typedef struct {
  uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so logs and powers are safe. */
static double rng_uniform(rng_t *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53; }

static double rng_gauss(rng_t *r) {
  double u = rng_uniform(r), v = rng_uniform(r);
  return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* ---------------------------------------------------------------- built-ins */

/* Built-in states have total mass 1 and charges of magnitude 1/n, so the
 * dynamics do not change scale with n (macro-particles of a plasma). */

static void random_direction(rng_t *r, double len, double *out) {
  double z = 2.0 * rng_uniform(r) - 1.0, phi = 2.0 * M_PI * rng_uniform(r), s = sqrt(1.0 - z * z);
  out[0] = len * s * cos(phi);
  out[1] = len * s * sin(phi);
  out[2] = len * z;
}

/* Uniform cube [-1/2, 1/2]^3, Maxwellian velocities of spread v0,
 * alternating charges (a quasi-neutral plasma). */
static void init_cube(double *s, int64_t n, rng_t *r, double v0) {
  for (int64_t i = 0; i < n; i++) {
    double *b = s + i * NB_COLS;
    for (int d = 0; d < 3; d++) b[NB_X + d] = rng_uniform(r) - 0.5;
    for (int d = 0; d < 3; d++) b[NB_VX + d] = v0 * rng_gauss(r);
    b[NB_Q] = (i & 1 ? -1.0 : 1.0) / (double)n;
    b[NB_M] = 1.0 / (double)n;
  }
}

/* Plummer density profile of scale radius a = 1/4, cut at 10 a. */
static void init_plummer(double *s, int64_t n, rng_t *r, double v0) {
  const double a = 0.25;
  for (int64_t i = 0; i < n; i++) {
    double *b = s + i * NB_COLS, rad;
    do rad = a / sqrt(pow(rng_uniform(r), -2.0 / 3.0) - 1.0);
    while (rad > 10 * a);
    random_direction(r, rad, b + NB_X);
    for (int d = 0; d < 3; d++) b[NB_VX + d] = v0 * rng_gauss(r);
    b[NB_Q] = (i & 1 ? -1.0 : 1.0) / (double)n;
    b[NB_M] = 1.0 / (double)n;
  }
}

/* Two-stream: ions at rest (even indices, mass 1836 m_e) and electrons in
 * two counter-streaming beams along x at ±v0 with a 1 % thermal spread. */
static void init_two_stream(double *s, int64_t n, rng_t *r, double v0) {
  const double me = 1.0 / (double)n;
  for (int64_t i = 0; i < n; i++) {
    double *b = s + i * NB_COLS;
    for (int d = 0; d < 3; d++) b[NB_X + d] = rng_uniform(r) - 0.5;
    int ion = !(i & 1);
    for (int d = 0; d < 3; d++) b[NB_VX + d] = ion ? 0.0 : 0.01 * v0 * rng_gauss(r);
    if (!ion) b[NB_VX] += (i & 2) ? v0 : -v0;
    b[NB_Q] = (ion ? 1.0 : -1.0) / (double)n;
    b[NB_M] = ion ? 1836.0 * me : me;
  }
}

#define NB_BUILTINS(X) X("cube", init_cube) X("plummer", init_plummer) X("two-stream", init_two_stream)

int nb_init_is_builtin(const char *init) {
#define NB_IS_(name, fn) \
  if (!strcmp(init, name)) return 1;
  NB_BUILTINS(NB_IS_)
#undef NB_IS_
  return 0;
}

/* Removes the centre-of-mass velocity: built-in states start at rest. */
static void zero_momentum(double *s, int64_t n) {
  double p[3] = {0, 0, 0}, m = 0;
  for (int64_t i = 0; i < n; i++) {
    const double *b = s + i * NB_COLS;
    for (int d = 0; d < 3; d++) p[d] += b[NB_M] * b[NB_VX + d];
    m += b[NB_M];
  }
  for (int64_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++) s[i * NB_COLS + NB_VX + d] -= p[d] / m;
}

static hc_status_t init_builtin(const nb_config_t *c, int64_t n, double *s) {
  rng_t r = {c->seed * 0x2545F4914F6CDD1Dull + 1};
#define NB_RUN_(name, fn)           \
  if (!strcmp(c->init, name)) {     \
    fn(s, n, &r, c->v0);            \
    if (n > 1) zero_momentum(s, n); \
    return HC_OK;                   \
  }
  NB_BUILTINS(NB_RUN_)
#undef NB_RUN_
  return hc_error(HC_ERR_PARAM, "init=%s: not a built-in (cube, plummer, two-stream) nor a .npy file", c->init);
}

/* ---------------------------------------------------------------- files and inputs */

/* Copies a host array of dtype f32/f64 (rows x cols) into columns
 * [col0, col0+cols) of s. */
static void put_columns(double *s, const void *data, hc_dtype_t dt, int64_t rows, int cols, int col0) {
  for (int64_t i = 0; i < rows; i++)
    for (int c = 0; c < cols; c++)
      s[i * NB_COLS + col0 + c] =
          dt == HC_F64 ? ((const double *)data)[i * cols + c] : (double)((const float *)data)[i * cols + c];
}

/* Every value finite and every mass positive; what names the source. */
static hc_status_t check_state(const double *s, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++) {
    const double *b = s + i * NB_COLS;
    for (int c = 0; c < NB_COLS; c++)
      if (!isfinite(b[c]))
        return hc_error(HC_ERR_PARAM, "%s: body %lld has a non-finite value in column %d", what, (long long)i, c);
    if (!(b[NB_M] > 0))
      return hc_error(HC_ERR_PARAM, "%s: body %lld has mass %g (masses must be positive)", what, (long long)i, b[NB_M]);
  }
  return HC_OK;
}

/* Reads an input field (any device) to the host; checks its shape (rows, cols). */
static hc_status_t read_input(hc_field_t *f, const char *port, int cols, int64_t *rows, void **data) {
  const int64_t *sh = hc_field_shape(f);
  if (hc_field_rank(f) != 2 || sh[1] != cols)
    return hc_error(HC_ERR_PARAM, "input %s: expected shape (n,%d), got rank %u with %lld columns", port, cols,
                    hc_field_rank(f), (long long)(hc_field_rank(f) == 2 ? sh[1] : 0));
  if (sh[0] < 1) return hc_error(HC_ERR_PARAM, "input %s: has no bodies", port);
  *rows = sh[0];
  *data = malloc(hc_field_bytes(f));
  if (!*data) return hc_error(HC_ERR_NO_MEMORY, "nbody: out of host memory reading input %s", port);
  hc_status_t st = hc_field_read(f, *data);
  if (st != HC_OK) {
    free(*data);
    *data = NULL;
  }
  return st;
}

/* The n the initial state implies, and where it came from, or 0. */
static hc_status_t implied_n(const hc_job_t *job, const nb_config_t *c, int64_t *n, const char **from, void **file,
                             hc_dtype_t *file_dt) {
  static const char *const ports[] = {"state", "pos", "vel"};
  *n = 0;
  hc_field_t *st = hc_job_input(job, "state");
  if (!st && !nb_init_is_builtin(c->init)) {
    uint32_t rank = 0;
    int64_t shape[HC_MAX_DIMS] = {0};
    hc_status_t s = hc_npy_read(c->init, file_dt, &rank, shape, file);
    if (s != HC_OK)
      return hc_error_prefix(HC_ERR_PARAM,
                             "init=%s: not a built-in (cube, plummer, two-stream), and as a .npy file: ", c->init);
    if (rank != 2 || shape[1] != NB_COLS || shape[0] < 1 || hc_dtype_is_complex(*file_dt)) {
      free(*file);
      *file = NULL;
      return hc_error(HC_ERR_PARAM,
                      "init=%s: expected a real array of shape (n,8) with rows x,y,z,vx,vy,vz,q,m; got %s rank %u "
                      "shape (%lld,%lld)",
                      c->init, hc_dtype_name(*file_dt), rank, (long long)shape[0], (long long)shape[1]);
    }
    *n = shape[0];
    *from = c->init;
    return HC_OK;
  }
  for (int p = 0; p < 3; p++) {
    hc_field_t *f = hc_job_input(job, ports[p]);
    if (f) {
      *n = hc_field_rank(f) >= 1 ? hc_field_shape(f)[0] : 0;
      *from = ports[p];
      return HC_OK;
    }
  }
  return HC_OK;
}

hc_status_t nb_bodies_count(const hc_job_t *job, const nb_config_t *c, int64_t *n) {
  void *file = NULL;
  hc_dtype_t file_dt = HC_DTYPE_NONE;
  const char *from = NULL;
  hc_status_t st = implied_n(job, c, n, &from, &file, &file_dt);
  free(file);
  if (st == HC_OK && !*n) *n = c->n ? c->n : 4096;
  return st;
}

hc_status_t nb_bodies_init(hc_job_t *job, nb_config_t *c, nb_bodies_t *out) {
  memset(out, 0, sizeof *out);
  void *file = NULL, *data = NULL;
  hc_dtype_t file_dt = HC_DTYPE_NONE;
  const char *from = NULL;
  int64_t n = 0;
  hc_status_t st = implied_n(job, c, &n, &from, &file, &file_dt);
  if (st != HC_OK) return st;
  if (n && c->n && n != c->n) {
    st = hc_error(HC_ERR_PARAM, "n=%lld disagrees with %s, which has %lld bodies (leave n out)", (long long)c->n, from,
                  (long long)n);
    goto fail;
  }
  if (!n) n = c->n ? c->n : 4096;
  c->n = n;
  out->n = n;
  out->s = calloc((size_t)n * NB_COLS, sizeof(double));
  if (!out->s) {
    st = hc_error(HC_ERR_NO_MEMORY, "nbody: no host memory for %lld bodies", (long long)n);
    goto fail;
  }
  hc_field_t *sf = hc_job_input(job, "state");
  if (sf) {
    int64_t rows;
    if ((st = read_input(sf, "state", NB_COLS, &rows, &data)) != HC_OK) goto fail;
    put_columns(out->s, data, hc_field_dtype(sf), n, NB_COLS, 0);
    free(data);
    data = NULL;
  } else if (file) {
    put_columns(out->s, file, file_dt, n, NB_COLS, 0);
  } else if ((st = init_builtin(c, n, out->s)) != HC_OK) {
    goto fail;
  }
  static const char *const ports[] = {"pos", "vel"};
  for (int p = 0; p < 2; p++) {
    hc_field_t *f = hc_job_input(job, ports[p]);
    if (!f) continue;
    int64_t rows;
    if ((st = read_input(f, ports[p], 3, &rows, &data)) != HC_OK) goto fail;
    if (rows != n) {
      st = hc_error(HC_ERR_PARAM, "input %s has %lld rows but the state has %lld bodies", ports[p], (long long)rows,
                    (long long)n);
      goto fail;
    }
    put_columns(out->s, data, hc_field_dtype(f), n, 3, p ? NB_VX : NB_X);
    free(data);
    data = NULL;
  }
  char what[512] = "the initial state";
  if (sf)
    snprintf(what, sizeof what, "input state");
  else if (file)
    snprintf(what, sizeof what, "init=%s", c->init);
  if ((st = check_state(out->s, n, what)) != HC_OK) goto fail;
  free(file);
  return HC_OK;
fail:
  free(file);
  free(data);
  nb_bodies_free(out);
  return st;
}

void nb_bodies_free(nb_bodies_t *b) {
  free(b->s);
  b->s = NULL;
  b->n = 0;
}
