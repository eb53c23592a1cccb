/* jacobi — choosing, checking and launching the kernels: the work-group
 * (block) per device, the launch geometry of each kernel, and the small
 * host-side sums of the reductions' partials. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/tuning.h>

#include "jacobi.h"

extern const char jacobi_kernels_src[];

/* jacobi's per-device tuning (hc/tuning.h). Re-measure the blocks with
 * block= and rows= (tests/gpu/probe.sh jacobi on a GPU), the rest by
 * editing a row, each then with bench/run --only=jacobi.
 *   block         default block of a device compiling source: items along
 *                 a row (32: one warp-wide coalesced access) x rows
 *   naive3d       the 3-D naive sweep's block: planes x rows x items
 *   march_group   items per group of the tiled 3-D marching sweep on rows
 *                 of about that length (rows of half of it: two rows of
 *                 half); 0 keeps the default block. 1 x 256 was the best of
 *                 the blocks tried on both GPU backends, 2 x 128 close,
 *                 narrow blocks (4 x 32) far slower; NVIDIA's OpenCL
 *                 refuses 512 items for this kernel.
 *   march_fill    the marching sweep cuts its depth into chunks (of at
 *                 least 16 planes) until this many groups per compute unit
 *                 are in flight
 *   red_fill      reduction groups per compute unit
 *   host_groups   groups per thread of host kernels, and the fewest points
 *                 worth handing to another thread as a group */
typedef struct {
  const char *device;
  int block[2], naive3d[3], march_group, march_fill, red_fill, host_groups, host_group_points;
} jacobi_tuning_t;

