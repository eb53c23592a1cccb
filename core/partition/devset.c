/* Device sets: parsing "cuda:0,cpu:0" / "all", weights, and what the last
 * split run reported. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

/* The length of a device id's backend part ("opencl" of "opencl:1"). */
static size_t backend_len(const char *id) { return strcspn(id, ":"); }

int hc__shared_hardware(hc_context_t *ctx, uint32_t a, uint32_t b, char *what, size_t n) {
  hc_device_info_t ia, ib;
  if (a == b || hc_device_query(ctx, a, &ia) != HC_OK || hc_device_query(ctx, b, &ib) != HC_OK) return 0;
  const char *na = hc_device_id(ctx, a), *nb = hc_device_id(ctx, b);
  const char *pa = hc_device_pci_bus_id(ctx, a), *pb = hc_device_pci_bus_id(ctx, b);
  if (pa && pb && pa[0] && !strcmp(pa, pb)) {
    snprintf(what, n, "one device (PCI %s)", pa);
    return 1;
  }
  /* One backend's cpu devices have cores of their own (HC_CPU_DEVICES);
   * two backends' both run on all of the host's. */
  if (ia.type == HC_DEVICE_CPU && ib.type == HC_DEVICE_CPU &&
      (backend_len(na) != backend_len(nb) || strncmp(na, nb, backend_len(na)))) {
    snprintf(what, n, "the host's cores");
    return 1;
  }
  return 0;
}

static hc_status_t add_device(hc_devset_t *s, uint32_t index, const char *spec, const char *workload) {
  for (uint32_t i = 0; i < s->n; i++)
    if (hc_device_index(s->dev[i]) == index)
      return hc_error(HC_ERR_PARAM, "device set '%s': %s is listed twice", spec, hc_device_id(s->ctx, index));
  if (s->n == HC_DEVSET_MAX)
    return hc_error(HC_ERR_PARAM, "device set '%s': more than %d devices", spec, HC_DEVSET_MAX);
  const char *why = NULL;
  if (workload && !hc_workload_can_run(s->ctx, workload, index, &why))
    return hc_error(HC_ERR_PARAM, "device set '%s': workload '%s' cannot run on %s: %s", spec, workload,
                    hc_device_id(s->ctx, index), why ? why : "unknown reason");
  hc_status_t st = hc_device_open(s->ctx, index, &s->dev[s->n]);
  if (st == HC_OK) s->n++;
  return st;
}

static hc_devset_t *devset_new(hc_context_t *ctx) {
  hc_devset_t *s = calloc(1, sizeof *s);
  if (s) s->ctx = ctx;
  return s;
}

HC_API hc_status_t hc_devset_parse(hc_context_t *ctx, const char *spec, const char *workload, hc_devset_t **out) {
  if (!ctx || !spec || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_parse: NULL argument");
  *out = NULL;
  hc_devset_t *s = devset_new(ctx);
  if (!s) return hc_error(HC_ERR_NO_MEMORY, "out of host memory");
  hc_status_t st = HC_OK;
  if (!strcmp(spec, "all")) {
    /* Each piece of hardware once: a GPU that two backends show (CUDA and
     * OpenCL) through the first, the host's cores through the first
     * backend that has cpu devices. */
    for (uint32_t i = 0; i < hc_device_count(ctx) && st == HC_OK && s->n < HC_DEVSET_MAX; i++) {
      char what[64];
      int taken = 0;
      for (uint32_t k = 0; k < s->n && !taken; k++)
        taken = hc__shared_hardware(ctx, hc_device_index(s->dev[k]), i, what, sizeof what);
      if (!taken && (!workload || hc_workload_can_run(ctx, workload, i, NULL))) st = add_device(s, i, spec, NULL);
    }
    if (st == HC_OK && !s->n)
      st = hc_error(HC_ERR_PARAM, "device set 'all': no device can run %s%s", workload ? "workload " : "anything",
                    workload ? workload : "");
  } else {
    const char *p = spec;
    while (st == HC_OK) {
      size_t len = strcspn(p, ",");
      char tok[64];
      while (len && isspace((unsigned char)*p)) p++, len--;
      while (len && isspace((unsigned char)p[len - 1])) len--;
      if (!len || len >= sizeof tok) {
        st = hc_error(HC_ERR_PARAM, "device set '%s': %s", spec,
                      len ? "a device name is too long" : "an empty device name");
        break;
      }
      memcpy(tok, p, len);
      tok[len] = '\0';
      uint32_t idx;
      if (hc_device_find(ctx, tok, &idx) != HC_OK) {
        st = hc_error_prefix(HC_ERR_PARAM, "device set '%s': unknown device '%s': ", spec, tok);
        break;
      }
      st = add_device(s, idx, spec, workload);
      p += strcspn(p, ",");
      if (!*p) break;
      p++;
    }
  }
  if (st != HC_OK) {
    hc_devset_destroy(s);
    return st;
  }
  *out = s;
  return HC_OK;
}

HC_API hc_status_t hc_devset_create(hc_context_t *ctx, hc_device_t *const *devices, uint32_t n, hc_devset_t **out) {
  if (!ctx || !devices || !out || !n) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_create: NULL or empty argument");
  *out = NULL;
  hc_devset_t *s = devset_new(ctx);
  if (!s) return hc_error(HC_ERR_NO_MEMORY, "out of host memory");
  hc_status_t st = HC_OK;
  for (uint32_t i = 0; i < n && st == HC_OK; i++)
    st = devices[i] ? add_device(s, hc_device_index(devices[i]), "(devices)", NULL)
                    : hc_error(HC_ERR_INVALID_ARG, "hc_devset_create: device %u is NULL", i);
  if (st != HC_OK) {
    hc_devset_destroy(s);
    return st;
  }
  *out = s;
  return HC_OK;
}

HC_API void hc_devset_destroy(hc_devset_t *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->n; i++) hc_device_close(s->dev[i]);
  free(s->weight);
  free(s->stats);
  hc__devset_forget_outputs(s);
  free(s);
}

