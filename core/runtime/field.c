/* Fields: typed n-D arrays on a device with spacing, origin and a name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Checks a field's description; *count gets its elements. */
static hc_status_t check_shape(const char *what, hc_dtype_t dtype, uint32_t rank, const int64_t *shape, size_t *count) {
  if (hc_dtype_size(dtype) == 0) return hc_error(HC_ERR_INVALID_ARG, "%s: unknown dtype %d", what, (int)dtype);
  if (rank > HC_MAX_DIMS) return hc_error(HC_ERR_INVALID_ARG, "%s: rank %u (at most %d)", what, rank, HC_MAX_DIMS);
  size_t n = 1;
  for (uint32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return hc_error(HC_ERR_INVALID_ARG, "%s: negative extent %lld", what, (long long)shape[i]);
    if (shape[i] && n > SIZE_MAX / 16 / (size_t)shape[i])
      return hc_error(HC_ERR_INVALID_ARG, "%s: shape too large", what);
    n *= (size_t)shape[i];
  }
  *count = n;
  return HC_OK;
}

hc_status_t hc__field_over(hc_buffer_t *buf, hc_dtype_t dtype, uint32_t rank, const int64_t *shape, hc_field_t **out) {
  hc_field_t *f = calloc(1, sizeof *f);
  if (!f) return hc_error(HC_ERR_NO_MEMORY, "out of memory for a field");
  f->buf = buf;
  f->dev = buf->dev;
  f->dtype = dtype;
  f->rank = rank;
  for (uint32_t i = 0; i < HC_MAX_DIMS; i++) {
    f->shape[i] = i < rank ? shape[i] : 1;
    f->spacing[i] = 1.0;
    f->origin[i] = 0.0;
  }
  *out = f;
  return HC_OK;
}

HC_API hc_status_t hc_field_create(hc_device_t *d, hc_dtype_t dtype, uint32_t rank, const int64_t *shape,
                                   hc_field_t **out) {
  if (!d || !out || (rank && !shape)) return hc_error(HC_ERR_INVALID_ARG, "hc_field_create: NULL argument");
  *out = NULL;
  size_t count = 0;
  hc_status_t st = check_shape("hc_field_create", dtype, rank, shape, &count);
  hc_buffer_t *buf = NULL;
  if (st == HC_OK) st = hc_buffer_create(d, count * hc_dtype_size(dtype), &buf);
  if (st == HC_OK && (st = hc__field_over(buf, dtype, rank, shape, out)) != HC_OK) hc_buffer_destroy(buf);
  return st;
}

HC_API hc_status_t hc_field_wrap(hc_device_t *d, hc_dtype_t dtype, uint32_t rank, const int64_t *shape,
                                 const hc_native_mem_t *mem, hc_field_t **out) {
  if (!d || !out || !mem || (rank && !shape)) return hc_error(HC_ERR_INVALID_ARG, "hc_field_wrap: NULL argument");
  *out = NULL;
  size_t count = 0;
  hc_status_t st = check_shape("hc_field_wrap", dtype, rank, shape, &count);
  hc_buffer_t *buf = NULL;
  if (st == HC_OK) st = hc_buffer_wrap(d, mem, count ? count * hc_dtype_size(dtype) : 1, &buf);
  if (st == HC_OK && (st = hc__field_over(buf, dtype, rank, shape, out)) != HC_OK) hc_buffer_destroy(buf);
  return st;
}

struct hc__field_pieces {
  uint32_t n;
  hc_field_t **f;
  int64_t *lo;
  /* A reference to each piece's device, held as long as the piece: the
   * set that ran the parts may close its devices before the field is
   * used. */
  hc_device_t **dev;
};

static void free_pieces(struct hc__field_pieces *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->n; i++) {
    hc_field_destroy(p->f[i]);
    hc_device_close(p->dev[i]);
  }
  free(p->f);
  free(p->lo);
  free(p->dev);
  free(p);
}

static void drop_pieces(hc_field_t *f) {
  free_pieces(f->pieces);
  f->pieces = NULL;
}

/* The pieces' rows into the field's buffer, once: then it is an ordinary
 * field. On failure the pieces stay (a later use tries again). */
static hc_status_t settle(const hc_field_t *cf) {
  hc_field_t *f = (hc_field_t *)cf; /* its contents, not its value, change */
  const struct hc__field_pieces *p = f->pieces;
  if (!p) return HC_OK;
  const size_t row = f->shape[0] ? hc_field_bytes(f) / (size_t)f->shape[0] : 0;
  for (uint32_t i = 0; i < p->n; i++) {
    hc_status_t st = hc_buffer_copy(f->buf, (size_t)p->lo[i] * row, p->f[i]->buf, 0, hc_field_bytes(p->f[i]));
    if (st != HC_OK) return hc_error_prefix(st, "gathering the parts' rows of field '%s': ", f->name);
  }
  drop_pieces(f);
  return HC_OK;
}

