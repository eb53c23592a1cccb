/* .npy reading and writing: round trips of every dtype and odd shapes,
 * fields with spacing side files, and every malformed-file error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char path[4200];

static const char *tmpfile_named(const char *name) {
  snprintf(path, sizeof path, "%s/%s", th_tmpdir(), name);
  return path;
}

static void write_bytes(const char *p, const void *data, size_t n) {
  FILE *f = fopen(p, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* A raw .npy image with the given header dict and data size. */
static void write_npy(const char *p, int major, const char *dict, size_t data_bytes) {
  char buf[8192];
  size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
  size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (char)major;
  buf[7] = 0;
  if (major == 1) {
    buf[8] = (char)(hl & 0xff);
    buf[9] = (char)(hl >> 8);
  } else {
    buf[8] = (char)(hl & 0xff);
    buf[9] = (char)(hl >> 8);
    buf[10] = buf[11] = 0;
  }
  memcpy(buf + pre, dict, dl);
  memset(buf + pre + dl, ' ', hl - dl - 1);
  buf[total - 1] = '\n';
  memset(buf + total, 0x3f, data_bytes);
  write_bytes(p, buf, total + data_bytes);
}

static void test_roundtrip_all_dtypes(void) {
  hc_dtype_t dts[] = {HC_F32, HC_F64, HC_C64, HC_C128};
  int64_t shapes[][4] = {{0}, {7}, {1, 7, 3}, {2, 3, 4, 5}, {0, 3}};
  uint32_t ranks[] = {0, 1, 3, 4, 2};
  for (size_t d = 0; d < 4; d++)
    for (size_t s = 0; s < 5; s++) {
      size_t n = 1;
      for (uint32_t i = 0; i < ranks[s]; i++) n *= (size_t)shapes[s][i];
      size_t bytes = n * hc_dtype_size(dts[d]);
      unsigned char *data = malloc(bytes + 1);
      for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(i * 31 + d);
      const char *p = tmpfile_named("rt.npy");
      TH_ASSERT_OK(hc_npy_write(p, dts[d], ranks[s], shapes[s], data));
      hc_dtype_t dt;
      uint32_t rank;
      int64_t shape[4];
      void *back = NULL;
      TH_ASSERT_OK(hc_npy_read(p, &dt, &rank, shape, &back));
      CU_ASSERT_EQUAL(dt, dts[d]);
      CU_ASSERT_EQUAL(rank, ranks[s]);
      for (uint32_t i = 0; i < rank; i++) CU_ASSERT_EQUAL(shape[i], shapes[s][i]);
      CU_ASSERT_EQUAL(memcmp(back, data, bytes), 0);
      free(back);
      free(data);
    }
}

/* hc_npy_read_rows: the header alone, any run of rows along axis 0 (the
 * bytes of those rows), and rows outside the array refused. */
static void test_read_rows(void) {
  const int64_t shape[3] = {9, 5, 3};
  double data[9 * 5 * 3];
  for (size_t i = 0; i < sizeof data / sizeof *data; i++) data[i] = (double)i * 0.5;
  const char *p = tmpfile_named("rows.npy");
  TH_ASSERT_OK(hc_npy_write(p, HC_F64, 3, shape, data));
  hc_dtype_t dt;
  uint32_t rank = 0;
  int64_t got[3] = {0};
  TH_ASSERT_OK(hc_npy_read_rows(p, 0, 0, &dt, &rank, got, NULL));
  CU_ASSERT(dt == HC_F64 && rank == 3 && got[0] == 9 && got[1] == 5 && got[2] == 3);
  const int64_t runs[][2] = {{0, 9}, {0, 1}, {8, 9}, {2, 7}, {4, 4}};
  for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
    void *rows = NULL;
    TH_ASSERT_OK(hc_npy_read_rows(p, runs[r][0], runs[r][1], &dt, &rank, got, &rows));
    CU_ASSERT_EQUAL(got[0], 9); /* the whole array's shape */
    if (runs[r][1] > runs[r][0]) {
      CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
      CU_ASSERT_EQUAL(memcmp(rows, data + runs[r][0] * 15, (size_t)(runs[r][1] - runs[r][0]) * 15 * sizeof *data), 0);
    }
    free(rows);
  }
  const int64_t bad[][2] = {{-1, 2}, {3, 2}, {0, 10}, {9, 10}};
  for (size_t r = 0; r < sizeof bad / sizeof *bad; r++) {
    void *rows = (void *)1;
    CU_ASSERT_EQUAL(hc_npy_read_rows(p, bad[r][0], bad[r][1], &dt, &rank, got, &rows), HC_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NULL(rows);
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "rows.npy: rows ["));
  }
  CU_ASSERT_EQUAL(hc_npy_read_rows(p, 0, 1, &dt, &rank, got, NULL), HC_ERR_INVALID_ARG); /* rows, no data */
  /* a file's errors are hc_npy_read's */
  CU_ASSERT_EQUAL(hc_npy_read_rows(tmpfile_named("missing.npy"), 0, 0, &dt, &rank, got, NULL), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "cannot open"));
}