uint32_t hc__devset_part_count(const hc_devset_t *s) { return s->tr ? s->tr->ops->count(s->tr) : s->n; }

HC_API hc_status_t hc_devset_set_transport(hc_devset_t *s, hc_transport_t *t) {
  if (!s) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_set_transport: NULL set");
  /* Every member up to the optional write_file is required. */
  if (t && (!t->ops || t->ops->size < offsetof(hc_transport_ops_t, write_file) || !t->ops->count || !t->ops->self ||
            !t->ops->agree || !t->ops->gather))
    return hc_error(HC_ERR_INVALID_ARG, "hc_devset_set_transport: the transport's ops table is incomplete");
  if (t && t->ops->self(t) == HC_TRANSPORT_ALL)
    return hc_error(HC_ERR_INVALID_ARG, "hc_devset_set_transport: transport '%s' runs every part in this process",
                    t->ops->name);
  s->tr = t;
  return hc_devset_set_weights(s, NULL, 0);
}

HC_API hc_status_t hc_devset_set_weights(hc_devset_t *s, const double *w, uint32_t n) {
  if (!s) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_set_weights: NULL set");
  free(s->weight);
  s->weight = NULL;
  s->nweights = 0;
  s->auto_shares = 0;
  if (!w) return HC_OK;
  uint32_t parts = hc__devset_part_count(s);
  if (n != parts) return hc_error(HC_ERR_PARAM, "split: %u weights for %u %s", n, parts, s->tr ? "parts" : "devices");
  for (uint32_t i = 0; i < n; i++)
    if (!(w[i] > 0) || w[i] > 1e12) return hc_error(HC_ERR_PARAM, "split: weight %u is %g (must be > 0)", i, w[i]);
  if (!(s->weight = malloc(n * sizeof *w))) return hc_error(HC_ERR_NO_MEMORY, "split: out of host memory");
  memcpy(s->weight, w, n * sizeof *w);
  s->nweights = n;
  return HC_OK;
}

HC_API hc_status_t hc_devset_parse_weights(hc_devset_t *s, const char *text) {
  if (!s || !text) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_parse_weights: NULL argument");
  if (!strcmp(text, "auto")) {
    hc_status_t st = hc_devset_set_weights(s, NULL, 0);
    s->auto_shares = 1; /* over a transport: split_ranks.c rank_shares */
    return st;
  }
  if (!strcmp(text, "equal")) return hc_devset_set_weights(s, NULL, 0);
  uint32_t cap = 1, n = 0;
  for (const char *c = text; *c; c++) cap += *c == ',';
  double *w = malloc(cap * sizeof *w);
  if (!w) return hc_error(HC_ERR_NO_MEMORY, "split: out of host memory");
  const char *p = text;
  hc_status_t st = HC_OK;
  for (;;) {
    char *end = NULL;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || errno || (*end && *end != ',')) {
      st = hc_error(HC_ERR_PARAM, "split '%s': expected weights like 0.8,0.2, auto or equal", text);
      break;
    }
    w[n++] = v;
    if (!*end) break;
    p = end + 1;
  }
  if (st == HC_OK) st = hc_devset_set_weights(s, w, n);
  free(w);
  return st;
}

HC_API uint32_t hc_devset_count(const hc_devset_t *s) { return s ? s->n : 0; }
HC_API hc_device_t *hc_devset_device(const hc_devset_t *s, uint32_t i) { return s && i < s->n ? s->dev[i] : NULL; }
HC_API uint32_t hc_devset_parts(const hc_devset_t *s) { return s ? s->nparts : 0; }
HC_API const char *hc_devset_plan(const hc_devset_t *s) { return s ? s->plan : ""; }

HC_API double hc_devset_best_single(const hc_devset_t *s, const char **device) {
  if (device) *device = s ? s->best_single : "no device set";
  return s && s->nparts > 1 ? s->best_single_s : -1;
}

HC_API hc_status_t hc_devset_part_stats(const hc_devset_t *s, uint32_t i, hc_part_stats_t *out) {
  if (!s || !out || i >= s->nparts) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_part_stats: no part %u", i);
  uint32_t size = out->size && out->size < sizeof *out ? out->size : (uint32_t)sizeof *out;
  memcpy(out, &s->stats[i], size);
  out->size = size;
  return HC_OK;
}
