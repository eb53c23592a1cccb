/* bpm: the extra files under --output: the intensity image (PNG through
 * libpng, when the build found it) and the power trace (CSV). Both are
 * written atomically; .npy files of the outputs are written by the caller. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpm.h"
#include "hc_config.h"

#if HC_HAVE_PNG
#include <png.h>
#endif

/* Bilinear resampling of a rows x cols map (src, REAL f64 or f32) to h x
 * w pixels, normalised to the map's maximum: out[h*w] in [0, 1]. With
 * transpose, the map's rows run across the image (z to the right) and its
 * columns down (y, from Ly at the top to 0 at the bottom). */
static void resample(const void *src, int f64, int64_t rows, int64_t cols, int transpose, int64_t w, int64_t h,
                     double *out) {
#define SRC(r, c) (f64 ? ((const double *)src)[(r)*cols + (c)] : (double)((const float *)src)[(r)*cols + (c)])
  double mx = 0;
  for (int64_t i = 0; i < rows * cols; i++) mx = fmax(mx, SRC(0, i));
  if (!(mx > 0)) mx = 1;
  for (int64_t py = 0; py < h; py++)
    for (int64_t px = 0; px < w; px++) {
      /* position in the map: a = along rows, b = along columns */
      double fa, fb;
      if (transpose) {
        fa = (double)px * (double)(rows - 1) / (double)(w > 1 ? w - 1 : 1);
        fb = (double)(h - 1 - py) * (double)(cols - 1) / (double)(h > 1 ? h - 1 : 1);
      } else {
        fa = (double)py * (double)(rows - 1) / (double)(h > 1 ? h - 1 : 1);
        fb = (double)px * (double)(cols - 1) / (double)(w > 1 ? w - 1 : 1);
      }
      int64_t a0 = (int64_t)fa, b0 = (int64_t)fb;
      int64_t a1 = a0 + 1 < rows ? a0 + 1 : a0, b1 = b0 + 1 < cols ? b0 + 1 : b0;
      double ta = fa - (double)a0, tb = fb - (double)b0;
      double v =
          (1 - ta) * ((1 - tb) * SRC(a0, b0) + tb * SRC(a0, b1)) + ta * ((1 - tb) * SRC(a1, b0) + tb * SRC(a1, b1));
      out[py * w + px] = v / mx;
    }
#undef SRC
}

#if HC_HAVE_PNG
typedef struct {
  unsigned char *data;
  size_t size, cap;
  int failed;
} membuf_t;

static void png_to_memory(png_structp png, png_bytep bytes, png_size_t len) {
  membuf_t *m = png_get_io_ptr(png);
  if (m->failed) return;
  if (m->size + len > m->cap) {
    size_t cap = m->cap ? m->cap : 65536;
    while (cap < m->size + len) cap *= 2;
    unsigned char *d = realloc(m->data, cap);
    if (!d) {
      m->failed = 1;
      return;
    }
    m->data = d, m->cap = cap;
  }
  memcpy(m->data + m->size, bytes, len);
  m->size += len;
}

static void png_flush_nothing(png_structp png) { (void)png; }

/* Encodes an 8-bit RGB image into memory (m->data, malloc'd). */
static hc_status_t encode_png(const unsigned char *rgb, int64_t w, int64_t h, membuf_t *m) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    return hc_error(HC_ERR_NO_MEMORY, "bpm: libpng could not start");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return hc_error(HC_ERR_IO, "bpm: libpng failed encoding the image");
  }
  png_set_write_fn(png, m, png_to_memory, png_flush_nothing);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(rgb + (size_t)(y * w * 3)));
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return m->failed ? hc_error(HC_ERR_NO_MEMORY, "bpm: out of memory encoding the image") : HC_OK;
}
#endif

static hc_status_t write_png(hc_job_t *job, const char *path, const void *map, int f64, int64_t rows, int64_t cols,
                             int transpose, int64_t w, int64_t h) {
  (void)job;
#if HC_HAVE_PNG
  double *v = malloc((size_t)(w * h) * sizeof *v);
  unsigned char *rgb = malloc((size_t)(w * h) * 3);
  membuf_t m = {NULL, 0, 0, 0};
  hc_status_t st;
  if (!v || !rgb) {
    st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the image");
    goto out;
  }
  resample(map, f64, rows, cols, transpose, w, h, v);
  for (int64_t i = 0; i < w * h; i++) bpm_colormap(v[i], rgb + 3 * i);
  if ((st = encode_png(rgb, w, h, &m)) == HC_OK) st = hc_write_file_atomic(path, m.data, m.size);
out:
  free(v);
  free(rgb);
  free(m.data);
  return st;
#else
  (void)path, (void)map, (void)f64, (void)rows, (void)cols, (void)transpose, (void)w, (void)h;
  hc_job_note(job, "intensity image skipped: built without libpng (intensity.npy has the same data)");
  return HC_OK;
#endif
}

static hc_status_t write_csv(const char *path, const bpm_config_t *c, const bpm_result_t *r) {
  size_t cap = 64 + (size_t)c->nsaved * 80, len = 0;
  char *text = malloc(cap);
  if (!text) return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the CSV");
  len += (size_t)snprintf(text + len, cap - len, "z_um,window_power,core_power\n");
  for (int64_t i = 0; i < c->nsaved; i++) {
    double z = i == c->nsaved - 1 ? c->Lz : (double)(i * c->save_every) * c->hz;
    len += (size_t)snprintf(text + len, cap - len, "%.10g,%.17g,%.17g\n", z, r->power[i], r->core_power[i]);
  }
  hc_status_t st = hc_write_file_atomic(path, text, len);
  free(text);
  return st;
}

hc_status_t bpm_write_files(hc_job_t *job, const bpm_config_t *c, const bpm_result_t *r) {
  if (!hc_job_output_dir(job)) return HC_OK;
  char path[4096];
  hc_status_t st = hc_job_output_file(job, "power.csv", path, sizeof path);
  if (st == HC_OK) st = write_csv(path, c, r);
  if (st != HC_OK) return st;
#if HC_HAVE_PNG
  if ((st = hc_job_output_file(job, "intensity.png", path, sizeof path)) != HC_OK) return st;
#endif
  if (c->dim == 2) /* the map: z across, y down */
    return write_png(job, path, r->intensity, c->f64, c->nsaved, c->ny, 1, c->image_w, c->image_h);
  /* the cross-section at Lz: y across, x down, at most 2048 pixels a side */
  int64_t w = c->ny < 2048 ? c->ny : 2048, h = c->nx < 2048 ? c->nx : 2048;
  return write_png(job, path, r->intensity, c->f64, c->nx, c->ny, 0, w, h);
}
