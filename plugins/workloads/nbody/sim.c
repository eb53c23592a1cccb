/* nbody: the simulation on a device — kernels, launch geometry, buffers,
 * and the launches the run loop makes. The state (pos, vel) stays on the
 * device from the upload to the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/tuning.h>

#include "nbody.h"

#define NB_UWG 256        /* work-group of nbody_update (a power of two) */
#define NB_UGROUPS_MAX 64 /* its groups when it also sums diagnostics */

static hc_arg_t real_arg(const nb_sim_t *s, const nb_real_arg_t *v) {
  return s->cfg->f64 ? (hc_arg_t)HC_ARG_VAL(v->d) : (hc_arg_t)HC_ARG_VAL(v->f);
}

static void set_real(nb_real_arg_t *a, double v) {
  a->d = v;
  a->f = (float)v;
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static hc_status_t build(nb_sim_t *s) {
  const nb_config_t *c = s->cfg;
  const nb_host_fns_t *h = c->f64 ? &nb_host_f64 : &nb_host_f32;
  const hc_device_info_t *in = hc_device_info(s->dev);
  char opts[256];
  snprintf(opts, sizeof opts,
           "-DNB_F64=%d -DNB_WG=%d -DNB_BPT=%d -DNB_UNROLL=%d -DNB_GUARD=%d -DNB_POT=%d -DNB_FAST=%d -DNB_UWG=%d "
           "-DNB_DIAG_F64=%d",
           c->f64, c->wg, c->bpt, c->unroll, s->guard, c->diagnostics, c->fast_rsqrt, NB_UWG, s->diag_f64);
  /* A group or tile the device cannot hold would fail to build: say why. */
  if (!(in->languages & HC_LANG_BIT(HC_LANG_HOST))) {
    if (in->max_work_group_size && (uint32_t)c->wg > in->max_work_group_size)
      return hc_error(HC_ERR_PARAM, "wg=%d: %s allows at most %u work-items per group", c->wg, in->name,
                      in->max_work_group_size);
    if (in->local_mem_bytes && (uint64_t)c->wg * 4 * s->es > in->local_mem_bytes)
      return hc_error(HC_ERR_PARAM, "wg=%d: a tile of %d bodies needs %llu bytes of local memory, %s has %llu", c->wg,
                      c->wg, (unsigned long long)c->wg * 4 * s->es, in->name, (unsigned long long)in->local_mem_bytes);
  }
  /* The serial reference offers only host code: check() keeps it off GPUs. */
  hc_kernel_desc_t kd = {sizeof kd, "nbody_field", c->serial ? NULL : nbody_kernels_src, opts,
                         c->serial ? h->field_serial : h->field};
  hc_status_t st = hc_kernel_create(s->dev, &kd, &s->kfield);
  if (st != HC_OK) return st;
  s->host = hc_kernel_language(s->kfield) == HC_LANG_HOST;
  if (!s->host) {
    size_t maxg = hc_kernel_max_group_size(s->kfield);
    if (maxg && (size_t)c->wg > maxg)
      return hc_error(HC_ERR_PARAM, "wg=%d: the field kernel allows at most %zu work-items per group on %s", c->wg,
                      maxg, in->name);
  }
  const struct {
    const char *name;
    hc_host_kernel_fn fn;
    hc_kernel_t **k;
  } rest[] = {{"nbody_update", h->update, &s->kupdate},
              {"nbody_reduce", h->reduce, &s->kreduce},
              {"nbody_accel", h->accel, &s->kaccel},
              {"nbody_unpack", h->unpack, &s->kunpack}};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
    hc_kernel_desc_t d = {sizeof d, rest[i].name, nbody_kernels_src, opts, rest[i].fn};
    if ((st = hc_kernel_create(s->dev, &d, rest[i].k)) != HC_OK) return st;
  }
  return HC_OK;
}

/* nbody's per-device tuning (hc/tuning.h); the kernels' own shapes are
 * parameters (wg=, bpt=, slices=, unroll=). Re-measure a row with slices=
 * on a device, then bench/run --only=nbody.
 *   slice_fill    j slices until about this many groups per compute unit
 *                 run (small N leaves most of a big GPU idle otherwise)
 *   slice_tiles   the fewest tiles of wg bodies a slice keeps
 *   host_groups   groups per worker thread of host kernels (both halves of
 *                 a group's work stay busy) */
