/* The cpu backend's buffers (plugins/cpu/cpu.c): from 4 MiB up they start
 * on a 2 MiB boundary, laid out for transparent huge pages, unless
 * HC_CPU_HUGE_PAGES=0; every buffer holds what is written to it, and one
 * just below the threshold keeps the ordinary 64-byte alignment. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MIB ((size_t)1 << 20)

/* A buffer of `bytes` on cpu:0 of a context made with HC_CPU_HUGE_PAGES
 * set to `huge`: the alignment of its host pointer (the largest power of
 * two dividing it, capped at 2 MiB), after a written pattern read back. */
static size_t alignment_of(const char *huge, size_t bytes) {
  setenv("HC_CPU_HUGE_PAGES", huge, 1);
  hc_context_t *ctx = NULL;
  hc_status_t st = hc_context_create(NULL, &ctx);
  unsetenv("HC_CPU_HUGE_PAGES");
  TH_ASSERT_OK(st);
  if (st != HC_OK) return 0;
  hc_device_t *dev = NULL;
  hc_buffer_t *b = NULL;
  size_t align = 0;
  unsigned char *in = malloc(bytes), *back = malloc(bytes);
  CU_ASSERT_FATAL(in && back);
  for (size_t i = 0; i < bytes; i++) in[i] = (unsigned char)(i * 131u + 7u);
  uint32_t index = 0;
  TH_ASSERT_OK(st = hc_device_find(ctx, "cpu:0", &index));
  if (st == HC_OK) TH_ASSERT_OK(st = hc_device_open(ctx, index, &dev));
  if (st == HC_OK) TH_ASSERT_OK(st = hc_buffer_create(dev, bytes, &b));
  if (st == HC_OK) {
    TH_ASSERT_OK(hc_buffer_write(b, 0, in, bytes));
    TH_ASSERT_OK(hc_buffer_read(b, 0, back, bytes));
    CU_ASSERT(memcmp(in, back, bytes) == 0);
    const uintptr_t p = (uintptr_t)hc_buffer_host_ptr(b);
    CU_ASSERT_FATAL(p != 0);
    for (align = 1; align < 2 * MIB && !(p & align); align <<= 1) {
    }
  }
  free(in);
  free(back);
  hc_buffer_destroy(b);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  return align;
}

static void test_large_buffers_on_huge_page_boundaries(void) {
  CU_ASSERT_EQUAL(alignment_of("1", 4 * MIB), 2 * MIB);
  CU_ASSERT_EQUAL(alignment_of("1", 5 * MIB + 3), 2 * MIB); /* rounded up inside: the whole size is usable */
  CU_ASSERT(alignment_of("1", 4 * MIB - 64) >= 64);
  CU_ASSERT(alignment_of("0", 8 * MIB) >= 64);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("cpu buffers", NULL, NULL);
  CU_ADD_TEST(s, test_large_buffers_on_huge_page_boundaries);
}

TH_MAIN(register_tests)
