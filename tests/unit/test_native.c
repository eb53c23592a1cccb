/* Native memory: hc_buffer_native describes a buffer in its device API's
 * terms, hc_buffer_wrap / hc_field_wrap run hc on memory the caller owns
 * (in place, never freed by hc), on every backend that offers it. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* A host array used in place by the cpu device: writes through hc land in
 * the caller's array, and destroying the buffer leaves the array alone. */
static void test_cpu_wraps_host_memory(void) {
  hc_device_t *d = th_device("cpu");
  if (!d) return;
  double *host = aligned_alloc(64, 64 * sizeof *host);
  for (int i = 0; i < 64; i++) host[i] = i;
  hc_native_mem_t m = {sizeof m, HC_NATIVE_HOST, host, -1, 0};
  int64_t shape[2] = {8, 8};
  hc_field_t *f = NULL;
  uint64_t live = hc_context_live_buffers(th_context());
  TH_ASSERT_OK(hc_field_wrap(d, HC_F64, 2, shape, &m, &f));
  CU_ASSERT_EQUAL(hc_context_live_buffers(th_context()), live + 1);
  CU_ASSERT_PTR_EQUAL(hc_buffer_host_ptr(hc_field_buffer(f)), host);
  double seven = 7.0;
  TH_ASSERT_OK(hc_buffer_fill(hc_field_buffer(f), 8 * sizeof(double), &seven, sizeof seven, 8 * sizeof(double)));
  CU_ASSERT_EQUAL(host[7], 7.0);
  CU_ASSERT_EQUAL(host[8], 7.0);
  CU_ASSERT_EQUAL(host[15], 7.0);
  CU_ASSERT_EQUAL(host[16], 16.0);
  hc_native_mem_t back = {0};
  TH_ASSERT_OK(hc_buffer_native(hc_field_buffer(f), &back));
  CU_ASSERT_EQUAL(back.kind, HC_NATIVE_HOST);
  CU_ASSERT_PTR_EQUAL(back.ptr, host);
  hc_field_destroy(f);
  CU_ASSERT_EQUAL(hc_context_live_buffers(th_context()), live);
  CU_ASSERT_EQUAL(host[9], 7.0); /* still the caller's, still readable */
  free(host);
}

static void test_wrap_rejects_bad_input(void) {
  hc_device_t *d = th_device("cpu");
  if (!d) return;
  hc_buffer_t *b = NULL;
  double x = 0;
  hc_native_mem_t nosize = {0, HC_NATIVE_HOST, &x, -1, 0};
  CU_ASSERT_EQUAL(hc_buffer_wrap(d, &nosize, sizeof x, &b), HC_ERR_INVALID_ARG);
  hc_native_mem_t cuda = {sizeof cuda, HC_NATIVE_CUDA, &x, 0, 0};
  CU_ASSERT_EQUAL(hc_buffer_wrap(d, &cuda, sizeof x, &b), HC_ERR_UNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "host memory"));
  double pair[2] __attribute__((aligned(64))) = {0, 0};
  hc_native_mem_t odd = {sizeof odd, HC_NATIVE_HOST, &pair[1], -1, 0};
  CU_ASSERT_EQUAL(hc_buffer_wrap(d, &odd, sizeof x, &b), HC_ERR_UNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "aligned"));
  hc_native_mem_t null = {sizeof null, HC_NATIVE_HOST, NULL, -1, 0};
  CU_ASSERT_EQUAL(hc_buffer_wrap(d, &null, sizeof x, &b), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NULL(b);
}

/* On a device with its own memory, a buffer's native handle wraps again
 * as a second hc buffer over the same memory: what one writes, the other
 * reads; the wrapped one's destruction frees nothing. */
static void rewrap_roundtrip(const char *spec, hc_native_kind_t kind) {
  hc_device_t *d = th_device(spec);
  if (!d) return;
  hc_buffer_t *a = NULL, *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(d, 256, &a));
  hc_native_mem_t m = {0};
  TH_ASSERT_OK(hc_buffer_native(a, &m));
  CU_ASSERT_EQUAL(m.kind, kind);
  TH_ASSERT_OK(hc_buffer_wrap(d, &m, 256, &b));
  float v[64], w[64];
  for (int i = 0; i < 64; i++) v[i] = (float)i * 0.5f;
  TH_ASSERT_OK(hc_buffer_write(b, 0, v, sizeof v));
  hc_buffer_destroy(b);
  TH_ASSERT_OK(hc_buffer_read(a, 0, w, sizeof w));
  CU_ASSERT_EQUAL(memcmp(v, w, sizeof v), 0);
  hc_buffer_destroy(a);
}

static void test_opencl_rewrap(void) { rewrap_roundtrip("opencl", HC_NATIVE_OPENCL); }
static void test_cuda_rewrap(void) { rewrap_roundtrip("cuda", HC_NATIVE_CUDA); }

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("native", NULL, NULL);
  CU_ADD_TEST(s, test_cpu_wraps_host_memory);
  CU_ADD_TEST(s, test_wrap_rejects_bad_input);
  CU_ADD_TEST(s, test_opencl_rewrap);
  CU_ADD_TEST(s, test_cuda_rewrap);
}

TH_MAIN(register_tests)
