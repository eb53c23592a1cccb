/* A part's input fields, placed on its device before its run: the part's
 * slab of each field split by rows (a slab split that asks for it,
 * hc_split_t.slab_inputs), a whole copy of the others; both taken from the
 * parts of the run that made the field where it has not been gathered yet
 * (split_run.c, a pipeline's stage on a set feeding the next). The thread that
 * starts the parts places them, one part after another, so that no part's
 * thread touches another part's device while that part runs on it (a run
 * holds its device's lock). */
#include <stdio.h>
#include <string.h>

#include "partition_internal.h"

/* Whether f is one of the split's row-divided fields (planning checked
 * that each has the split's rows: split_plan.c). */
static int split_by_rows(const split_plan_t *pl, const hc_field_t *f) {
  return pl->split.slab_inputs && hc_field_rank(f) >= 1 && hc_field_shape(f)[0] == pl->split.rows;
}

/* Rows [lo, hi) of f into out's first rows: from the rows' pieces where
 * f is a split run's output not gathered yet (each piece's rows straight
 * from the device that computed them), else from f. */
static hc_status_t copy_rows(hc_field_t *out, const hc_field_t *f, int64_t lo, int64_t hi, size_t row_bytes) {
  const uint32_t n = hc__field_piece_count(f);
  if (!n)
    return hc_buffer_copy(hc_field_buffer(out), 0, hc_field_buffer(f), (size_t)lo * row_bytes,
                          (size_t)(hi - lo) * row_bytes);
  hc_status_t st = HC_OK;
  for (uint32_t i = 0; i < n && st == HC_OK; i++) {
    int64_t plo = 0;
    const hc_field_t *piece = hc__field_piece(f, i, &plo);
    const int64_t phi = plo + hc_field_shape(piece)[0], a = plo > lo ? plo : lo, b = phi < hi ? phi : hi;
    if (a < b)
      st = hc_buffer_copy(hc_field_buffer(out), (size_t)(a - lo) * row_bytes, hc_field_buffer(piece),
                          (size_t)(a - plo) * row_bytes, (size_t)(b - a) * row_bytes);
  }
  return st;
}

/* Rows [lo, hi) of f as a new field on dev, spacing, origin and name kept
 * (the origin moves to row lo). */
static hc_status_t rows_to(const hc_field_t *f, int64_t lo, int64_t hi, hc_device_t *dev, hc_field_t **out) {
  const uint32_t rank = hc_field_rank(f);
  int64_t shape[HC_MAX_DIMS];
  memcpy(shape, hc_field_shape(f), rank * sizeof *shape);
  const size_t row_bytes = hc_field_bytes(f) / (size_t)(shape[0] ? shape[0] : 1);
  shape[0] = hi - lo;
  hc_status_t st = hc_field_create(dev, hc_field_dtype(f), rank, shape, out);
  if (st == HC_OK && hi > lo) st = copy_rows(*out, f, lo, hi, row_bytes);
  if (st != HC_OK) {
    hc_field_destroy(*out);
    *out = NULL;
    return st;
  }
  double origin[HC_MAX_DIMS];
  memcpy(origin, hc_field_origin(f), rank * sizeof *origin);
  origin[0] += (double)lo * hc_field_spacing(f)[0];
  hc_field_set_spacing(*out, hc_field_spacing(f));
  hc_field_set_origin(*out, origin);
  hc_field_set_name(*out, hc_field_name(f));
  return HC_OK;
}

hc_status_t hc__part_inputs_place(hc_job_t *job, const split_plan_t *pl, const hc_part_t *part, hc_device_t *dev,
                                  part_inputs_t *pi) {
  memset(pi, 0, sizeof *pi);
  hc_context_t *ctx = hc_job_context(job);
  const char *wl = hc_job_workload(job);
  const uint32_t nin = hc_workload_port_count(ctx, wl, 0);
  hc_status_t st = HC_OK;
  for (uint32_t i = 0; i < nin && st == HC_OK; i++) {
    const char *port = hc_workload_port(ctx, wl, 0, i)->name;
    hc_field_t *whole = hc_job_input(job, port), *mine = NULL;
    const int slab = whole && split_by_rows(pl, whole), pieces = hc__field_piece_count(whole) > 0;
    if (!whole || (!slab && !pieces && hc_field_device(whole) == dev)) continue;
    if (pi->n == PART_INPUTS_MAX) {
      st = hc_error(HC_ERR_INTERNAL, "split run: more than %d input fields", PART_INPUTS_MAX);
      break;
    }
    if (slab)
      st = rows_to(whole, part->lo - part->below, part->hi + part->above, dev, &mine);
    else if (pieces) /* a replicated split's whole input, from the pieces */
      st = rows_to(whole, 0, hc_field_shape(whole)[0], dev, &mine);
    else
      st = hc_field_copy_to(whole, dev, &mine);
    if (st == HC_OK) st = hc_job_set_input(job, port, mine);
    if (st != HC_OK) {
      hc_field_destroy(mine);
      hc_error_prefix(st, "split run: input %s for part %u on %s: ", port, part->index, hc_device_name(dev));
      break;
    }
    pi->port[pi->n] = i;
    pi->whole[pi->n] = whole;
    pi->mine[pi->n++] = mine;
  }
  if (st != HC_OK) hc__part_inputs_restore(job, pi);
  return st;
}

void hc__part_inputs_restore(hc_job_t *job, part_inputs_t *pi) {
  hc_context_t *ctx = hc_job_context(job);
  for (uint32_t k = 0; k < pi->n; k++) {
    (void)hc_job_set_input(job, hc_workload_port(ctx, hc_job_workload(job), 0, pi->port[k])->name, pi->whole[k]);
    hc_field_destroy(pi->mine[k]);
  }
  pi->n = 0;
}