static const jacobi_tuning_t jacobi_tuning[] = {
    {"gpu", {32, 8}, {2, 4, 32}, 256, 16, 32, 4, 32768},
    {"*", {32, 8}, {2, 4, 32}, 0, 16, 32, 4, 32768},
};

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }
static size_t clampz(size_t v, size_t lo, size_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Interior rows: every interior line along the contiguous axis. */
static size_t interior_rows(const jacobi_problem_t *p) {
  return (size_t)(p->n[1] - 2) * (p->dim == 3 ? (size_t)(p->n[0] - 2) : 1);
}

static void block_text(const jacobi_problem_t *p, char *buf, size_t n) {
  int r = p->block_rank ? p->block_rank : p->dim;
  size_t len = 0;
  buf[0] = '\0';
  for (int a = 3 - r; a < 3 && len < n; a++)
    len += (size_t)snprintf(buf + len, n - len, "%s%d", a > 3 - r ? "x" : "", p->block[a]);
}

/* How many groups a host launch should have: a few per thread, but no
 * group under a minimum of points, since handing a group to another thread
 * costs more than computing that little (a small grid runs as one group). */
static size_t host_groups(const jacobi_problem_t *p, const hc_device_info_t *in, const jacobi_tuning_t *t) {
  size_t cu = in->compute_units ? in->compute_units : 1;
  size_t most = p->interior / (size_t)t->host_group_points;
  return clampz((size_t)t->host_groups * cu, 1, most ? most : 1);
}

/* The host's 3-D tiled block: `groups` blocks of whole rows, each marching
 * a slab of planes, with at most `fit` rows (three planes of the block stay
 * in cache). Every block re-reads two halo rows and two halo planes, so the
 * cut minimises (R + 2) / R * (Z + 2) / Z over R rows and Z planes: on 16
 * cores, 64 blocks of 256^3 cut as 4 rows over the whole depth re-read half
 * the grid, and 8 x 8 blocks of 32 rows x 32 planes 13 %. */
static void host_tiled_block(jacobi_problem_t *p, size_t groups, size_t fit, size_t ny, size_t nz) {
  double best = 1e300;
  p->block[1] = 1, p->block[0] = (int)nz;
  for (size_t a = 1; a <= ny; a++) {
    size_t R = ceil_div(ny, a), Z = ceil_div(nz, clampz(ceil_div(groups, a), 1, nz));
    double cost = (double)(R + 2) / (double)R * (double)(Z + 2) / (double)Z;
    if (R <= fit && cost < best) best = cost, p->block[1] = (int)R, p->block[0] = (int)Z;
  }
  p->block_rank = 3;
}

/* Default blocks when none is given. On a device compiling source: the
 * table's block; a tiled 3-D sweep marches its march_group block, each item
 * `rows` rows tall. On the host, naive: slabs of whole planes; tiled:
 * blocks of whole rows by slabs of planes (host_tiled_block), enough
 * groups for every thread. */
static void default_block(jacobi_problem_t *p, const hc_device_info_t *in, int host, const jacobi_tuning_t *t) {
  if (!host) {
    p->block[2] = t->block[0];
    p->block[1] = t->block[1];
    p->block[0] = 1;
    const int row = (int)(p->n[2] - 2), wide = t->march_group;
    if (p->dim == 3 && p->variant == VARIANT_NAIVE) {
      p->block[0] = t->naive3d[0];
      p->block[1] = t->naive3d[1];
      p->block[2] = t->naive3d[2];
    } else if (p->dim == 3 && wide && row >= wide / 2) {
      /* a row of 250 points takes a 256-item row, one of 200 two of 128 */
      p->block[2] = row >= wide * 49 / 50 ? wide : wide / 2;
      p->block[1] = wide / p->block[2];
    }
    p->block_rank = p->dim == 3 && p->variant == VARIANT_NAIVE ? 3 : 2;
    return;
  }
  size_t groups = host_groups(p, in, t);
  size_t row_bytes = (size_t)p->n[2] * p->es;
  size_t l2 = in->l2_cache_bytes ? (size_t)in->l2_cache_bytes : 256 * 1024;
  size_t ny = (size_t)(p->n[1] - 2), nz = (size_t)(p->n[0] - 2);
  p->block[2] = (int)(p->n[2] - 2);
  if (p->dim == 2) {
    p->block[1] = (int)ceil_div(ny, clampz(groups, 1, ny));
  } else if (p->variant == VARIANT_NAIVE) {
    /* Slabs of whole planes, as the backend would cut them. */
    p->block[1] = (int)ny;
    p->block[0] = (int)ceil_div(nz, clampz(groups, 1, nz));
    p->block_rank = 3;
    return;
  } else {
    host_tiled_block(p, groups, clampz(l2 / 4 / (3 * row_bytes), 1, ny), ny, nz);
    return;
  }
  p->block_rank = 2;
}

/* The sweep's launch geometry. */
static void sweep_geometry(const jacobi_problem_t *p, const hc_device_info_t *in, const jacobi_tuning_t *t,
                           jacobi_kernels_t *k) {
  const size_t nx = (size_t)(p->n[2] - 2), ny = (size_t)(p->n[1] - 2), nz = (size_t)(p->n[0] - 2);
  const size_t bx = (size_t)p->block[2], by = (size_t)p->block[1], bz = (size_t)p->block[0];
  k->sweep_dims = (uint32_t)p->dim;
  k->sweep_global[0] = nx;
  k->sweep_global[1] = ny;
  k->sweep_global[2] = p->dim == 3 ? nz : 1;
  k->chunk = 0;
  if (k->lang == HC_LANG_HOST) {
    /* Groups are cache blocks; a 2-D block in 3-D marches the whole depth. */
    k->sweep_local[0] = clampz(bx, 1, nx);
    k->sweep_local[1] = clampz(by, 1, ny);
    k->sweep_local[2] = p->dim == 3 ? (p->block_rank == 3 ? clampz(bz, 1, nz) : nz) : 1;
    return;
  }
  k->sweep_local[0] = bx;
  k->sweep_local[1] = by;
  k->sweep_local[2] = p->dim == 3 ? bz : 1;
  /* A marching item updates `rows` rows: its tile is by * rows rows. */
  const size_t rows = p->sweep == SWEEP_MARCH ? (size_t)p->rows : 1;
  k->sweep_global[1] = ceil_div(ny, rows);
  for (int d = 0; d < 3; d++) k->sweep_global[d] = ceil_div(k->sweep_global[d], k->sweep_local[d]) * k->sweep_local[d];
  if (p->sweep == SWEEP_MARCH) {
    /* Enough work-groups to fill the device march_fill deep, cutting the
     * depth into chunks of at least 16 planes (each chunk reads two extra
     * planes). */
    size_t tiles = ceil_div(nx, bx) * ceil_div(ny, by * rows);
    size_t target = (in->compute_units ? in->compute_units : 64) * (size_t)t->march_fill;
    size_t chunks = clampz(ceil_div(target, tiles), 1, nz / 16 ? nz / 16 : 1);
    size_t chunk = ceil_div(nz, chunks);
    k->chunk = (int)chunk;
    k->sweep_global[2] = ceil_div(nz, chunk);
    k->sweep_local[2] = 1;
  }
}

/* The reductions' geometry: groups of RED_X x RED_Y striding over the rows
 * (red_fill per compute unit), or on the host whole rows per group. */
static void reduction_geometry(const jacobi_problem_t *p, const hc_device_info_t *in, const jacobi_tuning_t *t,
                               jacobi_kernels_t *k) {
  const size_t nx = (size_t)(p->n[2] - 2), rows = interior_rows(p);
  size_t cu = in->compute_units ? in->compute_units : 1;
  if (k->lang == HC_LANG_HOST) {
    size_t per = ceil_div(rows, clampz(host_groups(p, in, t), 1, rows));
    k->red_global[0] = nx;
    k->red_global[1] = rows;
    k->red_local[0] = nx;
    k->red_local[1] = per;
    k->red_groups = ceil_div(rows, per);
    return;
  }
  size_t g0 = ceil_div(nx, JACOBI_RED_X);
  size_t g1 = clampz(ceil_div((size_t)t->red_fill * cu, g0), 1, ceil_div(rows, JACOBI_RED_Y));
  k->red_global[0] = g0 * JACOBI_RED_X;
  k->red_global[1] = g1 * JACOBI_RED_Y;
  k->red_local[0] = JACOBI_RED_X;
  k->red_local[1] = JACOBI_RED_Y;
  k->red_groups = g0 * g1;
}

/* Local memory of a tiled sweep: the tiled kernel's tile with its halo, or
 * the marching kernel's two planes (double-buffered) of block rows x rows
 * rows with their halo. */
static size_t tile_bytes(const jacobi_problem_t *p) {
  size_t cols = (size_t)p->block[2] + 2, by = (size_t)p->block[1];
  if (p->sweep == SWEEP_MARCH) return 2 * cols * (by * (size_t)p->rows + 2) * p->es;
  return cols * (by + 2) * (p->dim == 3 ? (size_t)p->block[0] + 2 : 1) * p->es;
}

/* Block limits of a device compiling source, checked before the build. */
static hc_status_t check_block(const jacobi_problem_t *p, const hc_device_info_t *in, const char *dev_id) {
  char b[64];
  block_text(p, b, sizeof b);
  if (p->sweep == SWEEP_MARCH) {
    size_t len = strlen(b);
    snprintf(b + len, sizeof b - len, " rows=%d", p->rows);
    /* The marching kernel offsets within a plane in 32 bits. */
    if (p->n[1] * p->n[2] > INT32_MAX)
      return hc_error(HC_ERR_PARAM,
                      "n: planes of %lld points; the marching kernel takes at most %d (a 3-D block "
                      "selects the tiled kernel)",
                      (long long)(p->n[1] * p->n[2]), INT32_MAX);
  }
  size_t items = (size_t)p->block[0] * (size_t)p->block[1] * (size_t)p->block[2];
  if (p->sweep == SWEEP_TILED)
    for (int a = 3 - (p->block_rank ? p->block_rank : p->dim); a < 3; a++)
      if (p->block[a] < 2)
        return hc_error(HC_ERR_PARAM, "block=%s: the tiled variant needs at least 2 items per block axis", b);
  if (in->max_work_group_size && items > in->max_work_group_size)
    return hc_error(HC_ERR_PARAM, "block=%s: %zu work-items per group, but %s allows at most %u", b, items, dev_id,
                    in->max_work_group_size);
  if (p->dim == 3 && p->block[0] > 64)
    return hc_error(HC_ERR_PARAM,
                    "block=%s: at most 64 on the slowest block axis (a device limit of CUDA and "
                    "most OpenCL GPUs)",
                    b);
  if (p->variant == VARIANT_TILED && in->local_mem_bytes) {
    size_t tile = tile_bytes(p);
    if (tile > in->local_mem_bytes)
      return hc_error(HC_ERR_PARAM, "block=%s: its tile with halo needs %zu bytes of local memory, but %s has %llu", b,
                      tile, dev_id, (unsigned long long)in->local_mem_bytes);
  }
  return HC_OK;
}

static hc_status_t make(hc_device_t *dev, const char *name, const char *options, hc_host_kernel_fn fn,
                        hc_kernel_t **out) {
  hc_kernel_desc_t d = {sizeof d, name, jacobi_kernels_src, options, fn};
  return hc_kernel_create(dev, &d, out);
}

/* Two sweeps per pass (host_kernels.inc sweep2) where it can run: host
 * kernels of the tiled variant whose groups hold whole rows (the default
 * blocks). 2 where it cannot run is an error saying why. Auto (0) takes it
 * where the two buffers outgrow the last-level cache: there it saves half
 * the memory traffic, and its output streams (bench/ jacobi shows the
 * gain on large grids); on grids the cache holds it only adds the halo's
 * work, so it is no faster there. Each
 * group gets a ring of three planes of its rows plus a halo row on each
 * side (2-D: three rows) and a staging row in the scratch buffer. */
static hc_status_t sweep2_make(hc_device_t *dev, const jacobi_problem_t *p, jacobi_kernels_t *k, hc_host_kernel_fn fn) {
  if (p->sweeps_per_pass == 1) return HC_OK;
  const hc_device_info_t *in = hc_device_info(dev);
  const char *why = k->lang != HC_LANG_HOST       ? "the device compiles its kernels; two sweeps per pass is the host "
                                                    "kernel's (e.g. the cpu backend)"
                    : p->variant != VARIANT_TILED ? "variant=naive sweeps once per pass"
                    : k->sweep_local[0] < k->sweep_global[0] ? "the block does not hold whole rows"
                                                             : NULL;
  if (why) return p->sweeps_per_pass == 2 ? hc_error(HC_ERR_PARAM, "sweeps_per_pass=2: %s", why) : HC_OK;
  const uint64_t llc = in->l3_cache_bytes ? in->l3_cache_bytes : in->l2_cache_bytes * in->compute_units;
  /* A split part decides on the whole grid, as one device would: the parts
   * share the host's cache, and every part makes the same choice. */
  const int outgrows = 2 * (uint64_t)p->gn[0] * (uint64_t)p->gn[1] * (uint64_t)p->gn[2] * p->es > llc;
  if (p->sweeps_per_pass == 0 && !outgrows) return HC_OK;
  /* streaming stores where `out` will not be read back from the cache */
  k->stream = p->stores ? p->stores == 2 : outgrows;
  size_t groups = 1;
  for (int d = 0; d < 3; d++) groups *= ceil_div(k->sweep_global[d], k->sweep_local[d]);
  const size_t rows = p->dim == 3 ? k->sweep_local[1] + 2 : 1, pad = JACOBI_RING_PAD_BYTES / p->es;
  k->slice = (long)(ceil_div((3 * rows + 1) * (size_t)p->n[2], pad) * pad + 2 * pad); /* ring + staging row */
  const size_t bytes = groups * (size_t)k->slice * p->es;
  static const double zero = 0;
  hc_kernel_desc_t d = {sizeof d, "jacobi_sweep2", NULL, NULL, fn};
  hc_status_t st = hc_buffer_create(dev, bytes, &k->scratch);
  if (st == HC_OK) st = hc_buffer_fill(k->scratch, 0, &zero, p->es, bytes); /* the pads */
  if (st == HC_OK) st = hc_kernel_create(dev, &d, &k->sweep2);
  return st;
}

/* sweep2_make, and stores=streaming refused where no two-sweep kernel runs. */
static hc_status_t sweep2_create(hc_device_t *dev, const jacobi_problem_t *p, jacobi_kernels_t *k,
                                 hc_host_kernel_fn fn) {
  hc_status_t st = sweep2_make(dev, p, k, fn);
  if (st == HC_OK && p->stores == 2 && !k->sweep2)
    st = hc_error(HC_ERR_PARAM, "stores=streaming: only the two-sweep host kernel streams, and this run sweeps once "
                                "per pass (see sweeps_per_pass)");
  return st;
}

/* The block, the launch geometry and the build options for the part's
 * rows (the whole grid in a whole run). */
static hc_status_t plan_geometry(hc_device_t *dev, jacobi_problem_t *p, jacobi_kernels_t *k) {
  const hc_device_info_t *in = hc_device_info(dev);
  const int host = k->lang == HC_LANG_HOST;
  size_t row = 0;
  hc_status_t st = HC_TUNING_PICK(in, jacobi_tuning, &row);
  if (st != HC_OK) return st;
  const jacobi_tuning_t *t = &jacobi_tuning[row];
  if (!p->block_given) default_block(p, in, host, t);
  p->sweep = p->variant == VARIANT_NAIVE                    ? SWEEP_NAIVE
             : (p->dim == 3 && p->block_rank == 2 && !host) ? SWEEP_MARCH
                                                            : SWEEP_TILED;
  if (!host && (st = check_block(p, in, hc_device_name(dev))) != HC_OK) return st;
  sweep_geometry(p, in, t, k);
  reduction_geometry(p, in, t, k);
  k->acc_f64 = host || in->fp64;
  /* Where the partial sums land on the host: allocated once, not per check. */
  free(k->host_partials);
  k->host_partials = malloc(k->red_groups * 4 * sizeof(double));
  if (!k->host_partials) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory");

  /* Tiles are sized by the block only where a tiled kernel runs, so that
   * a naive block never asks for a tile the device cannot hold. */
  int tb[3] = {2, 2, 2};
  if (p->variant == VARIANT_TILED) tb[0] = p->block[2], tb[1] = p->block[1], tb[2] = p->block[0] > 1 ? p->block[0] : 2;
  snprintf(k->options, sizeof k->options,
           "-DJACOBI_REAL=%s -DJACOBI_DIM=%d -DJACOBI_F_STORED=%d -DJACOBI_SWEEP=%d -DJACOBI_BX=%d -DJACOBI_BY=%d "
           "-DJACOBI_BZ=%d -DJACOBI_DEPTH=%d -DJACOBI_ROWS=%d",
           p->dtype == HC_F64 ? "double" : "float", p->dim, p->f_stored, (int)p->sweep + 1, tb[0], tb[1], tb[2],
           p->sweep == SWEEP_MARCH ? p->depth : 2, p->sweep == SWEEP_MARCH ? p->rows : 1);
  return HC_OK;
}

/* The kernels the options name, and sweep2's scratch for the geometry. */
static hc_status_t make_kernels(hc_device_t *dev, const jacobi_problem_t *p, jacobi_kernels_t *k) {
  const int host = k->lang == HC_LANG_HOST;
  const jacobi_host_fns_t *fns = &jacobi_host_fns[p->dtype == HC_F64][p->f_stored];
  const char *sweep_name = p->sweep == SWEEP_NAIVE   ? "jacobi_naive"
                           : p->sweep == SWEEP_MARCH ? "jacobi_march"
                                                     : "jacobi_tiled";
  hc_status_t st;
  if ((st = make(dev, sweep_name, k->options, fns->sweep, &k->sweep)) != HC_OK ||
      (st = make(dev, "residual_norms", k->options, fns->residual, &k->residual)) != HC_OK ||
      (st = make(dev, "compare_norms", k->options, fns->compare, &k->compare)) != HC_OK ||
      (st = make(dev, "fill_product", k->options, fns->fill, &k->fill)) != HC_OK)
    return st;
  if (p->want_residual && (st = make(dev, "residual_field", k->options, fns->rfield, &k->rfield)) != HC_OK) return st;
  if ((st = sweep2_create(dev, p, k, fns->sweep2)) != HC_OK) return st;
  if (!host) {
    size_t items = k->sweep_local[0] * k->sweep_local[1] * k->sweep_local[2];
    size_t most = hc_kernel_max_group_size(k->sweep);
    if (most && items > most) {
      char b[64];
      block_text(p, b, sizeof b);
      return hc_error(HC_ERR_PARAM, "block=%s: %zu work-items per group, but the %s kernel allows at most %zu on %s", b,
                      items, sweep_name, most, hc_device_name(dev));
    }
    size_t red = hc_kernel_max_group_size(k->residual), cmp = hc_kernel_max_group_size(k->compare);
    if ((red && red < JACOBI_RED_X * JACOBI_RED_Y) || (cmp && cmp < JACOBI_RED_X * JACOBI_RED_Y))
      return hc_error(HC_ERR_UNSUPPORTED, "jacobi: the reduction kernels need work-groups of %d on %s",
                      JACOBI_RED_X * JACOBI_RED_Y, hc_device_name(dev));
  }
  return HC_OK;
}

hc_status_t jacobi_kernels_create(hc_device_t *dev, jacobi_problem_t *p, jacobi_kernels_t *k) {
  memset(k, 0, sizeof *k);
  const hc_device_info_t *in = hc_device_info(dev);
  /* The core runs host functions where the device takes them. */
  k->lang = (in->languages & HC_LANG_BIT(HC_LANG_HOST))     ? HC_LANG_HOST
            : (in->languages & HC_LANG_BIT(HC_LANG_CUDA_C)) ? HC_LANG_CUDA_C
                                                            : HC_LANG_OPENCL_C;
  hc_status_t st = plan_geometry(dev, p, k);
  return st == HC_OK ? make_kernels(dev, p, k) : st;
}

hc_status_t jacobi_kernels_resize(hc_device_t *dev, jacobi_problem_t *p, jacobi_kernels_t *k) {
  char had[sizeof k->options];
  memcpy(had, k->options, sizeof had);
  hc_status_t st = plan_geometry(dev, p, k);
  if (st != HC_OK) return st;
  /* sweep2's scratch follows the geometry; the kernels only the options
   * (the device's block does not depend on the rows along the split axis) */
  hc_kernel_destroy(k->sweep2);
  hc_buffer_destroy(k->scratch);
  k->sweep2 = NULL;
  k->scratch = NULL;
  if (!strcmp(had, k->options))
    return sweep2_create(dev, p, k, jacobi_host_fns[p->dtype == HC_F64][p->f_stored].sweep2);
  hc_kernel_t **all[] = {&k->sweep, &k->residual, &k->compare, &k->fill, &k->rfield};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
    hc_kernel_destroy(*all[i]);
    *all[i] = NULL;
  }
  return make_kernels(dev, p, k);
}

