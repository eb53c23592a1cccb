/* The grid's kernels by structural key: emitted, compiled (host C) or
 * built by the device on first use, then found again by every instance
 * with the same key; an entry also keeps the parameter buffer of a kernel
 * whose parameters do not fit its arguments. */
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

static void entry_free(gc_entry_t *e) {
  hc_kernel_destroy(e->kernel);
  hcg_cc_close(e->dl);
  hc_buffer_destroy(e->pbuf);
  free(e->pshadow);
  free(e->source);
  free(e->key);
  free(e);
}

void gc_free_all(hc_grid_t *g) {
  for (gc_entry_t *e = g->kernels, *n; e; e = n) {
    n = e->next;
    entry_free(e);
  }
  g->kernels = NULL;
  g->last_source = NULL;
}

static hc_status_t entry_build(hc_grid_t *g, const gk_t *k, gc_entry_t **out) {
  gc_entry_t *e = calloc(1, sizeof *e);
  if (!e) return hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
  hc_status_t st = HC_OK;
  if (!(e->key = strdup(k->key))) {
    st = hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
    goto fail;
  }
  if ((st = ge_emit(k, &e->source)) != HC_OK) goto fail;
  hc_kernel_desc_t d = {sizeof d, "hcg_kernel", NULL, NULL, NULL};
  if (k->lang == HC_LANG_HOST) {
    if ((st = hcg_cc_build(g, e->source, &d.host_fn, &e->dl)) != HC_OK) goto fail;
    g->stats.host_compiled++;
  } else {
    d.source = e->source;
  }
  if ((st = hc_kernel_create(g->dev, &d, &e->kernel)) != HC_OK) goto fail;
  if (k->sched.params_in_buffer) {
    e->pbytes = (k->nparams ? k->nparams : 1) * hc_dtype_size(k->plan->dtype);
    e->pshadow = calloc(1, e->pbytes);
    if (!e->pshadow) {
      st = hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
      goto fail;
    }
    if ((st = hc_buffer_create(g->dev, e->pbytes, &e->pbuf)) != HC_OK) goto fail;
    if ((st = hc_buffer_write(e->pbuf, 0, e->pshadow, e->pbytes)) != HC_OK) goto fail;
  }
  g->stats.kernels_built++;
  e->next = g->kernels;
  g->kernels = e;
  *out = e;
  return HC_OK;
fail:
  entry_free(e);
  return st;
}

hc_status_t gc_find(hc_grid_t *g, const gk_t *k, gc_entry_t **out) {
  for (gc_entry_t *e = g->kernels; e; e = e->next)
    if (!strcmp(e->key, k->key)) {
      g->stats.cache_hits++;
      *out = e;
      return HC_OK;
    }
  return entry_build(g, k, out);
}

/* Written only when the values changed: a loop that re-assigns one
 * expression pays no transfer. */
hc_status_t gc_params_write(gc_entry_t *e, const gk_t *k) {
  const int f64 = k->plan->dtype == HC_F64;
  const size_t bytes = k->nparams * (f64 ? 8 : 4);
  void *vals = malloc(e->pbytes);
  if (!vals) return hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
  for (uint32_t i = 0; i < k->nparams; i++) {
    if (f64)
      ((double *)vals)[i] = k->params[i];
    else
      ((float *)vals)[i] = (float)k->params[i];
  }
  hc_status_t st = HC_OK;
  if (memcmp(vals, e->pshadow, bytes)) {
    st = hc_buffer_write(e->pbuf, 0, vals, bytes);
    memcpy(e->pshadow, vals, bytes);
  }
  free(vals);
  return st;
}
