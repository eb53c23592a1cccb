/* Schedules: how a kernel instance runs on the grid's device. The variant,
 * the work-group shape, the planes and cells each item takes and the
 * kernel's argument list are decided here once per instance, from its
 * structure, the grid's tuning (its device's row of the tuning table below,
 * and the configuration variables, read when the grid is created) and the device; the emitter writes the kernel from
 * the record and the launcher runs it from the same record, so neither re-derives what the other chose. */
#include <stdio.h>
#include <string.h>

#include <hc/tuning.h>

#include "grid_internal.h"

/* The grid's per-device tuning (hc/tuning.h): the defaults of
 * HC_GRID_STENCIL, _POINT, _VECTOR and _PLANE_ORDER, whether fuse=auto
 * stages (gs_tuning_t says what each is for), and reduce_fill, the groups
 * per compute unit of a device reduction (its partials, 64 to 1024).
 * Re-measure the shapes with tests/gpu/grid_shapes.sh and
 * tests/gpu/probe.sh grid on a device, which set the variables, staging
 * with fuse=stage|recompute, then bench/run --only=grid. */
static const struct {
  const char *device;
  int stencil[3], point[3], vector[3], alternate, stage, reduce_fill;
} grid_tuning[] = {
    {"gpu", {128, 2, 4}, {128, 2, 8}, {32, 4, 4}, 1, 1, 8},
    {"host", {128, 2, 4}, {128, 2, 8}, {32, 4, 4}, 1, 1, 8},
    {"*", {128, 2, 4}, {128, 2, 8}, {32, 4, 4}, 1, 0, 8},
};

hc_status_t gs_tuning_read(gs_tuning_t *t, const hc_device_info_t *info) {
  size_t row = 0;
  hc_status_t st = HC_TUNING_PICK(info, grid_tuning, &row);
  if (st != HC_OK) return st;
  memcpy(t->stencil, grid_tuning[row].stencil, sizeof t->stencil);
  memcpy(t->point, grid_tuning[row].point, sizeof t->point);
  memcpy(t->vector, grid_tuning[row].vector, sizeof t->vector);
  t->reduce_fill = grid_tuning[row].reduce_fill;
  t->stage = grid_tuning[row].stage;
  long long order = grid_tuning[row].alternate ? 0 : 1; /* alternate|forward */
  st = hc_config_shape("HC_GRID_STENCIL", t->stencil);
  if (st == HC_OK) st = hc_config_shape("HC_GRID_POINT", t->point);
  if (st == HC_OK) st = hc_config_shape("HC_GRID_VECTOR", t->vector);
  if (st == HC_OK) st = hc_config_int("HC_GRID_PLANE_ORDER", &order);
  t->alternate = order == 0;
  const char *cc = "cc", *flags = "";
  if (st == HC_OK) st = hc_config_str("HC_GRID_CC", &cc);
  if (st == HC_OK) st = hc_config_str("HC_GRID_CFLAGS", &flags);
  if (st == HC_OK && (strlen(cc) >= sizeof t->cc || strlen(flags) >= sizeof t->cflags))
    st = hc_error(HC_ERR_PARAM, "HC_GRID_CC or HC_GRID_CFLAGS is longer than %zu characters", sizeof t->cc - 1);
  snprintf(t->cc, sizeof t->cc, "%s", cc);
  snprintf(t->cflags, sizeof t->cflags, "%s", flags);
  return st;
}

void gs_field_name(uint32_t s, char *out, size_t n) {
  if (s == 0)
    snprintf(out, n, "D");
  else
    snprintf(out, n, "F%u", s);
}

void gs_param_name(uint32_t i, char *out, size_t n) { snprintf(out, n, "p%u", i); }

/* ---------------------------------------------------------------- arguments */

static void arg_add(gs_schedule_t *s, gs_arg_kind_t kind, gs_val_t val, uint32_t index, const char *name) {
  if (s->nargs < GS_MAX_ARGS) {
    gs_arg_t *a = &s->args[s->nargs];
    a->kind = kind;
    a->val = val;
    a->index = index;
    snprintf(a->name, sizeof a->name, "%s", name);
  }
  s->nargs++;
}

/* The box as index arguments, three per axis group, in the body's names. */
static const struct {
  gs_val_t val;
  const char *stem;
} box_args[] = {{GS_VAL_EXTENT, "n"}, {GS_VAL_LO, "lo"}, {GS_VAL_COUNT, "c"}};