void jacobi_kernels_destroy(jacobi_kernels_t *k) {
  hc_kernel_destroy(k->sweep);
  hc_kernel_destroy(k->residual);
  hc_kernel_destroy(k->compare);
  hc_kernel_destroy(k->fill);
  hc_kernel_destroy(k->rfield);
  hc_kernel_destroy(k->sweep2);
  hc_buffer_destroy(k->scratch);
  free(k->host_partials);
  memset(k, 0, sizeof *k);
}

/* Scalars of the element type: a float or a double argument. */
typedef union {
  float f;
  double d;
} real_t;

static hc_arg_t real_arg(const jacobi_problem_t *p, real_t *slot, double v) {
  if (p->dtype == HC_F64) {
    slot->d = v;
    return (hc_arg_t){HC_ARG_KIND_SCALAR, sizeof(double), &slot->d};
  }
  slot->f = (float)v;
  return (hc_arg_t){HC_ARG_KIND_SCALAR, sizeof(float), &slot->f};
}

/* The sweep kernel `kern` over rows (14 arguments; sweep2 also takes the
 * scratch and its streaming flag). The launch is the whole sweep's, cut
 * to the rows on the launch axis of the slowest grid axis. */
static hc_status_t launch_sweep(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_kernel_t *kern, hc_buffer_t *in,
                                hc_buffer_t *out, hc_buffer_t *f, hc_buffer_t *tab, jacobi_rows_t rows) {
  int n0 = (int)p->n[0], n1 = (int)p->n[1], n2 = (int)p->n[2], chunk = k->chunk, r0 = rows.r0, r1 = rows.r1;
  if (r1 <= r0) return HC_OK;
  const uint32_t axis = p->dim == 3 ? 2 : 1;
  const size_t count = (size_t)(r1 - r0);
  size_t global[3] = {k->sweep_global[0], k->sweep_global[1], k->sweep_global[2]}, local[3];
  memcpy(local, k->sweep_local, sizeof local);
  if (k->lang == HC_LANG_HOST) {
    global[axis] = count;
    local[axis] = local[axis] < count ? local[axis] : count;
  } else if (p->sweep == SWEEP_MARCH) {
    global[axis] = ceil_div(count, (size_t)chunk);
  } else {
    global[axis] = ceil_div(count, local[axis]) * local[axis];
  }
  real_t c[4];
  hc_arg_t a[17] = {HC_ARG_BUF(in),
                    HC_ARG_BUF(out),
                    HC_ARG_BUF(f ? f : tab),
                    HC_ARG_BUF(tab),
                    HC_ARG_VAL(n0),
                    HC_ARG_VAL(n1),
                    HC_ARG_VAL(n2),
                    real_arg(p, &c[0], p->c[0]),
                    real_arg(p, &c[1], p->c[1]),
                    real_arg(p, &c[2], p->c[2]),
                    real_arg(p, &c[3], p->cf),
                    HC_ARG_VAL(chunk),
                    HC_ARG_VAL(r0),
                    HC_ARG_VAL(r1),
                    HC_ARG_BUF(k->scratch),
                    HC_ARG_VAL(k->slice),
                    HC_ARG_VAL(k->stream)};
  return hc_kernel_launch(kern, k->sweep_dims, global, local, kern == k->sweep2 ? 17 : 14, a);
}