typedef struct {
  const char *device;
  int slice_fill, slice_tiles, host_groups;
} nb_tuning_t;

static const nb_tuning_t nb_tuning[] = {
    {"*", 4, 8, 8},
};

/* Padding, j slices and groups for this device. */
static hc_status_t geometry(nb_sim_t *s) {
  const nb_config_t *c = s->cfg;
  const hc_device_info_t *in = hc_device_info(s->dev);
  size_t row = 0;
  hc_status_t st = HC_TUNING_PICK(in, nb_tuning, &row);
  if (st != HC_OK) return st;
  const nb_tuning_t *t = &nb_tuning[row];
  const int64_t per_group = s->host ? 64 : (int64_t)c->wg * c->bpt;
  s->npad = round_up(s->n, per_group);
  int64_t slices = 1;
  if (!s->host && !c->serial) {
    const int64_t igroups = s->npad / per_group;
    slices = c->slices ? c->slices : (t->slice_fill * (int64_t)in->compute_units + igroups - 1) / igroups;
    int64_t most = s->npad / (t->slice_tiles * (int64_t)c->wg);
    if (!c->slices && slices > most) slices = most;
    if (slices < 1) slices = 1;
    if (slices > s->npad / c->wg) slices = s->npad / c->wg;
  }
  s->slice_len = round_up((s->npad + slices - 1) / slices, s->host ? 64 : c->wg);
  s->nslices = (int)((s->npad + s->slice_len - 1) / s->slice_len);
  const int64_t workers = in->compute_units ? in->compute_units : 1;
  s->host_groups = t->host_groups * workers;
  const int64_t ug = (s->npad + NB_UWG - 1) / NB_UWG;
  s->ugroups = s->host ? (int)(workers * 4 < ug ? workers * 4 : ug) : (int)(ug < NB_UGROUPS_MAX ? ug : NB_UGROUPS_MAX);
  return HC_OK;
}

/* The state as (x,y,z,q) and (vx,vy,vz,m) rows of the working precision. */
static hc_status_t upload(nb_sim_t *s, const nb_bodies_t *b) {
  const size_t bytes = (size_t)s->npad * 4 * s->es;
  void *hp = calloc(1, bytes), *hv = calloc(1, bytes);
  hc_status_t st = HC_OK;
  if (!hp || !hv) {
    st = hc_error(HC_ERR_NO_MEMORY, "nbody: out of host memory staging %lld bodies", (long long)s->npad);
    goto out;
  }
  for (int64_t i = 0; i < s->npad; i++) {
    const double *r = i < s->n ? b->s + i * NB_COLS : NULL;
    /* Padding: no charge, unit mass, at rest at the origin. */
    const double p[4] = {r ? r[NB_X] : 0, r ? r[NB_Y] : 0, r ? r[NB_Z] : 0, r ? r[NB_Q] : 0};
    const double v[4] = {r ? r[NB_VX] : 0, r ? r[NB_VY] : 0, r ? r[NB_VZ] : 0, r ? r[NB_M] : 1};
    for (int k = 0; k < 4; k++) {
      if (s->cfg->f64)
        ((double *)hp)[4 * i + k] = p[k], ((double *)hv)[4 * i + k] = v[k];
      else
        ((float *)hp)[4 * i + k] = (float)p[k], ((float *)hv)[4 * i + k] = (float)v[k];
    }
  }
  if ((st = hc_buffer_write(s->pos, 0, hp, bytes)) == HC_OK) st = hc_buffer_write(s->vel, 0, hv, bytes);
out:
  free(hp);
  free(hv);
  return st;
}

hc_status_t nb_sim_warm_up(nb_sim_t *s) {
  /* Host kernels need no warming, and a host group is 1/16 of a step. */
  hc_status_t st = s->host ? HC_OK : nb_sim_field(s, 1);
  if (st == HC_OK) st = nb_sim_update(s, 0, 0);
  return st == HC_OK ? hc_device_finish(s->dev) : st;
}

