/* Kernel instances: one kernel of an assignment (its root, or a
 * materialised sub-expression) with its own numbering of fields and
 * parameters, and its structural key — node kinds, levels relative to the
 * kernel, stencil offsets, which fields alias, the language and the
 * variant; never the values (parameters), extents or the box, which are
 * kernel arguments. */
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

int gk_is_leaf(const gk_t *k, const gp_node_t *n) { return n->kind == GX_DENSE || (n->materialise && n != k->root); }

static int collect(gk_t *k, gp_node_t *n) {
  if (k->local[n->id] >= 0) return 1;
  if (!gk_is_leaf(k, n)) {
    if (n->a && !collect(k, n->a)) return 0;
    if (n->b && !collect(k, n->b)) return 0;
  }
  k->local[n->id] = (int32_t)k->nnodes;
  k->nodes[k->nnodes++] = n;
  return 1;
}

void gk_free(gk_t *k) {
  if (!k) return;
  free(k->nodes);
  free(k->local);
  free(k->slot);
  free(k->lparam0);
  free(k->params);
  free(k->cls);
  free(k->cls0);
  free(k->ncls);
  free(k->key);
  memset(k, 0, sizeof *k);
}

static int build_key(gk_t *k) {
  char *b = NULL;
  size_t len = 0, cap = 0;
  int ok = hcg_append(&b, &len, &cap, "hcg1|%s|%s|op%d|%s|r%u|par%u|idx%d|", hc_language_name(k->lang),
                      k->mode == GK_ASSIGN ? "assign" : "reduce", (int)k->op, hc_dtype_name(k->plan->dtype),
                      k->plan->rank, k->parity, k->idx64) &&
           gs_schedule_key(&k->sched, &b, &len, &cap) &&
           hcg_append(&b, &len, &cap, "|ev%d|st%d|nf%u|np%u|", k->host_eval, k->staged, k->nfields, k->nparams);
  for (uint32_t i = 0; ok && i < k->nnodes; i++) {
    const gp_node_t *n = k->nodes[i];
    int leaf = gk_is_leaf(k, n);
    ok = hcg_append(&b, &len, &cap, "%d:%d:%d:%d", leaf ? (int)GX_DENSE : (int)n->kind, n->level - k->base_level,
                    n->a && !leaf ? k->local[n->a->id] : -1, n->b && !leaf ? k->local[n->b->id] : -1);
    if (!ok) break;
    if (leaf)
      ok = hcg_append(&b, &len, &cap, ":s%d", k->slot[n->id]);
    else if (n->kind == GX_STENCIL) {
      const gx_stencil_t *st = n->src->st;
      ok = hcg_append(&b, &len, &cap, ":n%u", st->n);
      for (uint32_t p = 0; ok && p < st->n; p++) {
        for (uint32_t d = 0; ok && d < st->rank; d++)
          ok = hcg_append(&b, &len, &cap, "%c%d", d ? ',' : '/', st->off[p][d]);
        if (ok) ok = hcg_append(&b, &len, &cap, "c%d", k->cls[k->cls0[n->id] + p]);
      }
    } else if (n->kind == GX_FUNC) {
      ok = hcg_append(&b, &len, &cap, ":f%u.%u", n->src->fn.kind, n->src->fn.axis);
      if (ok && n->src->fn.kind == HC_GFUNC_USER)
        ok = hcg_append(&b, &len, &cap, ":u%zu:", n->src->source ? strlen(n->src->source) : 0) &&
             (!n->src->source || hcg_append(&b, &len, &cap, "%s", n->src->source));
    }
    if (ok && n->staged && k->staged) ok = hcg_append(&b, &len, &cap, ":T");
    if (ok) ok = hcg_append(&b, &len, &cap, ";");
  }
  if (!ok) {
    free(b);
    return 0;
  }
  k->key = b;
  return 1;
}