hc_status_t jacobi_sweep(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *in, hc_buffer_t *out,
                         hc_buffer_t *f, hc_buffer_t *tab, jacobi_rows_t rows) {
  return launch_sweep(k, p, k->sweep, in, out, f, tab, rows);
}

hc_status_t jacobi_sweep2(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *in, hc_buffer_t *out,
                          hc_buffer_t *f, hc_buffer_t *tab, jacobi_rows_t rows) {
  return launch_sweep(k, p, k->sweep2, in, out, f, tab, rows);
}

/* Reads n values per group and combines them: sums, or the max where
 * is_max[j] is set. */
static hc_status_t gather(const jacobi_kernels_t *k, hc_buffer_t *partial, int n, const int *is_max, double *out) {
  size_t es = k->acc_f64 ? sizeof(double) : sizeof(float);
  size_t count = k->red_groups * (size_t)n;
  hc_status_t st = hc_buffer_read(partial, 0, k->host_partials, count * es);
  for (int j = 0; j < n; j++) out[j] = 0;
  for (size_t g = 0; st == HC_OK && g < k->red_groups; g++)
    for (int j = 0; j < n; j++) {
      size_t i = g * (size_t)n + (size_t)j;
      double v = k->acc_f64 ? ((const double *)k->host_partials)[i] : ((const float *)k->host_partials)[i];
      if (is_max && is_max[j])
        out[j] = v > out[j] || isnan(v) ? (isnan(out[j]) ? out[j] : v) : out[j];
      else
        out[j] += v;
    }
  /* The kernels' max drops NaNs (fmax); the sums beside it keep them. A max
   * whose sums are not finite is not a bound of anything: NaN. */
  for (int j = 0; st == HC_OK && is_max && j < n; j++)
    if (!is_max[j] && !isfinite(out[j]))
      for (int m = 0; m < n; m++)
        if (is_max[m]) out[m] = NAN;
  return st;
}

