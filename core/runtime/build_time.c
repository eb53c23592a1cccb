/* Kernel build time, kept out of the workloads' timed regions.
 *
 * A program build is timed where it happens (hc_kernel_create). Some
 * drivers finish the build only when a kernel first runs: PoCL compiles a
 * work-group function for each group size a kernel is launched with, at
 * the command's start (the cuda backend's kernel_create queries the
 * function, which loads it, and NVIDIA's OpenCL builds in full at
 * clBuildProgram). No launch can do that work without running the kernel (a
 * launch of one group, of no items or past the kernel's bounds is a
 * different specialisation, or writes the outputs), so the first launch of
 * each (kernel, range, group) is the one a driver may build in: on a CPU
 * device running source kernels the core drains the queue before it, waits
 * for it, and charges the time it took beyond the kernel's own device time
 * to the job as build time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The calling thread's job (hc__build_clock_swap), or NULL. */
static _Thread_local hc__build_clock_t *tl_clock;

hc__build_clock_t *hc__build_clock_swap(hc__build_clock_t *clock) {
  hc__build_clock_t *previous = tl_clock;
  tl_clock = clock;
  return previous;
}

/* With d->cmd_lock held: whether the calling thread's device timer span is
 * open on d (the workload's timed region). */
static int span_is_mine_locked(const hc_device_t *d) {
  return d->timer && pthread_equal(d->timer_owner, pthread_self());
}

static void charge(int in_span, double seconds, int first_launch) {
  hc__build_clock_t *c = tl_clock;
  if (!c || !(seconds > 0)) return;
  c->total_s += seconds;
  if (first_launch) c->first_launch_s += seconds;
  if (in_span) c->in_span_s += seconds;
}

void hc__build_charge(hc_device_t *d, double seconds) {
  if (!tl_clock) return;
  pthread_mutex_lock(&d->cmd_lock);
  const int in_span = span_is_mine_locked(d);
  pthread_mutex_unlock(&d->cmd_lock);
  charge(in_span, seconds, 0);
}

/* FNV-1a over the launch's identity; never 0 (an empty slot). */
static uint64_t launch_key(const hc_kernel_t *k, const hc_launch_t *l) {
  uint64_t h = 1469598103934665603ull;
  const void *program = k->program;
#define MIX_(p, n)                         \
  for (size_t i_ = 0; i_ < (n); i_++) {    \
    h ^= ((const unsigned char *)(p))[i_]; \
    h *= 1099511628211ull;                 \
  }
  MIX_(&program, sizeof program);
  MIX_(k->name, strlen(k->name));
  MIX_(&l->dims, sizeof l->dims);
  MIX_(l->global, sizeof l->global);
  MIX_(l->local, sizeof l->local);
#undef MIX_
  return h ? h : 1;
}

/* With d->cmd_lock held: records the launch's identity; 1 when it is new.
 * Once the table is full every launch counts as seen: the kernels of a run
 * are a few dozen, and a table that fills means geometries that change per
 * launch, which a build per launch would not survive anyway. */
static int first_of_its_kind_locked(hc_device_t *d, const hc_kernel_t *k, const hc_launch_t *l) {
  if (!d->launched) {
    if (!(d->launched = calloc(HC__LAUNCHED_SLOTS, sizeof *d->launched))) return 0;
  }
  if (d->nlaunched >= HC__LAUNCHED_SLOTS / 2) return 0;
  const uint64_t key = launch_key(k, l);
  for (uint32_t i = (uint32_t)key % HC__LAUNCHED_SLOTS;; i = (i + 1) % HC__LAUNCHED_SLOTS) {
    if (d->launched[i] == key) return 0;
    if (!d->launched[i]) {
      d->launched[i] = key;
      d->nlaunched++;
      return 1;
    }
  }
}

hc_status_t hc__launch_measured(hc_kernel_t *k, const hc_launch_t *l) {
  hc_device_t *d = k->dev;
  const hc_backend_ops_t *ops = &d->backend->ops;
  const int traced_ctx = HC__TRACING(d->ctx);
  /* Only source kernels are built, only a backend with device times can
   * tell the build from the kernel's run, and only a CPU device compiles at
   * the launch (PoCL's work-group functions, tenths of a second each): a
   * GPU's drivers finish at the build and kernel_create, and the waits
   * would only slow their first launches. */
  const int first = k->program && d->info.type == HC_DEVICE_CPU && ops->trace_time && ops->trace_command_begin &&
                    ops->trace_command_end && first_of_its_kind_locked(d, k, l);
  double t0 = 0;
  hc_status_t st = HC_OK;
  if (first) {
    st = ops->finish(d->handle); /* what was queued before is not this launch's */
    t0 = hc_now();
  }
  hc__trace_cmd_t tc;
  const int traced = st == HC_OK && traced_ctx && hc__trace_cmd_begin(d->ctx, d, &tc);
  void *record = first && st == HC_OK && !traced ? ops->trace_command_begin(d->handle) : NULL;
  if (st == HC_OK) st = ops->launch(d->handle, k->handle, l);
  if (record) {
    if (st == HC_OK)
      ops->trace_command_end(d->handle, record);
    else if (ops->trace_discard)
      ops->trace_discard(d->handle, record);
  }
  if (traced) {
    tc.launch = l;
    hc__trace_cmd_end(&tc, st, HC__TRACE_KERNEL, k->name, 0, NULL);
  }
  if (!first || st != HC_OK) return st;
  st = ops->finish(d->handle);
  const double t1 = hc_now();
  double run = 0, s = 0, e = 0;
  if (record) {
    if (st != HC_OK) {
      if (ops->trace_discard) ops->trace_discard(d->handle, record);
    } else if (ops->trace_time(d->handle, record, &s, &e) == HC_OK && e > s) {
      run = e - s;
    }
  } else if (traced && (run = hc__trace_device_sync(d)) < 0) {
    run = 0;
  }
  if (st != HC_OK) return st;
  const double build = t1 - t0 - run;
  charge(span_is_mine_locked(d), build, 1);
  hc__trace_t *tr = traced_ctx && build > 0 ? hc__trace_enter(d->ctx) : NULL;
  if (tr) {
    char what[160], value[64];
    snprintf(what, sizeof what, "first launch of %s on %s", k->name, d->id);
    snprintf(value, sizeof value, "%.3f ms beyond the kernel's %.3f ms", 1e3 * build, 1e3 * run);
    hc__trace_host(tr, HC__TRACE_BUILD, what, t0, "build", value);
    hc__trace_leave(tr);
  }
  return st;
}