hc_status_t gk_build(gk_t *k, gp_plan_t *p, gp_node_t *root, hc_field_t *dst, const int64_t *lo, const int64_t *cnt,
                     uint32_t parity, gk_mode_t mode, hc_grid_reduce_op_t op, hc_language_t lang, int host_eval) {
  memset(k, 0, sizeof *k);
  k->plan = p;
  k->root = root;
  k->base_level = root->level;
  k->dst = dst;
  k->mode = mode;
  k->op = op;
  k->lang = lang;
  k->host_eval = host_eval;
  k->parity = parity;
  memcpy(k->lo, lo, sizeof k->lo);
  memcpy(k->cnt, cnt, sizeof k->cnt);
  gp_level_extents(p, root->level, k->n);
  k->nodes = malloc(p->nnodes * sizeof *k->nodes);
  k->local = malloc(p->nnodes * sizeof *k->local);
  k->slot = malloc(p->nnodes * sizeof *k->slot);
  k->lparam0 = calloc(p->nnodes, sizeof *k->lparam0);
  k->params = malloc((p->nparams ? p->nparams : 1) * sizeof *k->params);
  k->cls = malloc((p->nparams ? p->nparams : 1) * sizeof *k->cls);
  k->cls0 = calloc(p->nnodes, sizeof *k->cls0);
  k->ncls = calloc(p->nnodes, sizeof *k->ncls);
  if (!k->nodes || !k->local || !k->slot || !k->lparam0 || !k->params || !k->cls || !k->cls0 || !k->ncls) {
    gk_free(k);
    return hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
  }
  for (uint32_t i = 0; i < p->nnodes; i++) k->local[i] = k->slot[i] = -1;
  collect(k, root);
  /* fields: slot 0 is the assigned field (also when it is read) */
  k->fields[0] = dst;
  k->nfields = 1;
  int64_t maxcells = 1;
  for (uint32_t i = 0; i < k->nnodes; i++) {
    gp_node_t *n = k->nodes[i];
    if (!gk_is_leaf(k, n)) continue;
    hc_field_t *f = n->field;
    uint32_t s = 0;
    if (!(dst && f == dst)) {
      for (s = 1; s < k->nfields; s++)
        if (k->fields[s] == f) break;
      if (s == k->nfields) {
        if (k->nfields > HCG_MAX_FIELDS) {
          gk_free(k);
          return hc_error(HC_ERR_INVALID_ARG, "grid expression reads more than %d distinct fields in one kernel",
                          HCG_MAX_FIELDS);
        }
        k->fields[k->nfields++] = f;
      }
    }
    k->slot[n->id] = (int32_t)s;
  }
  /* parameters, in the kernel's post-order; a stencil's by class */
  uint32_t ncl = 0;
  for (uint32_t i = 0; i < k->nnodes; i++) {
    gp_node_t *n = k->nodes[i];
    if (gk_is_leaf(k, n) || !n->nparam) continue;
    k->lparam0[n->id] = k->nparams;
    const double *v = p->params + n->param0;
    if (n->kind == GX_STENCIL) {
      uint32_t nc = 0;
      k->cls0[n->id] = ncl;
      for (uint32_t q = 0; q < n->nparam; q++) {
        int32_t c = -1;
        if (v[q] != 0) {
          for (uint32_t r = 0; r < q && c < 0; r++)
            if (v[r] == v[q]) c = k->cls[ncl + r];
          if (c < 0) {
            c = (int32_t)nc++;
            k->params[k->nparams + (uint32_t)c] = v[q];
          }
        }
        k->cls[ncl + q] = c;
      }
      ncl += n->nparam;
      k->ncls[n->id] = nc;
      k->nparams += nc;
    } else {
      memcpy(k->params + k->nparams, v, n->nparam * sizeof(double));
      k->nparams += n->nparam;
    }
  }
  for (int l = p->min_level; l <= p->max_level; l++) {
    int64_t e[3];
    gp_level_extents(p, l, e);
    int64_t c = e[0] * e[1] * e[2];
    if (c > maxcells) maxcells = c;
  }
  k->idx64 = lang == HC_LANG_HOST || maxcells >= (INT64_C(1) << 31) - 64;
  if (!host_eval && mode == GK_ASSIGN && parity == HC_GRID_ALL && root == p->root)
    for (uint32_t i = 0; i < k->nnodes; i++)
      if (k->nodes[i]->staged && !gk_is_leaf(k, k->nodes[i]) && k->nodes[i] != root) k->staged = 1;
  hc_status_t st = gs_schedule_build(k);
  if (st != HC_OK) {
    gk_free(k);
    return st;
  }
  if (!build_key(k)) {
    gk_free(k);
    return hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
  }
  return HC_OK;
}