hc_status_t hc__field_of_pieces(hc_device_t *dev, hc_dtype_t dtype, uint32_t rank, const int64_t *shape,
                                hc_field_t **pieces, const int64_t *lo, uint32_t n, hc_field_t **out) {
  *out = NULL;
  struct hc__field_pieces *p = calloc(1, sizeof *p);
  hc_status_t st = p ? HC_OK : hc_error(HC_ERR_NO_MEMORY, "out of memory for a field");
  if (st == HC_OK) {
    p->f = calloc(n + 1, sizeof *p->f);
    p->lo = calloc(n + 1, sizeof *p->lo);
    p->dev = calloc(n + 1, sizeof *p->dev);
    if (!p->f || !p->lo || !p->dev) st = hc_error(HC_ERR_NO_MEMORY, "out of memory for a field");
  }
  /* Taken over from here on, whatever happens. */
  for (uint32_t i = 0; i < n && p && p->f && p->lo && p->dev; i++, p->n++) {
    p->f[i] = pieces[i];
    p->lo[i] = lo[i];
    if (st == HC_OK) st = hc_device_open(pieces[i]->dev->ctx, pieces[i]->dev->index, &p->dev[i]);
  }
  if (st == HC_OK) st = hc_field_create(dev, dtype, rank, shape, out);
  if (st != HC_OK) {
    if (!p || !p->f || !p->lo || !p->dev)
      for (uint32_t i = 0; i < n; i++) hc_field_destroy(pieces[i]);
    free_pieces(p);
    return st;
  }
  (*out)->pieces = p;
  return HC_OK;
}

uint32_t hc__field_piece_count(const hc_field_t *f) { return f && f->pieces ? f->pieces->n : 0; }

const hc_field_t *hc__field_piece(const hc_field_t *f, uint32_t i, int64_t *lo) {
  if (i >= hc__field_piece_count(f)) return NULL;
  *lo = f->pieces->lo[i];
  return f->pieces->f[i];
}

HC_API void hc_field_destroy(hc_field_t *f) {
  if (!f) return;
  drop_pieces(f);
  hc_buffer_destroy(f->buf);
  free(f);
}

HC_API hc_dtype_t hc_field_dtype(const hc_field_t *f) { return f ? f->dtype : HC_DTYPE_NONE; }
HC_API uint32_t hc_field_rank(const hc_field_t *f) { return f ? f->rank : 0; }
HC_API const int64_t *hc_field_shape(const hc_field_t *f) { return f ? f->shape : NULL; }
HC_API size_t hc_field_count(const hc_field_t *f) {
  if (!f) return 0;
  size_t n = 1;
  for (uint32_t i = 0; i < f->rank; i++) n *= (size_t)f->shape[i];
  return n;
}
HC_API size_t hc_field_bytes(const hc_field_t *f) { return hc_field_count(f) * hc_dtype_size(hc_field_dtype(f)); }
HC_API hc_buffer_t *hc_field_buffer(const hc_field_t *f) { return f && settle(f) == HC_OK ? f->buf : NULL; }
HC_API hc_device_t *hc_field_device(const hc_field_t *f) { return f ? f->dev : NULL; }
HC_API const double *hc_field_spacing(const hc_field_t *f) { return f ? f->spacing : NULL; }
HC_API const double *hc_field_origin(const hc_field_t *f) { return f ? f->origin : NULL; }
HC_API void hc_field_set_spacing(hc_field_t *f, const double *h) {
  if (f && h) memcpy(f->spacing, h, f->rank * sizeof *h);
}
HC_API void hc_field_set_origin(hc_field_t *f, const double *o) {
  if (f && o) memcpy(f->origin, o, f->rank * sizeof *o);
}
HC_API const char *hc_field_name(const hc_field_t *f) { return f ? f->name : ""; }
HC_API void hc_field_set_name(hc_field_t *f, const char *name) {
  if (f) snprintf(f->name, sizeof f->name, "%s", name ? name : "");
}

HC_API hc_status_t hc_field_read(const hc_field_t *f, void *host) {
  if (!f) return hc_error(HC_ERR_INVALID_ARG, "hc_field_read: NULL field");
  hc_status_t st = settle(f);
  return st == HC_OK ? hc_buffer_read(f->buf, 0, host, hc_field_bytes(f)) : st;
}

HC_API hc_status_t hc_field_write(hc_field_t *f, const void *host) {
  if (!f) return hc_error(HC_ERR_INVALID_ARG, "hc_field_write: NULL field");
  hc_status_t st = hc_buffer_write(f->buf, 0, host, hc_field_bytes(f));
  if (st == HC_OK) drop_pieces(f); /* every row written: the parts' are no longer its */
  return st;
}

