/* The performance history of split runs, and the plan `--split=auto`
 * makes from it.
 *
 * After every split run of this process's threads, each part's rate (rows
 * it owned per second of its own work within the workload's timed window:
 * compute less the time in exchanges and collectives) and its exchange
 * overhead (that time less the waits for other parts) are recorded for
 * (workload, its parameters, rows, device) in the kernel cache's folder
 * (kind "history", the cache's trust rules), the last HISTORY_SAMPLES of
 * each; a device's figure is their median, so one noisy run does not move
 * it. A run of one device alone records its whole rate (no overhead), and
 * a split its compute time under the devices it ran on. With auto shares
 * and a figure for every device of the set, shares follow the rates, and
 * devices are left out, slowest first, while the run predicted without one
 * is faster: rows / (sum of the rates) plus the largest overhead, none for
 * one device alone. Where the split so chosen has run before and took
 * longer than its fastest device alone, that device runs alone. A device
 * without samples may have a calibrating run's (hc__history_calibrate):
 * a short run of the configuration alone, its rate scaled to the whole
 * run's work, used only until the device has samples of its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

#define HISTORY_SAMPLES 5 /* kept per key */

/* A device's samples: from its runs alone (overhead < 0) and as a part,
 * under two keys, so that many parts do not push out its runs alone. */
typedef struct {
  double rate[2 * HISTORY_SAMPLES], overhead[2 * HISTORY_SAMPLES];
  uint32_t n;
} samples_t;

/* (workload, every parameter, rows, device) as a cache key, where device
 * names what ran: a device (device_key) or the devices of a split
 * (set_key). */
static int history_key(char key[33], hc_job_t *job, int64_t rows, const char *device) {
  char config[4096];
  size_t len = (size_t)snprintf(config, sizeof config, "rows=%lld", (long long)rows);
  for (uint32_t i = 0; i < hc_job_param_count(job) && len < sizeof config; i++) {
    const char *name, *value;
    if (hc_job_param_get(job, i, &name, &value) == HC_OK)
      len += (size_t)snprintf(config + len, sizeof config - len, " %s=%s", name, value);
  }
  if (len >= sizeof config) return 0; /* too long to key: not kept */
  const void *parts[3] = {hc_job_workload(job), config, device};
  size_t sizes[3] = {0, 0, 0};
  hc_cache_key(key, 3, parts, sizes);
  return 1;
}

/* A device by its index in the context, so that it need not be open to be
 * looked up (hc_job_find_device): its id, name and compute units. */
static int device_text(hc_context_t *ctx, uint32_t index, char *out, size_t n) {
  hc_device_info_t info = {.size = sizeof info};
  if (hc_device_query(ctx, index, &info) != HC_OK) return 0;
  return (size_t)snprintf(out, n, "%s|%s|%u", hc_device_id(ctx, index), info.name, info.compute_units) < n;
}

/* kind: "alone" (the device's whole runs) or "part" (its parts of splits). */
static int device_key(char key[33], hc_job_t *job, int64_t rows, uint32_t index, const char *kind) {
  char device[256];
  const size_t n = sizeof device - strlen(kind) - 1;
  if (!device_text(hc_job_context(job), index, device, n)) return 0;
  strcat(strcat(device, "|"), kind);
  return history_key(key, job, rows, device);
}

/* The split over the set's devices use[0..n), in part order. */
static int set_key(char key[33], hc_job_t *job, int64_t rows, const hc_devset_t *set, const uint32_t *use, uint32_t n) {
  char devices[HC_DEVSET_MAX * 256] = "split", one[256];
  size_t len = strlen(devices);
  for (uint32_t i = 0; i < n; i++) {
    if (!device_text(hc_job_context(job), hc_device_index(set->dev[use[i]]), one, sizeof one)) return 0;
    len += (size_t)snprintf(devices + len, sizeof devices - len, ",%s", one);
  }
  return len < sizeof devices && history_key(key, job, rows, devices);
}

