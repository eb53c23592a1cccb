/* Reading structured values out of a fuzzer's bytes (a tiny C version of
 * LLVM's FuzzedDataProvider). Bytes are consumed from the front; reading
 * past the end gives zeros, and the targets map zero to their most ordinary
 * choice, so short inputs give well-formed structures the fuzzer then
 * mutates. Strings point into one NUL-terminated copy of the input: each
 * runs to the next NUL byte, so a string is always terminated but otherwise
 * arbitrary. Also the property check every target uses. */
#ifndef HC_FUZZ_INPUT_H
#define HC_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *buf; /* copy of the input, with a NUL after it */
  size_t size, pos;
} fz_t;

static inline void fz_init(fz_t *f, const uint8_t *data, size_t size) {
  f->buf = malloc(size + 1);
  if (!f->buf) abort();
  if (size) memcpy(f->buf, data, size);
  f->buf[size] = '\0';
  f->size = size;
  f->pos = 0;
}

static inline void fz_free(fz_t *f) {
  free(f->buf);
  f->buf = NULL;
}

static inline uint8_t fz_u8(fz_t *f) { return f->pos < f->size ? (uint8_t)f->buf[f->pos++] : 0; }

static inline uint32_t fz_u32(fz_t *f) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)fz_u8(f) << (8 * i);
  return v;
}

static inline uint64_t fz_u64(fz_t *f) { return (uint64_t)fz_u32(f) | (uint64_t)fz_u32(f) << 32; }

/* A NUL-terminated string of the input (possibly empty). */
static inline const char *fz_str(fz_t *f) {
  const char *s = f->buf + f->pos;
  size_t n = strlen(s);
  f->pos += n + (f->pos + n < f->size);
  return s;
}

/* A string, or NULL when the selector byte says so (1 in 8). */
static inline const char *fz_str_or_null(fz_t *f) { return (fz_u8(f) & 7) == 7 ? NULL : fz_str(f); }

/* A property that must hold: a failure aborts with the reason, which the
 * fuzzer reports as a crash with this input. */
#define FZ_CHECK(cond, ...)                                                         \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                 \
      fputc('\n', stderr);                                                          \
      abort();                                                                      \
    }                                                                               \
  } while (0)

#endif