static void test_header_is_numpy_compatible(void) {
  int64_t shape[2] = {3, 4};
  float data[12] = {0};
  const char *p = tmpfile_named("hdr.npy");
  TH_ASSERT_OK(hc_npy_write(p, HC_F32, 2, shape, data));
  FILE *f = fopen(p, "rb");
  char buf[129] = {0};
  CU_ASSERT_EQUAL(fread(buf, 1, 128, f), 128);
  fclose(f);
  CU_ASSERT_EQUAL(memcmp(buf, "\x93NUMPY\x01\x00", 8), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"));
  char *nl = memchr(buf, '\n', 128);
  CU_ASSERT_PTR_NOT_NULL_FATAL(nl);
  CU_ASSERT_EQUAL((nl - buf + 1) % 64, 0); /* header padded to 64 bytes */
  int64_t one[1] = {5};
  TH_ASSERT_OK(hc_npy_write(p, HC_F64, 1, one, data));
  f = fopen(p, "rb");
  CU_ASSERT_EQUAL(fread(buf, 1, 64, f), 64);
  fclose(f);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf + 10, "'shape': (5,)"));
}

static void test_versions_and_layouts(void) {
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[4];
  void *data = NULL;
  const char *p = tmpfile_named("v2.npy");
  write_npy(p, 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 32);
  TH_ASSERT_OK(hc_npy_read(p, &dt, &rank, shape, &data));
  CU_ASSERT_EQUAL(dt, HC_F64);
  free(data);
  p = tmpfile_named("v3.npy");
  write_npy(p, 3, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<c8\"}", 24);
  TH_ASSERT_OK(hc_npy_read(p, &dt, &rank, shape, &data));
  CU_ASSERT_EQUAL(dt, HC_C64);
  CU_ASSERT_EQUAL(shape[0], 3);
  free(data);
  /* Fortran order is fine when at most one axis is longer than 1. */
  p = tmpfile_named("fvec.npy");
  write_npy(p, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 4), }", 16);
  TH_ASSERT_OK(hc_npy_read(p, &dt, &rank, shape, &data));
  free(data);
}

static void expect_format_error(const char *name, int major, const char *dict, size_t bytes, const char *fragment) {
  const char *p = tmpfile_named(name);
  write_npy(p, major, dict, bytes);
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[4];
  void *data = NULL;
  hc_status_t st = hc_npy_read(p, &dt, &rank, shape, &data);
  CU_ASSERT_EQUAL(st, HC_ERR_FORMAT);
  CU_ASSERT_PTR_NULL(data);
  if (!strstr(hc_last_error(), fragment)) fprintf(stderr, "%s: '%s' lacks '%s'\n", name, hc_last_error(), fragment);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), fragment));
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), name)); /* the file is named */
}