/* The argument list in order; s->nargs counts them even past GS_MAX_ARGS. */
static void arg_layout(const gk_t *k, gs_schedule_t *s) {
  char name[16];
  s->nargs = 0;
  if (k->mode == GK_REDUCE) {
    arg_add(s, GS_ARG_OUT, GS_VAL_EXTENT, 0, GS_NAME_PARTIAL);
  } else {
    gs_field_name(0, name, sizeof name);
    arg_add(s, GS_ARG_OUT, GS_VAL_EXTENT, 0, name);
  }
  for (uint32_t f = 1; f < k->nfields; f++) {
    gs_field_name(f, name, sizeof name);
    arg_add(s, GS_ARG_FIELD, GS_VAL_EXTENT, f, name);
  }
  if (s->params_in_buffer) {
    arg_add(s, GS_ARG_PARAMS, GS_VAL_EXTENT, 0, GS_NAME_PARAMS);
  } else {
    for (uint32_t i = 0; i < k->nparams; i++) {
      gs_param_name(i, name, sizeof name);
      arg_add(s, GS_ARG_PARAM, GS_VAL_EXTENT, i, name);
    }
  }
  for (size_t b = 0; b < sizeof box_args / sizeof box_args[0]; b++)
    for (uint32_t a = 0; a < 3; a++) {
      snprintf(name, sizeof name, "%s%u", box_args[b].stem, a);
      arg_add(s, GS_ARG_INDEX, box_args[b].val, a, name);
    }
  if (s->variant == GS_REDUCE) arg_add(s, GS_ARG_LONG, GS_VAL_CELLS, 0, GS_NAME_CELLS);
  if (s->zrev) arg_add(s, GS_ARG_LONG, GS_VAL_ZREV, 0, GS_NAME_ZREV);
}

/* ---------------------------------------------------------------- the record */

static int has_stencil(const gk_t *k) {
  for (uint32_t i = 0; i < k->nnodes; i++) {
    const gp_node_t *n = k->nodes[i];
    if (!gk_is_leaf(k, n) && (n->kind == GX_STENCIL || n->kind == GX_RESTRICT || n->kind == GX_PROLONG)) return 1;
  }
  return 0;
}

static void set_planes(gs_schedule_t *s, const int shape[3], uint32_t rank) {
  s->variant = GS_PLANES;
  s->planes = rank == 3 ? shape[2] : 1;
  s->group[0] = shape[0];
  s->group[1] = shape[1];
}

hc_status_t gs_schedule_build(gk_t *k) {
  const gp_plan_t *p = k->plan;
  const gs_tuning_t *tune = &p->g->tune;
  const hc_device_info_t *info = hc_device_info(p->g->dev);
  gs_schedule_t *s = &k->sched;
  memset(s, 0, sizeof *s);
  s->alternate = tune->alternate;
  s->acc_bytes = k->lang == HC_LANG_HOST || info->fp64 ? 8 : 4;
  if (k->host_eval) {
    s->variant = GS_EVAL; /* no kernel arguments: the launch passes the instance */
    return HC_OK;
  }
  if (k->lang == HC_LANG_HOST) {
    s->variant = GS_HOST;
  } else if (k->mode == GK_REDUCE) {
    uint32_t cap = info->compute_units ? (uint32_t)tune->reduce_fill * info->compute_units : 64;
    s->variant = GS_REDUCE;
    s->reduce_cap = cap < 64 ? 64 : cap > 1024 ? 1024 : cap;
  } else if (k->staged) {
    s->variant = GS_STAGED;
  } else if (tune->vector[0] > 0 && (s->vec = gv_cells(k)) > 0) {
    set_planes(s, tune->vector, p->rank);
    s->variant = GS_VECTOR;
    if (p->rank < 2) s->group[1] = 1;
  } else if (has_stencil(k) && p->rank >= 2) {
    set_planes(s, tune->stencil, p->rank); /* 2-D groups: see gs_tuning_t */
  } else if (p->rank == 3) {
    set_planes(s, tune->point, p->rank);
  } else {
    s->variant = GS_ROWS;
    s->unroll = has_stencil(k) ? 1 : HCG_ASSIGN_UNROLL;
  }
  /* the items that take plane chunks (gs_plane_chunk) */
  s->zrev = (s->variant == GS_PLANES || s->variant == GS_VECTOR) && p->rank == 3;
  arg_layout(k, s);
  if (s->nargs > HC_MAX_KERNEL_ARGS) {
    s->params_in_buffer = 1;
    arg_layout(k, s);
  }
  if (s->nargs > HC_MAX_KERNEL_ARGS)
    return hc_error(HC_ERR_INVALID_ARG, "grid expression: its kernel would take %u arguments (at most %d)", s->nargs,
                    HC_MAX_KERNEL_ARGS);
  return HC_OK;
}

int gs_schedule_key(const gs_schedule_t *s, char **buf, size_t *len, size_t *cap) {
  return hcg_append(buf, len, cap, "s%d:u%d:%d:v%d:pb%d", (int)s->variant, s->unroll, s->planes, s->vec,
                    s->params_in_buffer);
}

