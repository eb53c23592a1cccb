/* NumPy .npy files: format 1.0, 2.0 and 3.0; little-endian; C order; the
 * dtypes of HC_DTYPE_LIST. Everything else is a clear HC_ERR_FORMAT. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER (1u << 20)

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* Parses a quoted string ('...' or "..."), copying into out. */
static const char *parse_str(const char *p, const char *end, char *out, size_t n) {
  if (p >= end || (*p != '\'' && *p != '"')) return NULL;
  char q = *p++;
  size_t i = 0;
  while (p < end && *p != q) {
    if (i + 1 < n) out[i++] = *p;
    p++;
  }
  if (p >= end) return NULL;
  out[i] = '\0';
  return p + 1;
}

static hc_status_t fmt_err(const char *what, const char *detail) {
  return hc_error(HC_ERR_FORMAT, "%s: %s", what, detail);
}

static hc_dtype_t dtype_from_descr(const char *d, const char **why) {
#define HC_DESCR_ROW_(e, n, b, descr, c) \
  if (!strcmp(d, descr)) return HC_##e;
  HC_DTYPE_LIST(HC_DESCR_ROW_)
#undef HC_DESCR_ROW_
  if (d[0] == '>')
    *why = "big-endian data is not supported (convert with arr.astype('<f8'))";
  else if (strchr(d, 'i') || strchr(d, 'u') || strchr(d, 'b'))
    *why = "integer or boolean dtype is not supported (hc fields are f32, f64, c64 or c128)";
  else if (!strcmp(d, "<f2") || !strcmp(d, "<f16") || !strcmp(d, "<c32"))
    *why = "this float width is not supported (hc fields are f32, f64, c64 or c128)";
  else
    *why = "unsupported dtype (hc fields are f32, f64, c64 or c128)";
  return HC_DTYPE_NONE;
}

HC_API hc_status_t hc_npy_parse(const void *bytes, size_t size, hc_dtype_t *dtype, uint32_t *rank, int64_t *shape,
                                size_t *data_offset) {
  const char *what = "npy";
  const unsigned char *b = bytes;
  if (!bytes || size < 10 || memcmp(b, NPY_MAGIC, 6) != 0)
    return fmt_err(what, "not a .npy file (missing \\x93NUMPY magic)");
  unsigned major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)b[8] | ((size_t)b[9] << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return fmt_err(what, "truncated header");
    hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
    hstart = 12;
  } else {
    char m[96];
    snprintf(m, sizeof m, "unsupported format version %u.%u (1.0, 2.0, 3.0 are)", major, b[7]);
    return fmt_err(what, m);
  }
  if (hlen > NPY_MAX_HEADER) return fmt_err(what, "header longer than 1 MiB");
  if (hstart + hlen > size) return fmt_err(what, "truncated header");
  const char *p = (const char *)b + hstart, *end = p + hlen;
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  char descr[32] = "";
  uint32_t r = 0;
  int64_t dims[HC_MAX_DIMS + 1];
  p = skip_ws(p, end);
  if (p >= end || *p++ != '{') return fmt_err(what, "header is not a Python dict");
  for (;;) {
    p = skip_ws(p, end);
    if (p < end && *p == '}') break;
    char key[32];
    p = parse_str(p, end, key, sizeof key);
    if (!p) return fmt_err(what, "malformed header key");
    p = skip_ws(p, end);
    if (p >= end || *p++ != ':') return fmt_err(what, "malformed header (expected ':')");
    p = skip_ws(p, end);
    if (!strcmp(key, "descr")) {
      p = parse_str(p, end, descr, sizeof descr);
      if (!p) return fmt_err(what, "malformed 'descr' (structured dtypes are not supported)");
      have_descr = 1;
    } else if (!strcmp(key, "fortran_order")) {
      fortran = 0; /* a repeated key: the last one counts, as in NumPy (a Python dict literal) */
      if (end - p >= 4 && !strncmp(p, "True", 4))
        fortran = 1, p += 4;
      else if (end - p >= 5 && !strncmp(p, "False", 5))
        p += 5;
      else
        return fmt_err(what, "malformed 'fortran_order'");
      have_order = 1;
    } else if (!strcmp(key, "shape")) {
      r = 0; /* a repeated key: the last one counts, as in NumPy (a Python dict literal) */
      if (p >= end || *p++ != '(') return fmt_err(what, "malformed 'shape'");
      for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == ')') {
          p++;
          break;
        }
        if (p >= end || !isdigit((unsigned char)*p)) return fmt_err(what, "malformed 'shape'");
        int64_t v = 0;
        while (p < end && isdigit((unsigned char)*p)) {
          if (v > (INT64_MAX - 9) / 10) return fmt_err(what, "shape extent too large");
          v = v * 10 + (*p++ - '0');
        }
        while (p < end && (*p == 'L')) p++;
        if (r > HC_MAX_DIMS) return fmt_err(what, "array has more than 4 axes (hc fields have at most 4)");
        dims[r++] = v;
        p = skip_ws(p, end);
        if (p < end && *p == ',')
          p++;
        else if (p < end && *p == ')') {
          p++;
          break;
        } else
          return fmt_err(what, "malformed 'shape'");
      }
      have_shape = 1;
    } else {
      return fmt_err(what, "unexpected key in header");
    }
    p = skip_ws(p, end);
    if (p < end && *p == ',')
      p++;
    else if (p < end && *p == '}')
      break;
    else
      return fmt_err(what, "malformed header (expected ',' or '}')");
  }
  if (!have_descr || !have_order || !have_shape)
    return fmt_err(what, "header lacks one of 'descr', 'fortran_order', 'shape'");
  if (r > HC_MAX_DIMS) {
    char m[96];
    snprintf(m, sizeof m, "%u-D array: hc fields have at most 4 axes", r);
    return fmt_err(what, m);
  }
  const char *why = NULL;
  hc_dtype_t dt = dtype_from_descr(descr, &why);
  if (dt == HC_DTYPE_NONE) {
    char m[200];
    snprintf(m, sizeof m, "dtype '%s': %s", descr, why);
    return fmt_err(what, m);
  }
  if (fortran) {
    int multi = 0;
    for (uint32_t i = 0; i < r; i++) multi += dims[i] > 1;
    if (multi > 1) return fmt_err(what, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  }
  uint64_t count = 1;
  for (uint32_t i = 0; i < r; i++) {
    if (dims[i] && count > (UINT64_MAX / 16) / (uint64_t)dims[i]) return fmt_err(what, "array too large");
    count *= (uint64_t)dims[i];
  }
  *dtype = dt;
  *rank = r;
  for (uint32_t i = 0; i < r; i++) shape[i] = dims[i];
  *data_offset = hstart + hlen;
  return HC_OK;
}