/* Appends key's samples to s. */
static void load_key(const char *key, samples_t *s) {
  void *data = NULL;
  size_t size = 0;
  if (hc_cache_load("history", key, &data, &size) != HC_OK) return;
  char *text = realloc(data, size + 1);
  if (!text) {
    free(data);
    return;
  }
  text[size] = '\0';
  char *save = NULL;
  const uint32_t end = s->n + HISTORY_SAMPLES;
  for (char *line = strtok_r(text, "\n", &save); line && s->n < end; line = strtok_r(NULL, "\n", &save)) {
    double r, o;
    if (sscanf(line, "%lf %lf", &r, &o) == 2 && isfinite(r) && r > 0 && isfinite(o)) {
      s->rate[s->n] = r;
      s->overhead[s->n++] = o;
    }
  }
  free(text);
}

/* The device's samples of one kind ("alone", "part", "calibration"), or of
 * its runs (kind NULL: alone and part). */
static void load(hc_job_t *job, int64_t rows, uint32_t index, const char *kind, samples_t *s) {
  memset(s, 0, sizeof *s);
  char key[33];
  if ((!kind || !strcmp(kind, "alone")) && device_key(key, job, rows, index, "alone")) load_key(key, s);
  if ((!kind || !strcmp(kind, "part")) && device_key(key, job, rows, index, "part")) load_key(key, s);
  if (kind && !strcmp(kind, "calibration") && device_key(key, job, rows, index, "calibration")) load_key(key, s);
}

/* Adds a sample in front of key's, keeping the newest HISTORY_SAMPLES. A
 * cache that is off or refused keeps no history: auto shares then stay
 * what they are without one. */
static void store_key(const char *key, double rate, double overhead) {
  if (!(rate > 0) || !isfinite(rate)) return;
  samples_t s = {.n = 0};
  load_key(key, &s);
  char text[HISTORY_SAMPLES * 64];
  size_t len = (size_t)snprintf(text, sizeof text, "%.9g %.9g\n", rate, isfinite(overhead) ? overhead : -1.0);
  for (uint32_t i = 0; i + 1 < HISTORY_SAMPLES && i < s.n; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, "%.9g %.9g\n", s.rate[i], s.overhead[i]);
  (void)hc_cache_store("history", key, text, len);
}

void hc__history_record(hc_job_t *job, int64_t rows, hc_device_t *dev, double rate, double overhead) {
  char key[33];
  if (device_key(key, job, rows, hc_device_index(dev), overhead < 0 ? "alone" : "part")) store_key(key, rate, overhead);
}

void hc__history_record_part(hc_job_t *job, int64_t rows, hc_device_t *dev, hc_part_t *p, double compute_s) {
  /* Over the workload's timed region: exchanges and collectives before it
   * (its setup, which may wait for another part's kernel build) are not
   * the part's work. */
  hc_part_stats_t s;
  double in_ops = 0;
  hc__part_timed_stats(p, &s, &in_ops);
  const double busy = compute_s - in_ops;
  /* Rows that moved while it ran (hc_part_rebalance): the rate its last
   * window measured. */
  const double rate = p->balance.moves ? p->balance.rate : busy > 0 ? (double)(p->hi - p->lo) / busy : 0;
  if (busy > HISTORY_MIN_BUSY * compute_s && rate > 0)
    hc__history_record(job, rows, dev, rate, in_ops - s.idle_s > 0 ? in_ops - s.idle_s : 0);
}