hc_status_t nb_sim_create(hc_device_t *dev, const nb_config_t *c, const nb_bodies_t *b, nb_sim_t *s) {
  memset(s, 0, sizeof *s);
  s->dev = dev;
  s->cfg = c;
  s->n = b->n;
  s->es = c->f64 ? 8 : 4;
  s->diag_f64 = hc_device_info(dev)->fp64 ? 1 : 0;
  set_real(&s->eps2, c->eps * c->eps);
  s->guard = nb_guard(c->f64 ? s->eps2.d : (double)s->eps2.f, c->f64);
  set_real(&s->dt, c->dt);
  set_real(&s->kc, c->k);
  for (int d = 0; d < 3; d++) set_real(&s->b[d], c->B[d]);
  hc_status_t st = build(s);
  if (st != HC_OK) return st;
  if ((st = geometry(s)) != HC_OK) return st;
  nb_sim_set_slice(s, 0, s->npad);
  const uint64_t state = (uint64_t)s->npad * 4 * s->es, ds = s->diag_f64 ? 8 : 4;
  const uint64_t field = (uint64_t)s->nslices * state;
  const uint64_t outs = (uint64_t)s->n * 3 * s->es * (2 + (uint64_t)c->output_acc);
  const uint64_t trace = c->diagnostics ? ((uint64_t)c->steps + 1) * NB_DIAG * ds : ds;
  const uint64_t partial = (uint64_t)s->ugroups * NB_DIAG * ds;
  const uint64_t traces_out = c->diagnostics ? ((uint64_t)c->steps + 1) * 4 * s->es : 0;
  char what[96];
  snprintf(what, sizeof what, "nbody with n=%lld (state, field slices, outputs)", (long long)s->n);
  if ((st = hc_device_check_memory(dev, 2 * state + field + outs + trace + partial + traces_out, what)) != HC_OK)
    return st;
  if ((st = hc_buffer_create(dev, state, &s->pos)) != HC_OK || (st = hc_buffer_create(dev, state, &s->vel)) != HC_OK ||
      (st = hc_buffer_create(dev, field, &s->field)) != HC_OK ||
      (st = hc_buffer_create(dev, partial, &s->partial)) != HC_OK ||
      (st = hc_buffer_create(dev, trace, &s->trace)) != HC_OK)
    return st;
  return upload(s, b);
}

void nb_sim_set_slice(nb_sim_t *s, int64_t lo, int64_t hi) {
  s->lo = lo;
  s->hi = hi;
  const int64_t hg = s->host_groups;
  s->host_rows = s->cfg->serial ? (size_t)s->npad : (size_t)round_up((hi - lo + hg - 1) / hg, 16);
  if (!s->host_rows) s->host_rows = 16;
}

void nb_sim_destroy(nb_sim_t *s) {
  hc_kernel_t *ks[] = {s->kfield, s->kupdate, s->kreduce, s->kaccel, s->kunpack};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) hc_kernel_destroy(ks[i]);
  hc_buffer_t *bs[] = {s->pos, s->vel, s->field, s->partial, s->trace};
  for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++) hc_buffer_destroy(bs[i]);
  memset(s, 0, sizeof *s);
}

hc_status_t nb_sim_field(nb_sim_t *s, int one_group) {
  const int64_t n = s->n, npad = s->npad, slice_len = s->slice_len;
  const int32_t flags = (s->cfg->diagnostics ? NB_FLAG_POT : 0) | (s->guard ? NB_FLAG_GUARD : 0);
  /* Bodies [lo, hi): host groups are any range; GPU groups own whole
   * tiles of wg*bpt bodies, so a part's slice widens to the tiles it
   * touches (still within npad; the extra bodies' field goes unused). */
  const int64_t tile = s->host ? 1 : (int64_t)s->cfg->wg * s->cfg->bpt;
  const int64_t off = s->lo / tile * tile, end = round_up(s->hi, tile);
  hc_arg_t a[8] = {HC_ARG_VAL(n),     HC_ARG_VAL(npad),   HC_ARG_VAL(slice_len), real_arg(s, &s->eps2),
                   HC_ARG_VAL(flags), HC_ARG_BUF(s->pos), HC_ARG_BUF(s->field),  HC_ARG_VAL(off)};
  size_t global[2], local[2];
  if (s->host) {
    global[0] = (size_t)(end - off), local[0] = s->host_rows;
  } else {
    global[0] = (size_t)((end - off) / s->cfg->bpt), local[0] = (size_t)s->cfg->wg;
  }
  global[1] = (size_t)s->nslices, local[1] = 1;
  if (one_group) global[0] = local[0] < global[0] ? local[0] : global[0], global[1] = 1;
  return hc_kernel_launch(s->kfield, 2, global, local, 8, a);
}