HC_API hc_status_t hc_field_copy_to(const hc_field_t *f, hc_device_t *d, hc_field_t **out) {
  if (!f || !d || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_field_copy_to: NULL argument");
  hc_field_t *g = NULL;
  hc_status_t st = settle(f);
  if (st == HC_OK) st = hc_field_create(d, f->dtype, f->rank, f->shape, &g);
  if (st != HC_OK) return st;
  st = hc_buffer_copy(g->buf, 0, f->buf, 0, hc_field_bytes(f));
  if (st != HC_OK) {
    hc_field_destroy(g);
    return st;
  }
  memcpy(g->spacing, f->spacing, sizeof g->spacing);
  memcpy(g->origin, f->origin, sizeof g->origin);
  memcpy(g->name, f->name, sizeof g->name);
  *out = g;
  return HC_OK;
}

/* "<path>.grid": lines "spacing h..." and "origin o..." (optional). */
static void read_grid_sidecar(hc_field_t *f, const char *path) {
  char side[4200];
  snprintf(side, sizeof side, "%s.grid", path);
  FILE *fp = NULL;
  if (hc_fopen_regular(side, &fp) != HC_OK) { /* optional: absent or unusable, no grid */
    hc_error(HC_OK, "%s", "");
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, fp)) {
    double *dst = !strncmp(line, "spacing", 7) ? f->spacing : !strncmp(line, "origin", 6) ? f->origin : NULL;
    if (!dst) continue;
    char *p = line + (dst == f->spacing ? 7 : 6);
    double v[HC_MAX_DIMS];
    uint32_t n = 0;
    for (char *end; n < HC_MAX_DIMS; p = end) {
      v[n] = strtod(p, &end);
      if (end == p) break;
      n++;
    }
    if (n == f->rank && (dst != f->spacing || (v[0] > 0 && (n < 2 || v[1] > 0) && (n < 3 || v[2] > 0))))
      memcpy(dst, v, n * sizeof *v);
  }
  fclose(fp);
}

HC_API hc_status_t hc_field_load_npy(hc_device_t *d, const char *path, hc_field_t **out) {
  if (!d || !path || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_field_load_npy: NULL argument");
  *out = NULL;
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[HC_MAX_DIMS];
  void *data = NULL;
  hc_status_t st = hc_npy_read(path, &dt, &rank, shape, &data);
  if (st != HC_OK) return st;
  hc_field_t *f = NULL;
  st = hc_field_create(d, dt, rank, shape, &f);
  if (st == HC_OK) st = hc_field_write(f, data);
  free(data);
  if (st != HC_OK) {
    hc_field_destroy(f);
    return st;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(f->name, sizeof f->name, "%.*s", (int)(strcspn(base, ".")), base);
  read_grid_sidecar(f, path);
  *out = f;
  return HC_OK;
}

static hc_status_t save_npy(const hc_field_t *f, const char *path);

HC_API hc_status_t hc_field_save_npy(const hc_field_t *f, const char *path) {
  if (!f || !path) return hc_error(HC_ERR_INVALID_ARG, "hc_field_save_npy: NULL argument");
  hc__trace_t *tr = hc__trace_enter(f->dev->ctx);
  const double t0 = tr ? hc_now() : 0;
  hc_status_t st = save_npy(f, path);
  if (tr) {
    const char *base = strrchr(path, '/');
    char what[96];
    snprintf(what, sizeof what, "write %s", base ? base + 1 : path);
    hc__trace_host(tr, HC__TRACE_OUTPUT, what, t0, "status", hc_status_name(st));
    hc__trace_leave(tr);
  }
  return st;
}

static hc_status_t save_npy(const hc_field_t *f, const char *path) {
  size_t bytes = hc_field_bytes(f);
  hc_status_t settled = settle(f);
  if (settled != HC_OK) return settled;
  void *host = hc_buffer_host_ptr(f->buf);
  void *tmp = NULL;
  if (!host) {
    tmp = malloc(bytes ? bytes : 1);
    if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", path, bytes);
    hc_status_t st = hc_field_read(f, tmp);
    if (st != HC_OK) {
      free(tmp);
      return st;
    }
    host = tmp;
  }
  hc_status_t st = hc_npy_write(path, f->dtype, f->rank, f->shape, host);
  free(tmp);
  return st != HC_OK ? st : hc__field_save_sidecar(f, path);
}

hc_status_t hc__field_save_sidecar(const hc_field_t *f, const char *path) {
  int trivial = 1;
  for (uint32_t i = 0; i < f->rank; i++) trivial &= f->spacing[i] == 1.0 && f->origin[i] == 0.0;
  char side[4200];
  snprintf(side, sizeof side, "%s.grid", path);
  if (trivial) {
    remove(side);
    return HC_OK;
  }
  char text[512];
  int n = snprintf(text, sizeof text, "spacing");
  for (uint32_t i = 0; i < f->rank; i++) n += snprintf(text + n, sizeof text - (size_t)n, " %.17g", f->spacing[i]);
  n += snprintf(text + n, sizeof text - (size_t)n, "\norigin");
  for (uint32_t i = 0; i < f->rank; i++) n += snprintf(text + n, sizeof text - (size_t)n, " %.17g", f->origin[i]);
  n += snprintf(text + n, sizeof text - (size_t)n, "\n");
  return hc_write_file_atomic(side, text, (size_t)n);
}