static size_t count_of(uint32_t rank, const int64_t *shape) {
  size_t n = 1;
  for (uint32_t i = 0; i < rank; i++) n *= (size_t)shape[i];
  return n;
}

/* Opens path, parses its header, checks the data size. */
static hc_status_t open_npy(const char *path, FILE **fp, hc_dtype_t *dtype, uint32_t *rank, int64_t *shape,
                            size_t *data_bytes) {
  *fp = NULL;
  FILE *f = NULL;
  hc_status_t ost = hc_fopen_regular(path, &f);
  if (ost != HC_OK) return ost;
  struct stat stt;
  if (fstat(fileno(f), &stt) != 0) {
    fclose(f);
    return hc_error(HC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
  }
  unsigned char pre[12] = {0}; /* a 10- or 11-byte file reads no length bytes 10-11 */
  size_t got = fread(pre, 1, sizeof pre, f);
  size_t hdr = 0;
  if (got >= 10 && !memcmp(pre, NPY_MAGIC, 6))
    hdr = pre[6] == 1 ? 10 + ((size_t)pre[8] | (size_t)pre[9] << 8)
                      : 12 + ((size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24);
  if (hdr > NPY_MAX_HEADER + 12) hdr = NPY_MAX_HEADER + 12;
  unsigned char *buf = malloc(hdr > got ? hdr : got);
  if (!buf) {
    fclose(f);
    return hc_error(HC_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  memcpy(buf, pre, got);
  if (hdr > got) got += fread(buf + got, 1, hdr - got, f);
  size_t off = 0;
  hc_status_t st = hc_npy_parse(buf, got, dtype, rank, shape, &off);
  free(buf);
  if (st != HC_OK) {
    fclose(f);
    return hc_error_prefix(st, "%s: ", path);
  }
  size_t need = count_of(*rank, shape) * hc_dtype_size(*dtype);
  uint64_t have = (uint64_t)stt.st_size - off;
  if (have != need) {
    fclose(f);
    return hc_error(HC_ERR_FORMAT, "%s: %s data: the header promises %zu bytes, the file holds %llu", path,
                    have < need ? "truncated" : "oversized", need, (unsigned long long)have);
  }
  if (fseek(f, (long)off, SEEK_SET) != 0) {
    fclose(f);
    return hc_error(HC_ERR_IO, "%s: seek failed", path);
  }
  *fp = f;
  *data_bytes = need;
  return HC_OK;
}

/* Reads `bytes` bytes of f's data from `skip` bytes past where it stands. */
static hc_status_t read_data(FILE *f, const char *path, size_t skip, size_t bytes, void **data) {
  void *buf = malloc(bytes ? bytes : 1);
  if (!buf) return hc_error(HC_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", path, bytes);
  if (skip && fseeko(f, (off_t)skip, SEEK_CUR) != 0) {
    free(buf);
    return hc_error(HC_ERR_IO, "%s: seek failed", path);
  }
  if (fread(buf, 1, bytes, f) != bytes) {
    free(buf);
    return hc_error(HC_ERR_IO, "%s: short read", path);
  }
  *data = buf;
  return HC_OK;
}

HC_API hc_status_t hc_npy_read(const char *path, hc_dtype_t *dtype, uint32_t *rank, int64_t *shape, void **data) {
  if (!path || !dtype || !rank || !shape || !data) return hc_error(HC_ERR_INVALID_ARG, "hc_npy_read: NULL argument");
  *data = NULL;
  FILE *f;
  size_t bytes = 0;
  hc_status_t st = open_npy(path, &f, dtype, rank, shape, &bytes);
  if (st != HC_OK) return st;
  st = read_data(f, path, 0, bytes, data);
  fclose(f);
  return st;
}

HC_API hc_status_t hc_npy_read_rows(const char *path, int64_t lo, int64_t hi, hc_dtype_t *dtype, uint32_t *rank,
                                    int64_t *shape, void **data) {
  if (!path || !dtype || !rank || !shape || (hi > lo && !data))
    return hc_error(HC_ERR_INVALID_ARG, "hc_npy_read_rows: NULL argument");
  if (data) *data = NULL;
  FILE *f;
  size_t bytes = 0;
  hc_status_t st = open_npy(path, &f, dtype, rank, shape, &bytes);
  if (st != HC_OK) return st;
  const int64_t rows = *rank ? shape[0] : 1;
  if (lo < 0 || hi < lo || hi > rows)
    st = hc_error(HC_ERR_INVALID_ARG, "%s: rows [%lld, %lld) of an array of %lld", path, (long long)lo, (long long)hi,
                  (long long)rows);
  else if (hi > lo) {
    const size_t row_bytes = rows ? bytes / (size_t)rows : 0;
    st = read_data(f, path, (size_t)lo * row_bytes, (size_t)(hi - lo) * row_bytes, data);
  }
  fclose(f);
  return st;
}

/* Builds a v1 (or v2 when needed) header, padded to 64 bytes. */
static size_t make_header(char *out, size_t n, hc_dtype_t dtype, uint32_t rank, const int64_t *shape) {
  static const char *const descrs[] = {"",
#define HC_DESCR_STR_(e, nm, b, d, c) d,
                                       HC_DTYPE_LIST(HC_DESCR_STR_)
#undef HC_DESCR_STR_
  };
  char dict[512];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descrs[dtype]);
  for (uint32_t i = 0; i < rank; i++)
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld,%s", (long long)shape[i],
                    (rank > 1 && i + 1 < rank) ? " " : "");
  if (rank > 1) len--; /* "(3, 4)" not "(3, 4,)"; rank 1 keeps "(3,)" */
  len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
  size_t pre = 10, total = pre + (size_t)len + 1;
  total = (total + 63) / 64 * 64;
  size_t hlen = total - pre;
  if (total > n) return 0;
  memcpy(out, NPY_MAGIC, 6);
  out[6] = 1;
  out[7] = 0;
  out[8] = (char)(hlen & 0xff);
  out[9] = (char)(hlen >> 8);
  memcpy(out + pre, dict, (size_t)len);
  memset(out + pre + len, ' ', hlen - (size_t)len - 1);
  out[total - 1] = '\n';
  return total;
}

HC_API hc_status_t hc_npy_header(hc_dtype_t dtype, uint32_t rank, const int64_t *shape, void *out, size_t cap,
                                 size_t *len) {
  if (!out || !len || (!shape && rank) || rank > HC_MAX_DIMS || hc_dtype_size(dtype) == 0)
    return hc_error(HC_ERR_INVALID_ARG, "hc_npy_header: bad argument");
  *len = make_header(out, cap, dtype, rank, shape);
  return *len ? HC_OK : hc_error(HC_ERR_INVALID_ARG, "hc_npy_header: the header needs more than %zu bytes", cap);
}

HC_API hc_status_t hc_npy_write(const char *path, hc_dtype_t dtype, uint32_t rank, const int64_t *shape,
                                const void *data) {
  if (!path || (!data && count_of(rank, shape)) || rank > HC_MAX_DIMS || hc_dtype_size(dtype) == 0)
    return hc_error(HC_ERR_INVALID_ARG, "hc_npy_write: bad argument");
  char hdr[1024];
  size_t hl = make_header(hdr, sizeof hdr, dtype, rank, shape);
  size_t bytes = count_of(rank, shape) * hc_dtype_size(dtype);
  char *buf = malloc(hl + bytes);
  if (!buf) return hc_error(HC_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", path, hl + bytes);
  memcpy(buf, hdr, hl);
  if (bytes) memcpy(buf + hl, data, bytes);
  hc_status_t st = hc_write_file_atomic(path, buf, hl + bytes);
  free(buf);
  return st;
}
