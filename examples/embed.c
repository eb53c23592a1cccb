/* Embedding libhc in your own C tool: pick the best device, run your own
 * kernel on a field, then run a workload plugin and read its result.
 *
 *   cc embed.c $(pkg-config --cflags --libs hc) -o embed && ./embed
 */
#include <hc/hc.h>
#include <stdio.h>
#include <stdlib.h>

/* One kernel, two forms: a C function for host devices and the portable
 * dialect for OpenCL and CUDA devices. */
static const char square_src[] = "HC_KERNEL void square(const long n, HC_GLOBAL double *x) {\n"
                                 "  long i = hc_global_id(0);\n"
                                 "  if (i < n) x[i] = x[i] * x[i];\n"
                                 "}\n";

static void square_host(const hc_host_group_t *g, void *const *args) {
  double *x = args[1];
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) x[i] *= x[i];
}

#define CHECK(call)                                                                        \
  do {                                                                                     \
    hc_status_t st_ = (call);                                                              \
    if (st_ != HC_OK) {                                                                    \
      fprintf(stderr, "%s failed: %s: %s\n", #call, hc_status_name(st_), hc_last_error()); \
      goto done;                                                                           \
    }                                                                                      \
  } while (0)

int main(void) {
  int rc = 1;
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  hc_field_t *x = NULL;
  hc_kernel_t *k = NULL;
  hc_job_t *job = NULL;
  CHECK(hc_context_create(NULL, &ctx));
  uint32_t idx;
  CHECK(hc_device_find(ctx, "auto", &idx));
  CHECK(hc_device_open(ctx, idx, &dev));
  printf("device %s: %s\n", hc_device_name(dev), hc_device_info(dev)->name);

  /* Your own kernel on a field. */
  enum { N = 1000 };
  double host[N];
  for (int i = 0; i < N; i++) host[i] = i;
  int64_t shape[1] = {N};
  CHECK(hc_field_create(dev, HC_F64, 1, shape, &x));
  CHECK(hc_field_write(x, host));
  hc_kernel_desc_t desc = {sizeof desc, "square", square_src, NULL, square_host};
  CHECK(hc_kernel_create(dev, &desc, &k));
  long n = N;
  hc_arg_t args[2] = {HC_ARG_VAL(n), HC_ARG_BUF(hc_field_buffer(x))};
  size_t global = N;
  CHECK(hc_kernel_launch(k, 1, &global, NULL, 2, args));
  CHECK(hc_field_read(x, host));
  printf("square(999) = %.0f (%s kernel)\n", host[999], hc_language_name(hc_kernel_language(k)));

  /* A workload plugin, configured like on the command line. */
  if (hc_job_create(ctx, "simpson", &job) == HC_OK) {
    CHECK(hc_job_set_kv(job, "func=sinprod"));
    CHECK(hc_job_set_kv(job, "n=65x65x65"));
    CHECK(hc_job_run(job, dev, HC_RUN_VERIFY));
    double integral;
    CHECK(hc_job_metric_find(job, "integral", &integral));
    printf("simpson: integral = %.12f\n", integral);
  } else {
    printf("simpson workload not installed: %s\n", hc_last_error());
  }
  rc = host[999] == 998001.0 ? 0 : 1;
done:
  hc_job_destroy(job);
  hc_kernel_destroy(k);
  hc_field_destroy(x);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  return rc;
}
