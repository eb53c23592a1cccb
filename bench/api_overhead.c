/* hc-bench-api-overhead: the C API's cost of one small run, the floor that
 * the Python package's ctx.run() adds to (bench/python_overhead.py).
 *
 *   hc-bench-api-overhead [device] [runs] [run|pipeline]   (default cpu 10000 run)
 *
 * A run is what ctx.run('reduce', input=x, op='sum') does: a job, one
 * parameter, a 16-element f64 input field written from the host, the run,
 * the output taken and freed. A pipeline is what
 * ctx.pipeline(PIPELINE_TEXT).run() does: parsed, run, destroyed. Prints
 * one JSON line: seconds per run, best of five batches. Exit 0 on success,
 * 3 if the device is missing, 4 on a failed run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/hc.h>
#include <hc/pipeline.h>

static int one_run(hc_context_t *ctx, hc_device_t *dev, const double *x) {
  hc_job_t *job = NULL;
  hc_field_t *in = NULL, *out = NULL;
  int64_t n = 16;
  hc_status_t st = hc_job_create(ctx, "reduce", &job);
  if (st == HC_OK) st = hc_job_set(job, "op", "sum");
  if (st == HC_OK) st = hc_field_create(dev, HC_F64, 1, &n, &in);
  if (st == HC_OK) st = hc_field_write(in, x);
  if (st == HC_OK) st = hc_job_set_input(job, "in", in);
  if (st == HC_OK) st = hc_job_run(job, dev, 0);
  if (st == HC_OK) st = hc_job_take_output(job, "value", &out);
  hc_field_destroy(out);
  hc_job_destroy(job);
  hc_field_destroy(in);
  if (st != HC_OK) fprintf(stderr, "hc-bench-api-overhead: %s\n", hc_last_error());
  return st == HC_OK ? 0 : 4;
}

/* Kept equal to bench/python_overhead.py's. */
#define PIPELINE_TEXT "simpson n=9x9x9 func=sinprod @%s | scale factor=2"

static int one_pipeline(hc_context_t *ctx, const char *text) {
  hc_pipeline_t *p = NULL;
  hc_status_t st = hc_pipeline_parse(ctx, text, &p);
  if (st == HC_OK) st = hc_pipeline_run(p, 0);
  hc_pipeline_destroy(p);
  if (st != HC_OK) fprintf(stderr, "hc-bench-api-overhead: %s\n", hc_last_error());
  return st == HC_OK ? 0 : 4;
}

int main(int argc, char **argv) {
  const char *spec = argc > 1 ? argv[1] : "cpu";
  long runs = argc > 2 ? strtol(argv[2], NULL, 10) : 10000;
  if (runs < 1) runs = 1;
  int pipeline = argc > 3 && !strcmp(argv[3], "pipeline");
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  uint32_t index = 0;
  if (hc_context_create(NULL, &ctx) != HC_OK || hc_device_find(ctx, spec, &index) != HC_OK ||
      hc_device_open(ctx, index, &dev) != HC_OK) {
    fprintf(stderr, "hc-bench-api-overhead: %s\n", hc_last_error());
    hc_context_destroy(ctx);
    return 3;
  }
  double x[16];
  for (int i = 0; i < 16; i++) x[i] = 1.0;
  char text[256];
  snprintf(text, sizeof text, PIPELINE_TEXT, hc_device_name(dev));
  int rc = 0;
  for (int i = 0; i < 50 && !rc; i++) rc = pipeline ? one_pipeline(ctx, text) : one_run(ctx, dev, x); /* warm */
  double best = 1e30;
  for (int batch = 0; batch < 5 && !rc; batch++) {
    double t0 = hc_now();
    for (long i = 0; i < runs / 5 + 1 && !rc; i++) rc = pipeline ? one_pipeline(ctx, text) : one_run(ctx, dev, x);
    double per = (hc_now() - t0) / (double)(runs / 5 + 1);
    if (per < best) best = per;
  }
  if (!rc) printf("{\"device\": \"%s\", \"seconds_per_run\": %.9g}\n", hc_device_name(dev), best);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  return rc;
}