const char *gs_plane_chunk(const gk_t *k) {
  return k->sched.zrev ? "(" GS_NAME_ZREV " ? (IDX)hc_global_size(2) - 1 - (IDX)hc_global_id(2) : (IDX)hc_global_id(2))"
                       : "(IDX)hc_global_id(2)";
}

/* ---------------------------------------------------------------- a launch */

/* One item per cell (EVEN/ODD boxes pack the fast axis); launch dim d is
 * internal axis 2 - d. */
static void cell_range(const gk_t *k, size_t global[3]) {
  global[0] = (size_t)(k->parity != HC_GRID_ALL ? (k->cnt[2] + 1) / 2 : k->cnt[2]);
  global[1] = (size_t)k->cnt[1];
  global[2] = (size_t)k->cnt[0];
}

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Host reductions: the slowest launch axis split into at most `want`
 * groups (the partials' count). */
static uint32_t host_reduce_groups(const gk_t *k, const size_t global[3], size_t local[3], uint32_t want) {
  uint32_t last = k->plan->rank - 1;
  for (uint32_t d = 0; d < 3; d++) local[d] = global[d] ? global[d] : 1;
  size_t n = global[last];
  size_t parts = n < want ? n : want;
  if (parts < 1) parts = 1;
  local[last] = (n + parts - 1) / parts;
  return (uint32_t)((n + local[last] - 1) / local[last]);
}

void gs_launch_shape(const gk_t *k, gs_launch_t *L) {
  const gs_schedule_t *s = &k->sched;
  const uint32_t rank = k->plan->rank;
  memset(L, 0, sizeof *L);
  L->dims = rank;
  cell_range(k, L->global);
  switch (s->variant) {
  case GS_EVAL:
  case GS_HOST:
    if (k->mode == GK_REDUCE) {
      L->groups = host_reduce_groups(k, L->global, L->local, 64);
      L->explicit_local = 1;
    }
    break;
  case GS_REDUCE: {
    uint64_t total = (uint64_t)L->global[0] * L->global[1] * L->global[2];
    uint64_t want = (total + HCG_REDUCE_LOCAL - 1) / HCG_REDUCE_LOCAL;
    L->groups = (uint32_t)(want < s->reduce_cap ? (want ? want : 1) : s->reduce_cap);
    L->dims = 1;
    L->global[0] = (size_t)L->groups * HCG_REDUCE_LOCAL;
    L->global[1] = L->global[2] = 1;
    L->local[0] = HCG_REDUCE_LOCAL;
    L->local[1] = L->local[2] = 1;
    L->explicit_local = 1;
    break;
  }
  case GS_STAGED: {
    const size_t bx = rank == 1 ? HCG_STAGE_BX1 : HCG_STAGE_BX, by = rank == 1 ? 1 : HCG_STAGE_BY;
    L->local[0] = bx;
    L->local[1] = rank >= 2 ? by : 1;
    L->local[2] = 1;
    L->global[0] = round_up((size_t)k->cnt[2], bx);
    L->global[1] = rank >= 2 ? round_up((size_t)k->cnt[1], by) : 1;
    L->global[2] = rank == 3 ? (size_t)(k->cnt[0] + HCG_STAGE_CZ - 1) / HCG_STAGE_CZ : 1;
    L->explicit_local = 1;
    break;
  }
  case GS_VECTOR:
  case GS_PLANES: {
    if (s->variant == GS_VECTOR) {
      /* vec cells per item from the multiple of vec at or below lo2 */
      const int64_t v = s->vec, a2 = k->lo[2] - k->lo[2] % v;
      L->global[0] = (size_t)((k->lo[2] + k->cnt[2] - a2 + v - 1) / v);
    }
    const size_t bx = (size_t)s->group[0], by = (size_t)s->group[1];
    L->local[0] = bx;
    L->local[1] = by;
    L->local[2] = 1;
    L->global[0] = round_up(L->global[0], bx);
    L->global[1] = round_up(L->global[1], by);
    if (rank == 3) L->global[2] = (L->global[2] + (size_t)s->planes - 1) / (size_t)s->planes;
    L->explicit_local = 1;
    break;
  }
  case GS_ROWS: L->global[0] = (L->global[0] + (size_t)s->unroll - 1) / (size_t)s->unroll; break;
  }
}

long gs_arg_long(const gk_t *k, const gs_arg_t *a, int zrev) {
  switch (a->val) {
  case GS_VAL_EXTENT: return (long)k->n[a->index];
  case GS_VAL_LO: return (long)k->lo[a->index];
  case GS_VAL_COUNT: return (long)k->cnt[a->index];
  case GS_VAL_CELLS: {
    size_t c[3];
    cell_range(k, c);
    return (long)((uint64_t)c[0] * c[1] * c[2]);
  }
  case GS_VAL_ZREV: return zrev;
  }
  return 0;
}