hc_status_t nb_sim_update(nb_sim_t *s, int64_t step, int commit) {
  const int64_t npad = s->npad, lo = s->lo, hi = s->hi, count = hi - lo;
  const int32_t nslices = s->nslices, boris = s->cfg->boris, diag = s->cfg->diagnostics, com = commit;
  hc_arg_t a[17] = {HC_ARG_VAL(npad),      HC_ARG_VAL(nslices),   real_arg(s, &s->dt),    real_arg(s, &s->kc),
                    real_arg(s, &s->b[0]), real_arg(s, &s->b[1]), real_arg(s, &s->b[2]),  real_arg(s, &s->eps2),
                    HC_ARG_VAL(boris),     HC_ARG_VAL(com),       HC_ARG_VAL(diag),       HC_ARG_BUF(s->pos),
                    HC_ARG_BUF(s->vel),    HC_ARG_BUF(s->field),  HC_ARG_BUF(s->partial), HC_ARG_VAL(lo),
                    HC_ARG_VAL(hi)};
  size_t global, local;
  int32_t groups;
  if (s->host) {
    /* Host groups are item ranges: ugroups slabs, one partial record each. */
    local = (size_t)((count + s->ugroups - 1) / s->ugroups);
    global = (size_t)count;
    groups = (int32_t)((global + local - 1) / local);
  } else {
    local = NB_UWG;
    const int32_t need = (int32_t)((count + NB_UWG - 1) / NB_UWG);
    groups = diag && s->ugroups < need ? s->ugroups : need;
    global = (size_t)groups * NB_UWG;
  }
  hc_status_t st = hc_kernel_launch(s->kupdate, 1, &global, &local, 17, a);
  if (st != HC_OK || !diag) return st;
  hc_arg_t r[4] = {HC_ARG_VAL(groups), HC_ARG_VAL(step), HC_ARG_BUF(s->partial), HC_ARG_BUF(s->trace)};
  size_t rg = NB_DIAG;
  return hc_kernel_launch(s->kreduce, 1, &rg, NULL, 4, r);
}

hc_status_t nb_sim_output3(nb_sim_t *s, const char *what, hc_field_t **out) {
  const int64_t shape[2] = {s->n, 3}, n = s->n, npad = s->npad;
  const int32_t nslices = s->nslices;
  hc_status_t st = hc_field_create(s->dev, s->cfg->f64 ? HC_F64 : HC_F32, 2, shape, out);
  if (st != HC_OK) return st;
  hc_field_set_name(*out, what);
  size_t global = (size_t)n;
  if (!strcmp(what, "acc")) {
    hc_arg_t a[11] = {HC_ARG_VAL(n),
                      HC_ARG_VAL(npad),
                      HC_ARG_VAL(nslices),
                      real_arg(s, &s->kc),
                      real_arg(s, &s->b[0]),
                      real_arg(s, &s->b[1]),
                      real_arg(s, &s->b[2]),
                      HC_ARG_BUF(s->pos),
                      HC_ARG_BUF(s->vel),
                      HC_ARG_BUF(s->field),
                      HC_ARG_BUF(hc_field_buffer(*out))};
    st = hc_kernel_launch(s->kaccel, 1, &global, NULL, 11, a);
  } else {
    hc_arg_t a[3] = {HC_ARG_VAL(n), HC_ARG_BUF(!strcmp(what, "pos") ? s->pos : s->vel),
                     HC_ARG_BUF(hc_field_buffer(*out))};
    st = hc_kernel_launch(s->kunpack, 1, &global, NULL, 3, a);
  }
  if (st != HC_OK) {
    hc_field_destroy(*out);
    *out = NULL;
  }
  return st;
}
