/* simpson: the four variants on a field already on the device.
 *
 * Timing (the paper's two columns): compute_s runs from "samples resident
 * on the device" to "integral known on the host" (hc_now); device_s is the
 * device's own span of the variant's device work. For algorithms 1 and 2
 * that span holds the weight upload (1), the products and their readback;
 * the host sum comes after it, as in the paper. For the reducing variants it
 * holds the kernel only; reading back a few thousand partials and adding
 * them is in compute_s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/tuning.h>

#include "simpson.h"

extern const char simpson_kernels_src[];

/* simpson's per-device tuning (hc/tuning.h). Re-measure a row on a
 * device with groups= and HC_KERNEL_OPTIONS=-DSIMPSON_PAIR=0|1
 * (tests/gpu/probe.sh simpson), then bench/run --only=simpson.
 *   block        work-group size of the reducing source kernels
 *   groups_per_cu  work-groups per compute unit of the fused source kernel:
 *                enough waves of resident groups to cover memory latency
 *                on a GPU, few enough that the partials stay a small
 *                readback (a few thousand doubles); groups= overrides it
 *   pairs        f64 reads pairs of double2 (SIMPSON_PAIR) instead of
 *                single double2 vectors: on CUDA the faster form, on
 *                NVIDIA's OpenCL the slower
 *   pair_groups_per_cu  groups per compute unit when reading pairs (fewer
 *                groups stay resident, so more waves)
 *   contig       each item streams one contiguous run instead of a grid
 *                stride: a CPU device runs a group's items one after
 *                another */
typedef struct {
  const char *device;
  int block, groups_per_cu, pairs, pair_groups_per_cu, contig;
} simpson_tuning_t;

static const simpson_tuning_t simpson_tuning[] = {
    {"cuda-c", 256, 20, 1, 80, 0},
    {"cpu", 256, 20, 0, 80, 1},
    {"*", 256, 20, 0, 80, 0},
};

typedef struct {
  hc_job_t *job;
  hc_device_t *dev;
  const simpson_config_t *cfg;
  const simpson_tuning_t *tune;
  size_t es;   /* sample bytes */
  int acc_f64; /* source kernels accumulate in double */
  int block;   /* work-group size the reducing source kernels were built for */
} ctx_t;

static int reads_pairs(const ctx_t *c) { return c->cfg->dtype != HC_F32 && c->tune->pairs; }

static hc_status_t build(ctx_t *c, const char *name, hc_host_kernel_fn host_fn, hc_kernel_t **k) {
  const int f32 = c->cfg->dtype == HC_F32;
  c->block = c->tune->block;
  for (;;) {
    char opts[200];
    const int contig = c->tune->contig;
    snprintf(opts, sizeof opts, "-DREAL=%s -DREALV=%s -DVEC=%d -DSIMPSON_PAIR=%d -DACC_F64=%d -DBLOCK=%d -DCONTIG=%d",
             f32 ? "float" : "double", f32 ? "float4" : "double2", f32 ? 4 : 2, reads_pairs(c), c->acc_f64, c->block,
             contig);
    hc_kernel_desc_t kd = {sizeof kd, name, simpson_kernels_src, opts, host_fn};
    hc_status_t st = hc_kernel_create(c->dev, &kd, k);
    if (st != HC_OK) return st;
    size_t max = hc_kernel_max_group_size(*k);
    if (hc_kernel_language(*k) == HC_LANG_HOST) {
      hc_job_note(c->job, "host kernels: %s sums", simpson_isa_name(c->cfg->isa));
      return HC_OK;
    }
    if (max >= (size_t)c->block || c->block == 1) return HC_OK;
    /* A device with small work-groups: rebuild for the largest power of 2 it takes. */
    hc_kernel_destroy(*k);
    *k = NULL;
    while (c->block > 1 && (size_t)c->block > max) c->block /= 2;
  }
}

/* Host kernels: contiguous chunks, about 8 per worker for balance, each
 * at most 4 Mi samples (bounds the rounding of one partial). */
static size_t host_chunk(const ctx_t *c) {
  size_t workers = hc_device_info(c->dev)->compute_units;
  if (!workers) workers = 1;
  size_t n = (size_t)c->cfg->n, chunk = (n + 8 * workers - 1) / (8 * workers);
  if (chunk < 16384) chunk = 16384;
  if (chunk > ((size_t)1 << 22)) chunk = (size_t)1 << 22;
  return (chunk + 63) / 64 * 64;
}

/* Sums `count` partial sums of a buffer on the host (double, or float on
 * devices without fp64). */
