/* hc-bench-trace-overhead: what tracing costs per traced command on the
 * host, off and on, through the C API.
 *
 *   hc-bench-trace-overhead [device] [commands]   (default cpu 200000)
 *
 * A command is an hc_buffer_fill of 64 bytes on the device (the cheapest
 * command every backend has, so the tracing is most of what changes).
 * Batches of commands run with tracing off, then on (to a file in $TMPDIR
 * that is removed after), five batches each; best batch of each. Prints
 * one JSON line: ns per command off and on, their difference (the cost of
 * one event), events per second with tracing on, and the events the file
 * got. Exit 0 on success, 3 if the device is missing, 4 on a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hc/hc.h>
#include <hc/trace.h>

static double batch(hc_buffer_t *b, long n) {
  const float v = 1;
  const double t0 = hc_now();
  for (long i = 0; i < n; i++)
    if (hc_buffer_fill(b, 0, &v, sizeof v, 64) != HC_OK) return -1;
  return (hc_now() - t0) / (double)n;
}

static double best_of(hc_buffer_t *b, long n) {
  double best = 1e30;
  for (int i = 0; i < 5; i++) {
    double s = batch(b, n);
    if (s < 0) return -1;
    if (s < best) best = s;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *spec = argc > 1 ? argv[1] : "cpu";
  long n = argc > 2 ? strtol(argv[2], NULL, 10) : 200000;
  if (n < 100) n = 100;
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  hc_buffer_t *b = NULL;
  uint32_t index = 0;
  if (hc_context_create(NULL, &ctx) != HC_OK || hc_device_find(ctx, spec, &index) != HC_OK ||
      hc_device_open(ctx, index, &dev) != HC_OK) {
    fprintf(stderr, "hc-bench-trace-overhead: %s\n", hc_last_error());
    hc_context_destroy(ctx);
    return 3;
  }
  int rc = 4;
  char path[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/hc-bench-trace-%d.json", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  /* every batch's events fit under the cap: none is dropped */
  hc_trace_options_t o = {.size = sizeof o, .max_events = (uint64_t)n * 6};
  hc_trace_usage_t u = {.size = sizeof u};
  if (hc_buffer_create(dev, 64, &b) == HC_OK && batch(b, n / 10) > 0) {
    const double off = best_of(b, n);
    double on = -1;
    if (off > 0 && hc_trace_start(ctx, path, &o) == HC_OK) {
      on = best_of(b, n);
      if (hc_trace_usage(ctx, index, &u) != HC_OK || hc_trace_stop(ctx) != HC_OK) on = -1;
    }
    if (off > 0 && on > 0) {
      printf("{\"device\": \"%s\", \"commands\": %ld, \"off_ns\": %.1f, \"on_ns\": %.1f, \"event_ns\": %.1f, "
             "\"events_per_s\": %.0f, \"events\": %llu}\n",
             hc_device_name(dev), n, off * 1e9, on * 1e9, (on - off) * 1e9, 1.0 / on, (unsigned long long)u.events);
      rc = 0;
    }
  }
  if (rc) fprintf(stderr, "hc-bench-trace-overhead: %s\n", hc_last_error());
  remove(path);
  hc_buffer_destroy(b);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  return rc;
}