hc_status_t jacobi_residual(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *u, hc_buffer_t *f,
                            hc_buffer_t *tab, hc_buffer_t *partial, double *r2, double *f2) {
  int n0 = (int)p->n[0], n1 = (int)p->n[1], n2 = (int)p->n[2];
  real_t w[3];
  hc_arg_t a[12] = {HC_ARG_BUF(u),
                    HC_ARG_BUF(f ? f : tab),
                    HC_ARG_BUF(tab),
                    HC_ARG_VAL(n0),
                    HC_ARG_VAL(n1),
                    HC_ARG_VAL(n2),
                    real_arg(p, &w[0], p->w[0]),
                    real_arg(p, &w[1], p->w[1]),
                    real_arg(p, &w[2], p->w[2]),
                    HC_ARG_BUF(partial),
                    HC_ARG_VAL(p->own_lo),
                    HC_ARG_VAL(p->own_hi)};
  hc_status_t st = hc_kernel_launch(k->residual, 2, k->red_global, k->red_local, 12, a);
  double s[2] = {0, 0};
  if (st == HC_OK) st = gather(k, partial, 2, NULL, s);
  if (st == HC_OK) *r2 = s[0], *f2 = s[1];
  return st;
}

hc_status_t jacobi_compare(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *u, hc_buffer_t *tab2, double s1,
                           double s2, hc_buffer_t *partial, double out[4]) {
  int n0 = (int)p->n[0], n1 = (int)p->n[1], n2 = (int)p->n[2];
  real_t s[2];
  hc_arg_t a[10] = {HC_ARG_BUF(u),         HC_ARG_BUF(tab2),       HC_ARG_VAL(n0),         HC_ARG_VAL(n1),
                    HC_ARG_VAL(n2),        real_arg(p, &s[0], s1), real_arg(p, &s[1], s2), HC_ARG_BUF(partial),
                    HC_ARG_VAL(p->own_lo), HC_ARG_VAL(p->own_hi)};
  hc_status_t st = hc_kernel_launch(k->compare, 2, k->red_global, k->red_local, 10, a);
  static const int is_max[4] = {0, 1, 0, 0};
  if (st == HC_OK) st = gather(k, partial, 4, is_max, out);
  return st;
}