static hc_status_t sum_partials(ctx_t *c, hc_buffer_t *buf, size_t count, int as_double, double *out) {
  (void)c;
  const size_t bytes = count * (as_double ? 8 : 4);
  void *p = hc_buffer_host_ptr(buf), *tmp = NULL;
  if (!p) {
    tmp = malloc(bytes);
    if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "simpson: out of host memory");
    hc_status_t st = hc_buffer_read(buf, 0, tmp, bytes);
    if (st != HC_OK) {
      free(tmp);
      return st;
    }
    p = tmp;
  }
  double s = 0;
  for (size_t g = 0; g < count; g++) s += as_double ? ((const double *)p)[g] : (double)((const float *)p)[g];
  free(tmp);
  *out = s;
  return HC_OK;
}

/* fused (groups = partials) and devicereduce (one group). */
static hc_status_t run_reduce(ctx_t *c, hc_field_t *field, int one_group, simpson_result_t *res) {
  const simpson_config_t *cfg = c->cfg;
  const int f32 = cfg->dtype == HC_F32;
  hc_kernel_t *k = NULL;
  hc_buffer_t *partial = NULL;
  hc_status_t st = build(c, one_group ? "simpson_devicereduce" : "simpson_fused",
                         f32 ? simpson_fused_host_f32 : simpson_fused_host_f64, &k);
  if (st != HC_OK) return st;
  const int host = hc_kernel_language(k) == HC_LANG_HOST;
  const size_t n = (size_t)cfg->n;
  size_t global, local, groups;
  if (host) {
    local = one_group ? n : host_chunk(c);
    groups = (n + local - 1) / local;
    global = n;
  } else {
    const size_t per_group = (size_t)c->block * (f32 ? 4 : 2);
    size_t cu = hc_device_info(c->dev)->compute_units ? hc_device_info(c->dev)->compute_units : 1;
    groups = one_group         ? 1
             : cfg->groups > 0 ? (size_t)cfg->groups
                               : cu * (size_t)(reads_pairs(c) ? c->tune->pair_groups_per_cu : c->tune->groups_per_cu);
    if (groups > (n + per_group - 1) / per_group) groups = (n + per_group - 1) / per_group;
    if (groups < 1) groups = 1;
    local = (size_t)c->block;
    global = groups * local;
  }
  const int as_double = host || c->acc_f64;
  if ((st = hc_buffer_create(c->dev, groups * (as_double ? 8 : 4), &partial)) != HC_OK) goto out;
  const int nx = cfg->nx, ny = cfg->ny, nz = cfg->nz;
  const long nn = (long)cfg->n;
  const int isa = cfg->isa;
  /* the host kernel also takes the SIMD instructions of its sums */
  hc_arg_t args[7] = {HC_ARG_BUF(hc_field_buffer(field)),
                      HC_ARG_BUF(partial),
                      HC_ARG_VAL(nx),
                      HC_ARG_VAL(ny),
                      HC_ARG_VAL(nz),
                      HC_ARG_VAL(nn),
                      HC_ARG_VAL(isa)};
  double t0 = hc_now();
  if ((st = hc_device_timer_begin(c->dev)) != HC_OK) goto out;
  if ((st = hc_kernel_launch(k, 1, &global, &local, host ? 7 : 6, args)) != HC_OK) goto out;
  if ((st = hc_device_timer_end(c->dev, &res->device_s)) != HC_OK) goto out;
  double sum = 0;
  if ((st = sum_partials(c, partial, groups, as_double, &sum)) != HC_OK) goto out;
  res->compute_s = hc_now() - t0;
  res->integral = sum * simpson_scale(cfg);
  res->groups = groups;
  res->traffic_bytes = (double)n * (double)c->es + (double)groups * (as_double ? 8 : 4);
  /* Compensated float sums (devices without fp64): a few float roundings
   * of sum |w f| in all (products, Kahan, the tree's levels). */
  res->tolerance = as_double ? 1e-12 : 1e-6;
out:
  hc_buffer_destroy(partial);
  hc_kernel_destroy(k);
  return st;
}

