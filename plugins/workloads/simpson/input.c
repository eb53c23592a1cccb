/* simpson: reading input= (.npy) — its header first, to refuse a bad file
 * before anything is allocated, then its data onto the device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "simpson.h"

#define NPY_MAX_HEADER ((size_t)1 << 20)

hc_status_t simpson_npy_peek(const char *path, hc_dtype_t *dtype, uint32_t *rank, int64_t *shape) {
  FILE *f = NULL;
  hc_status_t ost = hc_fopen_regular(path, &f);
  if (ost != HC_OK) return ost;
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    fclose(f);
    return hc_error(HC_ERR_IO, "cannot stat: %s", strerror(errno));
  }
  unsigned char pre[12];
  size_t got = fread(pre, 1, sizeof pre, f);
  if (got < 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return hc_error(HC_ERR_FORMAT, "not a .npy file (it does not start with the \\x93NUMPY magic)");
  }
  size_t total = pre[6] == 1
                     ? 10 + ((size_t)pre[8] | (size_t)pre[9] << 8)
                     : 12 + ((size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24);
  if (total > NPY_MAX_HEADER + 12) total = NPY_MAX_HEADER + 12; /* hc_npy_parse names the problem */
  unsigned char *buf = malloc(total > got ? total : got);
  if (!buf) {
    fclose(f);
    return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  }
  memcpy(buf, pre, got);
  if (total > got) got += fread(buf + got, 1, total - got, f);
  fclose(f);
  size_t offset = 0;
  hc_status_t s = hc_npy_parse(buf, got, dtype, rank, shape, &offset);
  free(buf);
  return s;
}

int simpson_grid_spacing(const char *path, uint32_t rank, double *h) {
  char side[4200];
  snprintf(side, sizeof side, "%s.grid", path);
  FILE *fp = NULL;
  if (hc_fopen_regular(side, &fp) != HC_OK) return 0; /* optional */
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, fp)) {
    if (strncmp(line, "spacing", 7) != 0) continue;
    double v[HC_MAX_DIMS];
    uint32_t n = 0;
    char *p = line + 7, *end;
    for (; n < HC_MAX_DIMS; p = end) {
      v[n] = strtod(p, &end);
      if (end == p) break;
      n++;
    }
    int ok = n == rank;
    for (uint32_t d = 0; ok && d < n; d++) ok = v[d] > 0;
    if (ok) {
      memcpy(h, v, rank * sizeof *h);
      found = 1;
    }
  }
  fclose(fp);
  return found;
}

hc_status_t simpson_load_file(hc_device_t *dev, const simpson_config_t *cfg, hc_field_t **out, double *transfer_s,
                              void **host_data) {
  *out = NULL;
  *transfer_s = 0;
  if (host_data) *host_data = NULL;
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[HC_MAX_DIMS];
  void *data = NULL;
  hc_status_t st = hc_npy_read(cfg->path, &dt, &rank, shape, &data);
  if (st != HC_OK) return hc_error_prefix(HC_ERR_PARAM, "input=%s: ", cfg->path);
  int same = dt == cfg->dtype && rank == cfg->rank;
  for (uint32_t d = 0; same && d < rank; d++) same = shape[d] == cfg->shape[d];
  if (!same) {
    free(data);
    return hc_error(HC_ERR_PARAM, "input=%s: the file changed while it was being read", cfg->path);
  }
  hc_field_t *f = NULL;
  if ((st = hc_field_create(dev, dt, rank, shape, &f)) != HC_OK) {
    free(data);
    return st;
  }
  double t0 = hc_now();
  st = hc_field_write(f, data);
  *transfer_s = hc_now() - t0;
  if (st != HC_OK) {
    free(data);
    hc_field_destroy(f);
    return st;
  }
  hc_field_set_spacing(f, cfg->h);
  if (host_data)
    *host_data = data;
  else
    free(data);
  *out = f;
  return HC_OK;
}