static void test_malformed(void) {
  expect_format_error("trunc.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", 12,
                      "truncated data: the header promises 40 bytes, the file holds 12");
  expect_format_error("over.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8, "oversized data");
  expect_format_error("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4, "big-endian");
  expect_format_error("int.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", 4,
                      "integer or boolean dtype is not supported");
  expect_format_error("half.npy", 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", 2,
                      "float width is not supported");
  expect_format_error("five.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 2), }", 8,
                      "5-D array: hc fields have at most 4 axes");
  expect_format_error("fort.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
                      "Fortran-order arrays are not supported");
  expect_format_error("nokey.npy", 1, "{'descr': '<f4', 'shape': (1,), }", 4, "lacks one of");
  expect_format_error("extra.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4,
                      "unexpected key");
  expect_format_error("struct.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
                      "structured dtypes are not supported");
  expect_format_error("shape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 8,
                      "malformed 'shape'");
  expect_format_error("nodict.npy", 1, "['descr']", 0, "header is not a Python dict");
  expect_format_error("v9.npy", 9, "{}", 0, "unsupported format version 9.0");
  /* Not .npy at all, and too short to be. */
  const char *p = tmpfile_named("text.npy");
  write_bytes(p, "hello, world\n", 13);
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[4];
  void *data = NULL;
  CU_ASSERT_EQUAL(hc_npy_read(p, &dt, &rank, shape, &data), HC_ERR_FORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "not a .npy file"));
  p = tmpfile_named("short.npy");
  write_bytes(p, "\x93NUMPY\x01", 7);
  CU_ASSERT_EQUAL(hc_npy_read(p, &dt, &rank, shape, &data), HC_ERR_FORMAT);
  /* Header length pointing past the end. */
  p = tmpfile_named("hlen.npy");
  write_bytes(p, "\x93NUMPY\x01\x00\xff\x7f{", 11);
  CU_ASSERT_EQUAL(hc_npy_read(p, &dt, &rank, shape, &data), HC_ERR_FORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "truncated header"));
  /* Missing file and a directory: the caller's input is wrong (a usage
   * error by include/hc/status.h), on the host and the device path alike. */
  CU_ASSERT_EQUAL(hc_npy_read(tmpfile_named("missing.npy"), &dt, &rank, shape, &data), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "cannot open"));
  CU_ASSERT_EQUAL(hc_npy_read(th_tmpdir(), &dt, &rank, shape, &data), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NULL(data);
  hc_field_t *f = NULL;
  hc_status_t st = hc_field_load_npy(th_device("cpu"), tmpfile_named("missing.npy"), &f);
  CU_ASSERT_EQUAL(hc_status_exit_code(st), HC_EXIT_USAGE);
  CU_ASSERT_PTR_NULL(f);
}

/* Every status has an exit code of the documented five, and the classes
 * agree with the README's: usage errors 2, unavailable 3, runtime 4. */
static void test_status_exit_codes(void) {
  int n = 0;
  for (int s = 0; s < 64; s++) {
    if (!strcmp(hc_status_name((hc_status_t)s), "HC_UNKNOWN")) continue;
    int c = hc_status_exit_code((hc_status_t)s);
    CU_ASSERT(c >= HC_EXIT_OK && c <= HC_EXIT_RUNTIME);
    n++;
  }
  CU_ASSERT_EQUAL(n, HC_ERR_NUMERIC + 1);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_OK), 0);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_VERIFY), 1);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_PARAM), 2);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_INVALID_ARG), 2);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_FORMAT), 2);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_PIPELINE), 2);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_NO_DEVICE), 3);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_ABI), 3);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_DEVICE_MEMORY), 4);
  CU_ASSERT_EQUAL(hc_status_exit_code(HC_ERR_IO), 4);
  CU_ASSERT_EQUAL(hc_status_exit_code((hc_status_t)999), HC_EXIT_RUNTIME);
}