/* Algorithms 1 and 2: products on the device, the sum on the host. */
static hc_status_t run_products(ctx_t *c, hc_field_t *field, int precomputed, simpson_result_t *res) {
  const simpson_config_t *cfg = c->cfg;
  const int f32 = cfg->dtype == HC_F32;
  const size_t n = (size_t)cfg->n, bytes = n * c->es;
  hc_kernel_t *k = NULL;
  hc_buffer_t *out = NULL, *weights = NULL;
  void *host_w = NULL, *host_out = NULL;
  hc_status_t st;
  if (precomputed)
    st =
        build(c, "simpson_products_precomputed", f32 ? simpson_precomputed_host_f32 : simpson_precomputed_host_f64, &k);
  else
    st = build(c, "simpson_products_onthefly", f32 ? simpson_onthefly_host_f32 : simpson_onthefly_host_f64, &k);
  if (st != HC_OK) return st;
  if ((st = hc_buffer_create(c->dev, bytes, &out)) != HC_OK) goto done;
  if (precomputed) {
    /* The coefficient array is prepared in advance, as in the paper: its
     * upload is part of the algorithm's time, its construction is not. */
    if ((st = hc_buffer_create(c->dev, bytes, &weights)) != HC_OK) goto done;
    void *w = hc_buffer_host_ptr(weights);
    if (!w) {
      if (!(host_w = malloc(bytes))) {
        st = hc_error(HC_ERR_NO_MEMORY, "simpson: out of host memory for the weight array");
        goto done;
      }
      w = host_w;
    }
    simpson_weight_array(cfg, w);
  }
  void *result = hc_buffer_host_ptr(out);
  if (!result) {
    if (!(host_out = malloc(bytes))) {
      st = hc_error(HC_ERR_NO_MEMORY, "simpson: out of host memory for the products");
      goto done;
    }
  }
  const int host = hc_kernel_language(k) == HC_LANG_HOST;
  /* A fixed group size for the source kernels as well: the same compiled
   * variant of the kernel serves every size (PoCL compiles one per size). */
  const size_t local = host ? host_chunk(c) : (size_t)c->block;
  const int nx = cfg->nx, ny = cfg->ny, nz = cfg->nz;
  const long nn = (long)cfg->n;
  hc_arg_t pargs[4] = {HC_ARG_BUF(hc_field_buffer(field)), HC_ARG_BUF(out), HC_ARG_BUF(weights), HC_ARG_VAL(nn)};
  hc_arg_t oargs[6] = {HC_ARG_BUF(hc_field_buffer(field)),
                       HC_ARG_BUF(out),
                       HC_ARG_VAL(nx),
                       HC_ARG_VAL(ny),
                       HC_ARG_VAL(nz),
                       HC_ARG_VAL(nn)};
  double t0 = hc_now();
  if ((st = hc_device_timer_begin(c->dev)) != HC_OK) goto done;
  if (host_w && (st = hc_buffer_write(weights, 0, host_w, bytes)) != HC_OK) goto done;
  if ((st = hc_kernel_launch(k, 1, &n, &local, precomputed ? 4 : 6, precomputed ? pargs : oargs)) != HC_OK) goto done;
  if (host_out) {
    if ((st = hc_buffer_read(out, 0, host_out, bytes)) != HC_OK) goto done;
    result = host_out;
  }
  if ((st = hc_device_timer_end(c->dev, &res->device_s)) != HC_OK) goto done;
  double sum = simpson_host_sum(cfg->isa, cfg->dtype, result, n);
  res->compute_s = hc_now() - t0;
  res->integral = sum * simpson_scale(cfg);
  res->groups = host ? (n + local - 1) / local : 0;
  /* Reads of f (and a), the products' write, and the transfers. */
  res->traffic_bytes = (double)bytes * (precomputed ? 3 : 2) + (host_w ? (double)bytes : 0) +
                       (host_out ? (double)bytes : 0) + (double)bytes /* host sum */;
  /* f32 products are rounded once each: |error| <= 2^-24 sum |w f|. */
  res->tolerance = f32 ? 1e-7 : 1e-12;
done:
  free(host_w);
  free(host_out);
  hc_buffer_destroy(weights);
  hc_buffer_destroy(out);
  hc_kernel_destroy(k);
  return st;
}

hc_status_t simpson_run_variant(hc_job_t *job, const simpson_config_t *cfg, hc_field_t *field, simpson_result_t *res) {
  memset(res, 0, sizeof *res);
  hc_device_t *dev = hc_job_device(job);
  size_t row = 0;
  hc_status_t st = HC_TUNING_PICK(hc_device_info(dev), simpson_tuning, &row);
  if (st != HC_OK) return st;
  ctx_t c = {job, dev, cfg, &simpson_tuning[row], hc_dtype_size(cfg->dtype), hc_device_info(dev)->fp64 ? 1 : 0, 0};
  switch (cfg->variant) {
  case SIMPSON_PRECOMPUTED: return run_products(&c, field, 1, res);
  case SIMPSON_ONTHEFLY: return run_products(&c, field, 0, res);
  case SIMPSON_DEVICEREDUCE: return run_reduce(&c, field, 1, res);
  default: return run_reduce(&c, field, 0, res);
  }
}
