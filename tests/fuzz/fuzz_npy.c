/* Fuzz target: .npy files (core/runtime/npy.c), both the in-memory parser and the
 * file reader, on arbitrary bytes.
 *
 * Properties: never a crash or an out-of-bounds read; failures are
 * HC_ERR_FORMAT (the reader may also say IO for a short read, never here);
 * an accepted header gives a known dtype, rank <= 4 and a data offset
 * inside the input; the reader agrees with the parser (the same bytes on
 * disk are accepted exactly when the header parses and the data size is
 * what it promises, and then the data read back are the file's bytes); and
 * what hc_npy_write writes for an accepted header reads back identically. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "internal.h"

static char dir[64], in_path[128], out_path[128];

static void remove_dir(void) {
  unlink(in_path);
  unlink(out_path);
  rmdir(dir);
}

static void make_dir(void) {
  if (dir[0]) return;
  /* A memory file system when there is one: rewriting a file on a disk
   * costs milliseconds (the truncate flushes), a hundred times the parse. */
  snprintf(dir, sizeof dir, "/dev/shm/hc-fuzz-npy-XXXXXX");
  if (!mkdtemp(dir)) {
    snprintf(dir, sizeof dir, "/tmp/hc-fuzz-npy-XXXXXX");
    if (!mkdtemp(dir)) abort();
  }
  snprintf(in_path, sizeof in_path, "%s/in.npy", dir);
  snprintf(out_path, sizeof out_path, "%s/out.npy", dir);
  atexit(remove_dir);
}

static void write_all(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  make_dir();
  hc_dtype_t dt = HC_DTYPE_NONE;
  uint32_t rank = 99;
  int64_t shape[HC_MAX_DIMS];
  size_t off = 0;
  hc_status_t st = hc_npy_parse(data, size, &dt, &rank, shape, &off);
  size_t need = 0;
  int sizes_agree = 0;
  if (st == HC_OK) {
    size_t es = hc_dtype_size(dt);
    FZ_CHECK(es > 0, "dtype %d accepted", (int)dt);
    FZ_CHECK(rank <= HC_MAX_DIMS, "rank %u", rank);
    FZ_CHECK(off >= 10 && off <= size, "data offset %zu of %zu bytes", off, size);
    /* The parser promised the element count times 16 fits in 64 bits. */
    unsigned __int128 count = 1;
    for (uint32_t i = 0; i < rank; i++) {
      FZ_CHECK(shape[i] >= 0, "extent %lld", (long long)shape[i]);
      count *= (unsigned __int128)shape[i];
    }
    FZ_CHECK(count * 16 <= UINT64_MAX, "element count overflows");
    need = (size_t)count * es;
    sizes_agree = size - off == need;
  } else {
    FZ_CHECK(st == HC_ERR_FORMAT, "status %s", hc_status_name(st));
    FZ_CHECK(!strncmp(hc_last_error(), "npy: ", 5), "message '%s'", hc_last_error());
  }

  /* The same bytes as a file. */
  write_all(in_path, data, size);
  hc_dtype_t dt2;
  uint32_t rank2;
  int64_t shape2[HC_MAX_DIMS];
  void *buf = NULL;
  hc_status_t st2 = hc_npy_read(in_path, &dt2, &rank2, shape2, &buf);
  if (st2 == HC_OK) {
    FZ_CHECK(st == HC_OK && sizes_agree, "the reader accepted what the parser refused (%s)",
             st == HC_OK ? "data size" : hc_status_name(st));
    FZ_CHECK(dt2 == dt && rank2 == rank && !memcmp(shape2, shape, rank * sizeof *shape), "reader and parser disagree");
    FZ_CHECK(!need || !memcmp(buf, data + off, need), "data read back differ from the file's");
    free(buf);
  } else {
    FZ_CHECK(buf == NULL, "failed read left data");
    FZ_CHECK(st2 == HC_ERR_FORMAT, "reader status %s: %s", hc_status_name(st2), hc_last_error());
    FZ_CHECK(!(st == HC_OK && sizes_agree), "the reader refused a valid file: %s", hc_last_error());
  }

  /* Written by hc and read back: the same header and data. Small arrays
   * only, so the target stays fast. */
  if (st == HC_OK && sizes_agree && need <= (1u << 20)) {
    FZ_CHECK(hc_npy_write(out_path, dt, rank, shape, data + off) == HC_OK, "write failed: %s", hc_last_error());
    void *back = NULL;
    FZ_CHECK(hc_npy_read(out_path, &dt2, &rank2, shape2, &back) == HC_OK, "written file unreadable: %s",
             hc_last_error());
    FZ_CHECK(dt2 == dt && rank2 == rank && !memcmp(shape2, shape, rank * sizeof *shape), "header changed on write");
    FZ_CHECK(!need || !memcmp(back, data + off, need), "data changed on write");
    free(back);
  }
  return 0;
}