void hc__history_record_split(hc_job_t *job, int64_t rows, const hc_devset_t *set, const uint32_t *use, uint32_t n,
                              double compute_s) {
  char key[33];
  if (compute_s > 0 && set_key(key, job, rows, set, use, n)) store_key(key, (double)rows / compute_s, -1);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of the n values of v that are >= 0; -1 when none is. */
static double median(const double *v, uint32_t n) {
  double w[2 * HISTORY_SAMPLES];
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (v[i] >= 0) w[m++] = v[i];
  if (!m) return -1;
  qsort(w, m, sizeof *w, cmp_double);
  return m % 2 ? w[m / 2] : 0.5 * (w[m / 2 - 1] + w[m / 2]);
}

/* The median rate of the device's samples of kind (NULL: both); 0 when
 * it has none. */
static double figure(hc_job_t *job, int64_t rows, const hc_device_t *dev, const char *kind) {
  samples_t s;
  load(job, rows, hc_device_index(dev), kind, &s);
  return s.n ? median(s.rate, s.n) : 0;
}

double hc__history_rate(hc_job_t *job, int64_t rows, const hc_device_t *dev) { return figure(job, rows, dev, NULL); }

static double predict(int64_t rows, const double *rate, const double *overhead, const uint32_t *use, uint32_t n) {
  double sum = 0, over = 0;
  for (uint32_t i = 0; i < n; i++) {
    sum += rate[use[i]];
    if (overhead[use[i]] > over) over = overhead[use[i]];
  }
  return (double)rows / sum + (n > 1 ? over : 0);
}

/* The device's rate from its runs alone (samples without an overhead: a
 * part's rate leaves out the exchanges and the waits, a whole run's has
 * none to leave out); 0 when it has not run alone. */
static double alone_rate(hc_job_t *job, int64_t rows, const hc_device_t *dev) {
  return figure(job, rows, dev, "alone");
}

/* The highest rate alone among the devices use[0..n), and which (*best);
 * 0 when none of them has run alone. */
static double best_alone(hc_job_t *job, const hc_devset_t *set, int64_t rows, const uint32_t *use, uint32_t n,
                         uint32_t *best) {
  double top = 0;
  for (uint32_t i = 0; i < n; i++) {
    const double r = alone_rate(job, rows, set->dev[use[i]]);
    if (r > top) top = r, *best = use[i];
  }
  return top;
}

int hc__history_plan(hc_job_t *job, const hc_devset_t *set, int64_t rows, int64_t run_rows, double *weight,
                     uint32_t *use, uint32_t *nuse, char *why, size_t why_size) {
  double rate[HC_DEVSET_MAX], overhead[HC_DEVSET_MAX];
  uint32_t calibrated = 0;
  for (uint32_t i = 0; i < set->n; i++) {
    samples_t s;
    load(job, rows, hc_device_index(set->dev[i]), NULL, &s);
    if (!s.n) { /* no run of its own yet: its short calibrating run, if it had one */
      load(job, rows, hc_device_index(set->dev[i]), "calibration", &s);
      calibrated += s.n > 0;
    }
    if (!s.n) {
      /* This run calibrates. Shares from the devices' declared fp32 peaks
       * where every device declares one (a GPU beside the host's cores
       * then gets most of the rows, not half), else equal shares. */
      int peaks = 1;
      for (uint32_t k = 0; k < set->n; k++) peaks &= hc_device_info(set->dev[k])->peak_fp32_gflops > 0;
      for (uint32_t k = 0; peaks && k < set->n; k++) weight[k] = hc_device_info(set->dev[k])->peak_fp32_gflops;
      snprintf(why, why_size, "%s: no history yet for %s (this run's is kept)",
               peaks ? "shares from the devices' peak rates" : "equal shares", hc_device_name(set->dev[i]));
      return 0;
    }
    rate[i] = median(s.rate, s.n);
    overhead[i] = median(s.overhead, s.n);
    if (overhead[i] < 0) overhead[i] = 0;
  }
  uint32_t n = set->n;
  for (uint32_t i = 0; i < n; i++) use[i] = i;
  const double all = predict(run_rows, rate, overhead, use, n);
  double now = all;
  char dropped[256] = "";
  while (n > 1) {
    uint32_t slow = 0;
    for (uint32_t i = 1; i < n; i++)
      if (rate[use[i]] < rate[use[slow]]) slow = i;
    uint32_t fewer[HC_DEVSET_MAX], m = 0;
    for (uint32_t i = 0; i < n; i++)
      if (i != slow) fewer[m++] = use[i];
    const double t = predict(run_rows, rate, overhead, fewer, m);
    if (!(t < now)) break;
    size_t l = strlen(dropped);
    snprintf(dropped + l, sizeof dropped - l, "%s%s", l ? ", " : "", hc_device_name(set->dev[use[slow]]));
    memcpy(use, fewer, m * sizeof *use);
    n = m;
    now = t;
  }
  *nuse = n;
  for (uint32_t i = 0; i < set->n; i++) weight[i] = rate[i];
  /* The model leaves out what does not scale with rows (launches, the
   * parts' start, a short run's fixed costs): where this split has run
   * before and was slower than its fastest device alone, that device runs
   * alone. */
  uint32_t best = 0;
  const double alone = best_alone(job, set, rows, use, n, &best);
  samples_t measured;
  char key[33];
  if (n > 1 && alone > 0 && set_key(key, job, rows, set, use, n)) {
    memset(&measured, 0, sizeof measured);
    load_key(key, &measured);
    const double split_s = measured.n ? (double)rows / median(measured.rate, measured.n) : 0;
    if (split_s > rows / alone) {
      snprintf(why, why_size,
               "shares from the history; measured: %.3g s split against %.3g s on %s alone, which runs alone", split_s,
               (double)rows / alone, hc_device_name(set->dev[best]));
      use[0] = best;
      *nuse = 1;
      return 1;
    }
  }
  const char *source = calibrated == set->n ? "shares from short calibrating runs"
                       : calibrated         ? "shares from the history and short calibrating runs"
                                            : "shares from the history";
  if (dropped[0])
    snprintf(why, why_size,
             "%s; %s left out: the history predicts %.3g s without, %.3g s with (its rate does not pay for the "
             "exchanges)",
             source, dropped, now, all);
  else
    snprintf(why, why_size, "%s (predicted %.3g s)", source, all);
  return 1;
}

hc_status_t hc__history_calibrate(hc_job_t *job, const hc_devset_t *set, const hc_split_t *split, char *ran,
                                  size_t ran_size) {
  ran[0] = '\0';
  if (!HC_SPLIT_HAS_CALIBRATE(split) || !memchr(split->calibrate, '\0', sizeof split->calibrate) ||
      !split->calibrate[0] || !(split->calibrate_work > 0 && split->calibrate_work <= 1) || !hc_cache_enabled())
    return HC_OK;
  const char *wl = hc_job_workload(job);
  for (uint32_t i = 0; i < set->n; i++) {
    hc_device_t *dev = set->dev[i];
    const uint32_t index = hc_device_index(dev);
    samples_t s;
    char key[33];
    load(job, split->rows, index, NULL, &s);
    if (s.n || !device_key(key, job, split->rows, index, "calibration")) continue;
    load_key(key, &s);
    if (s.n) continue;
    hc_job_t *short_run = NULL;
    hc_status_t st = hc__job_clone(job, &short_run);
    char params[sizeof split->calibrate], *save = NULL;
    memcpy(params, split->calibrate, sizeof params);
    for (char *kv = strtok_r(params, " ", &save); kv && st == HC_OK; kv = strtok_r(NULL, " ", &save))
      if (hc_job_set_kv(short_run, kv) != HC_OK)
        st = hc_error(HC_ERR_PLUGIN, "workload '%s' declares a calibrating run with '%s', which it refuses: %s", wl, kv,
                      hc_last_error());
    if (st == HC_OK && (st = hc_job_run(short_run, dev, 0)) != HC_OK)
      st = hc_error(st, "the calibrating run of '%s' (%s) on %s: %s", wl, split->calibrate, hc_device_name(dev),
                    hc_last_error());
    hc_job_times_t t = {0};
    if (st == HC_OK) hc_job_times(short_run, &t);
    hc_job_destroy(short_run);
    if (st != HC_OK) return st;
    if (t.compute_s > 0) {
      store_key(key, (double)split->rows * split->calibrate_work / t.compute_s, -1);
      const size_t len = strlen(ran);
      snprintf(ran + len, ran_size - len, "%s%s %.3g s (wall %.3g s)", len ? ", " : "", hc_device_name(dev),
               t.compute_s, t.wall_s);
    }
  }
  return HC_OK;
}

/* Only runs of a device alone count here (alone_rate). */
void hc__history_best_single(hc_job_t *job, hc_devset_t *set, int64_t rows) {
  double best = 0;
  set->best_single_s = -1;
  for (uint32_t i = 0; i < set->n; i++) {
    const double r = alone_rate(job, rows, set->dev[i]);
    if (!(r > 0)) {
      snprintf(set->best_single, sizeof set->best_single, "no run of %s alone with these parameters in the history",
               hc_device_name(set->dev[i]));
      return;
    }
    if (r > best) {
      best = r;
      snprintf(set->best_single, sizeof set->best_single, "%s", hc_device_name(set->dev[i]));
    }
  }
  set->best_single_s = (double)rows / best;
}

/* The rows of the job's split, 0 when its workload declares none for
 * these parameters (it has no figures then). */
static int64_t job_rows(hc_job_t *job) {
  const hc_workload_ops_t *ops = hc__workload_ops(hc_job_context(job), hc_job_workload(job));
  hc_split_t split = {.size = sizeof split};
  if (!ops || !ops->split || ops->split(job, &split) != HC_OK || split.kind == HC_SPLIT_NONE || split.rows < 1)
    return 0;
  return split.rows;
}

HC_API void hc_job_record_run(hc_job_t *job, hc_device_t *dev) {
  if (!job || !dev) return;
  const int64_t rows = job_rows(job);
  hc_job_times_t t;
  hc_job_times(job, &t);
  if (rows && t.compute_s > 0) hc__history_record(job, rows, dev, (double)rows / t.compute_s, -1);
}

HC_API hc_status_t hc_job_find_device(hc_job_t *job, uint32_t *index, char *why, size_t why_size) {
  if (!job || !index) return hc_error(HC_ERR_INVALID_ARG, "hc_job_find_device: NULL argument");
  char none[1];
  if (!why || !why_size) why = none, why_size = sizeof none;
  hc_context_t *ctx = hc_job_context(job);
  const char *wl = hc_job_workload(job);
  uint32_t rule = 0;
  hc_status_t st = hc_device_find_auto(ctx, wl, &rule);
  if (st != HC_OK) return st;
  *index = rule;
  const int64_t rows = job_rows(job);
  if (!rows) {
    snprintf(why, why_size, "%s: '%s' keeps no history for these parameters", hc_device_id(ctx, rule), wl);
    return HC_OK;
  }
  if (!hc_cache_enabled()) {
    snprintf(why, why_size, "%s: the performance history is off with the kernel cache (HC_CACHE=0)",
             hc_device_id(ctx, rule));
    return HC_OK;
  }
  /* The rule's device must have a figure: it is the one to beat, and its
   * first run is its calibration. */
  samples_t s;
  load(job, rows, rule, NULL, &s);
  if (!s.n) {
    snprintf(why, why_size, "%s: no history yet for it with these parameters (this run's is kept)",
             hc_device_id(ctx, rule));
    return HC_OK;
  }
  const double rule_rate = median(s.rate, s.n);
  double best_rate = rule_rate;
  uint32_t best = rule, figures = 1;
  for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
    if (i == rule || !hc_workload_can_run(ctx, wl, i, NULL)) continue;
    load(job, rows, i, NULL, &s);
    if (!s.n) continue;
    figures++;
    const double r = median(s.rate, s.n);
    if (r > best_rate) best_rate = r, best = i;
  }
  *index = best;
  if (best == rule)
    snprintf(why, why_size, "%s: the fastest in the history (%.4g rows/s, %u device%s with a figure)",
             hc_device_id(ctx, best), best_rate, figures, figures == 1 ? "" : "s");
  else
    snprintf(why, why_size, "%s: the fastest in the history (%.4g rows/s against %.4g on %s)", hc_device_id(ctx, best),
             best_rate, rule_rate, hc_device_id(ctx, rule));
  return HC_OK;
}