hc_status_t jacobi_fill(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *out, hc_buffer_t *tab, double s) {
  int n0 = (int)p->n[0], n1 = (int)p->n[1], n2 = (int)p->n[2];
  real_t v;
  hc_arg_t a[6] = {HC_ARG_BUF(out), HC_ARG_BUF(tab), HC_ARG_VAL(n0),
                   HC_ARG_VAL(n1),  HC_ARG_VAL(n2),  real_arg(p, &v, s)};
  size_t global[3] = {(size_t)n2, (size_t)n1, (size_t)n0};
  return hc_kernel_launch(k->fill, (uint32_t)p->dim, global, NULL, 6, a);
}

hc_status_t jacobi_residual_field(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *u, hc_buffer_t *f,
                                  hc_buffer_t *tab, hc_buffer_t *r) {
  int n0 = (int)p->n[0], n1 = (int)p->n[1], n2 = (int)p->n[2];
  real_t w[3];
  hc_arg_t a[10] = {HC_ARG_BUF(u),
                    HC_ARG_BUF(f ? f : tab),
                    HC_ARG_BUF(tab),
                    HC_ARG_VAL(n0),
                    HC_ARG_VAL(n1),
                    HC_ARG_VAL(n2),
                    real_arg(p, &w[0], p->w[0]),
                    real_arg(p, &w[1], p->w[1]),
                    real_arg(p, &w[2], p->w[2]),
                    HC_ARG_BUF(r)};
  size_t global[2] = {(size_t)(n2 - 2), interior_rows(p)};
  return hc_kernel_launch(k->rfield, 2, global, NULL, 10, a);
}

hc_status_t jacobi_upload_table(hc_device_t *dev, const jacobi_problem_t *p, const double *tab, size_t count,
                                hc_buffer_t **out) {
  void *tmp = malloc(count * p->es);
  if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory");
  for (size_t i = 0; i < count; i++) {
    if (p->dtype == HC_F64)
      ((double *)tmp)[i] = tab[i];
    else
      ((float *)tmp)[i] = (float)tab[i];
  }
  hc_status_t st = hc_buffer_create(dev, count * p->es, out);
  if (st == HC_OK) st = hc_buffer_write(*out, 0, tmp, count * p->es);
  free(tmp);
  return st;
}
