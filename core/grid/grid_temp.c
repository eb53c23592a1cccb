/* The grid's pool of temporaries: the fields materialised sub-expressions
 * are assigned to, kept across assignments and reused by dtype and shape. */
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

struct hcg_temp {
  hcg_temp_t *next;
  hc_field_t *field;
  int in_use;
};

hc_status_t hcg_temp_get(hc_grid_t *g, hc_dtype_t dt, uint32_t rank, const int64_t *shape, hc_field_t **out) {
  for (hcg_temp_t *t = g->temps; t; t = t->next) {
    if (t->in_use || hc_field_dtype(t->field) != dt || hc_field_rank(t->field) != rank) continue;
    if (memcmp(hc_field_shape(t->field), shape, rank * sizeof *shape)) continue;
    t->in_use = 1;
    *out = t->field;
    return HC_OK;
  }
  hcg_temp_t *t = calloc(1, sizeof *t);
  if (!t) return hc_error(HC_ERR_NO_MEMORY, "grid temporary: out of memory");
  hc_status_t st = hc_field_create(g->dev, dt, rank, shape, &t->field);
  if (st != HC_OK) {
    free(t);
    return hc_error_prefix(st, "grid temporary for a materialised sub-expression: ");
  }
  hc_field_set_name(t->field, "grid-temporary");
  t->in_use = 1;
  t->next = g->temps;
  g->temps = t;
  *out = t->field;
  return HC_OK;
}

void hcg_temp_put(hc_grid_t *g, hc_field_t *f) {
  for (hcg_temp_t *t = g->temps; t; t = t->next)
    if (t->field == f) t->in_use = 0;
}

void hcg_temps_free(hc_grid_t *g) {
  for (hcg_temp_t *t = g->temps, *n; t; t = n) {
    n = t->next;
    hc_field_destroy(t->field);
    free(t);
  }
  g->temps = NULL;
}