static void test_parse_in_memory(void) {
  /* A 0-d f64 array written by hc, then parsed from memory. */
  const char *p = tmpfile_named("scalar.npy");
  double v = 2.5;
  TH_ASSERT_OK(hc_npy_write(p, HC_F64, 0, NULL, &v));
  unsigned char img[256];
  FILE *f = fopen(p, "rb");
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  hc_dtype_t dt;
  uint32_t rank = 9;
  int64_t shape[4];
  size_t off = 0;
  TH_ASSERT_OK(hc_npy_parse(img, n, &dt, &rank, shape, &off));
  CU_ASSERT_EQUAL(rank, 0);
  CU_ASSERT_EQUAL(dt, HC_F64);
  CU_ASSERT_EQUAL(off + 8, n);
  CU_ASSERT_EQUAL(hc_npy_parse(img, 9, &dt, &rank, shape, &off), HC_ERR_FORMAT);
  CU_ASSERT_EQUAL(hc_npy_parse(img, 20, &dt, &rank, shape, &off), HC_ERR_FORMAT);
  CU_ASSERT_EQUAL(hc_npy_parse(NULL, 0, &dt, &rank, shape, &off), HC_ERR_FORMAT);
  /* A repeated key: the last one counts, as NumPy reads it (a Python dict
   * literal), never the two concatenated. */
  static const char dup[] = "\x93NUMPY\x01\x00\x62\x00{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), "
                            "'fortran_order': False, 'shape': (6,), }\n";
  TH_ASSERT_OK(hc_npy_parse(dup, sizeof dup - 1, &dt, &rank, shape, &off));
  CU_ASSERT_EQUAL(rank, 1);
  CU_ASSERT_EQUAL(shape[0], 6);
  CU_ASSERT_EQUAL(off, sizeof dup - 1);
}

static void test_field_files(void) {
  hc_device_t *dev = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
  int64_t shape[3] = {3, 4, 5};
  hc_field_t *f = NULL;
  TH_ASSERT_OK(hc_field_create(dev, HC_F64, 3, shape, &f));
  double *host = hc_buffer_host_ptr(hc_field_buffer(f));
  CU_ASSERT_PTR_NOT_NULL_FATAL(host);
  for (int i = 0; i < 60; i++) host[i] = i * 0.5;
  double h[3] = {0.1, 0.2, 0.25}, o[3] = {-1, 0, 1};
  hc_field_set_spacing(f, h);
  hc_field_set_origin(f, o);
  const char *p = tmpfile_named("field.npy");
  TH_ASSERT_OK(hc_field_save_npy(f, p));
  hc_field_t *g = NULL;
  TH_ASSERT_OK(hc_field_load_npy(dev, p, &g));
  CU_ASSERT_EQUAL(hc_field_rank(g), 3);
  CU_ASSERT_EQUAL(hc_field_shape(g)[2], 5);
  CU_ASSERT_DOUBLE_EQUAL(hc_field_spacing(g)[1], 0.2, 0);
  CU_ASSERT_DOUBLE_EQUAL(hc_field_origin(g)[0], -1, 0);
  CU_ASSERT_STRING_EQUAL(hc_field_name(g), "field");
  double back[60];
  TH_ASSERT_OK(hc_field_read(g, back));
  CU_ASSERT_DOUBLE_EQUAL(back[59], 29.5, 0);
  hc_field_destroy(g);
  hc_field_destroy(f);
  /* No stray temporary files after atomic writes. */
  char out[4096];
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '\\.tmp\\.' || true", th_tmpdir());
  th_run(cmd, out, sizeof out, NULL, 0);
  CU_ASSERT_EQUAL(atoi(out), 0);
  /* Writing into a missing directory fails cleanly. */
  TH_ASSERT_OK(hc_field_create(dev, HC_F32, 1, shape, &f));
  CU_ASSERT_EQUAL(hc_field_save_npy(f, "/nonexistent-dir/x.npy"), HC_ERR_IO);
  hc_field_destroy(f);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("npy", NULL, NULL);
  CU_ADD_TEST(s, test_roundtrip_all_dtypes);
  CU_ADD_TEST(s, test_status_exit_codes);
  CU_ADD_TEST(s, test_read_rows);
  CU_ADD_TEST(s, test_header_is_numpy_compatible);
  CU_ADD_TEST(s, test_versions_and_layouts);
  CU_ADD_TEST(s, test_malformed);
  CU_ADD_TEST(s, test_parse_in_memory);
  CU_ADD_TEST(s, test_field_files);
}

TH_MAIN(register_tests)
