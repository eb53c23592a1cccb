/* The trace-event format checker of the tests (trace_check.h). */
#include "trace_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void problem(trace_check_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(trace_check_t *r, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!r->problems) snprintf(r->first, sizeof r->first, "%s", msg);
  if (r->problems < 8) fprintf(stderr, "trace: %s\n", msg);
  r->problems++;
}

typedef struct {
  long pid, tid;
  double ts, dur;
  const char *name;
} span_t;

static int by_track_then_time(const void *a, const void *b) {
  const span_t *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->dur > y->dur ? -1 : x->dur < y->dur; /* the enclosing span first */
}

typedef struct {
  long pid, tid;
  int device; /* 1: "<id> queue" */
} track_t;

/* A flow phase event: the start ("s") or end ("f") of an arrow. */
typedef struct {
  long pid, tid;
  double ts;
  long long id;
  int end;
  size_t index;
} flow_t;

/* Is ts inside an "X" event of the track? sp sorted by track, then time. */
static int inside_span(const span_t *sp, size_t n, long pid, long tid, double ts) {
  for (size_t i = 0; i < n; i++)
    if (sp[i].pid == pid && sp[i].tid == tid && sp[i].ts <= ts && ts <= sp[i].ts + sp[i].dur) return 1;
  return 0;
}

static void check_flows(trace_check_t *r, const span_t *sp, size_t nsp, const flow_t *fl, size_t nfl) {
  for (size_t i = 0; i < nfl; i++) {
    const flow_t *f = &fl[i];
    if (!inside_span(sp, nsp, f->pid, f->tid, f->ts))
      problem(r, "event %zu: the flow %s of arrow %lld at %.3f lies in no event of track %ld", f->index,
              f->end ? "end" : "start", f->id, f->ts, f->tid);
    if (!f->end) continue;
    const flow_t *start = NULL;
    for (size_t j = 0; j < nfl && !start; j++)
      if (!fl[j].end && fl[j].id == f->id) start = &fl[j];
    if (!start)
      problem(r, "event %zu: arrow %lld ends but never starts", f->index, f->id);
    else if (start->ts > f->ts)
      problem(r, "event %zu: arrow %lld ends at %.3f, before it starts (%.3f)", f->index, f->id, f->ts, start->ts);
    else
      r->flows++;
  }
}

static const track_t *find_track(const track_t *t, size_t n, long pid, long tid) {
  for (size_t i = 0; i < n; i++)
    if (t[i].pid == pid && t[i].tid == tid) return &t[i];
  return NULL;
}

void trace_check(const json_t *doc, trace_check_t *r) {
  memset(r, 0, sizeof *r);
  const json_t *evs = json_object_get(doc, "traceEvents");
  if (!json_is_object(doc) || !json_is_array(evs)) {
    problem(r, "not an object with a traceEvents array");
    return;
  }
  size_t n = json_array_size(evs);
  span_t *sp = calloc(n ? n : 1, sizeof *sp);
  track_t *tr = calloc(n ? n : 1, sizeof *tr);
  long *pids = calloc(n ? n : 1, sizeof *pids);
  flow_t *fl = calloc(n ? n : 1, sizeof *fl);
  size_t nsp = 0, ntr = 0, npids = 0, nfl = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(evs, i);
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *name = json_string_value(json_object_get(e, "name"));
    const json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
    const json_t *args = json_object_get(e, "args");
    if (!json_is_object(e) || !ph || !name || !json_is_integer(pid) || !json_is_integer(tid)) {
      problem(r, "event %zu: needs string ph and name, integer pid and tid", i);
      continue;
    }
    if (args && !json_is_object(args)) problem(r, "event %zu (%s): args is not an object", i, name);
    if (!strcmp(ph, "M")) {
      if (!strcmp(name, "process_name") || !strcmp(name, "thread_name")) {
        const char *v = json_string_value(json_object_get(args, "name"));
        if (!v || !*v) {
          problem(r, "event %zu: %s without args.name", i, name);
          continue;
        }
        if (name[0] == 'p')
          pids[npids++] = (long)json_integer_value(pid);
        else {
          if (find_track(tr, ntr, (long)json_integer_value(pid), (long)json_integer_value(tid)))
            problem(r, "track %lld named twice", (long long)json_integer_value(tid));
          size_t l = strlen(v);
          tr[ntr].pid = (long)json_integer_value(pid);
          tr[ntr].tid = (long)json_integer_value(tid);
          tr[ntr].device = l > 6 && !strcmp(v + l - 6, " queue");
          r->device_tracks += tr[ntr].device;
          r->host_tracks += !tr[ntr].device;
          ntr++;
        }
      } else if (!strcmp(name, "process_sort_index") || !strcmp(name, "thread_sort_index")) {
        if (!json_is_integer(json_object_get(args, "sort_index")))
          problem(r, "event %zu: %s without an integer args.sort_index", i, name);
      } else {
        problem(r, "event %zu: unknown metadata event '%s'", i, name);
      }
    } else if (!strcmp(ph, "X")) {
      const json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
      if (!json_is_number(ts) || !json_is_number(dur) || json_number_value(ts) < 0 || json_number_value(dur) < 0 ||
          !json_is_string(json_object_get(e, "cat"))) {
        problem(r, "event %zu (%s): an X event needs numbers ts, dur >= 0 and a string cat", i, name);
        continue;
      }
      sp[nsp].pid = (long)json_integer_value(pid);
      sp[nsp].tid = (long)json_integer_value(tid);
      sp[nsp].ts = json_number_value(ts);
      sp[nsp].dur = json_number_value(dur);
      sp[nsp].name = name;
      nsp++;
    } else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
      const json_t *ts = json_object_get(e, "ts"), *id = json_object_get(e, "id");
      const char *bp = json_string_value(json_object_get(e, "bp"));
      if (!json_is_number(ts) || !json_is_integer(id) || !json_is_string(json_object_get(e, "cat"))) {
        problem(r, "event %zu (%s): a flow event needs a number ts, an integer id and a string cat", i, name);
        continue;
      }
      if (ph[0] == 'f' && (!bp || strcmp(bp, "e")))
        problem(r, "event %zu (%s): a flow end binds to its enclosing event (\"bp\":\"e\")", i, name);
      fl[nfl] = (flow_t){(long)json_integer_value(pid),
                         (long)json_integer_value(tid),
                         json_number_value(ts),
                         (long long)json_integer_value(id),
                         ph[0] == 'f',
                         i};
      nfl++;
    } else if (!strcmp(ph, "i")) {
      if (!json_is_number(json_object_get(e, "ts"))) problem(r, "event %zu (%s): an instant needs ts", i, name);
    } else {
      problem(r, "event %zu (%s): unexpected ph '%s'", i, name, ph);
    }
  }
  r->tracks = (int)ntr;
  r->complete = nsp;
  qsort(sp, nsp, sizeof *sp, by_track_then_time);
  check_flows(r, sp, nsp, fl, nfl);
  /* Per track: device queues never overlap; host spans nest. */
  span_t *stack[64];
  int depth = 0;
  for (size_t i = 0; i < nsp; i++) {
    const span_t *s = &sp[i];
    const int first = i == 0 || sp[i - 1].pid != s->pid || sp[i - 1].tid != s->tid;
    const track_t *t = find_track(tr, ntr, s->pid, s->tid);
    if (first) {
      depth = 0;
      int named = 0;
      for (size_t p = 0; p < npids; p++) named |= pids[p] == s->pid;
      if (!named) problem(r, "process %ld has no process_name", s->pid);
      if (!t) problem(r, "track %ld of process %ld has no thread_name", s->tid, s->pid);
    }
    if (!t) continue;
    if (t->device) {
      /* (times are written to the ns: an event that starts as the one
       * before it ends may sum a rounding above it) */
      if (!first && s->ts < sp[i - 1].ts + sp[i - 1].dur - 0.0005)
        problem(r, "device track %ld: '%s' at %.3f overlaps '%s' (%.3f + %.3f)", s->tid, s->name, s->ts, sp[i - 1].name,
                sp[i - 1].ts, sp[i - 1].dur);
      continue;
    }
    while (depth > 0 && stack[depth - 1]->ts + stack[depth - 1]->dur <= s->ts) depth--;
    if (depth > 0 && s->ts + s->dur > stack[depth - 1]->ts + stack[depth - 1]->dur)
      problem(r, "host track %ld: '%s' (%.3f + %.3f) straddles the end of '%s' (%.3f + %.3f)", s->tid, s->name, s->ts,
              s->dur, stack[depth - 1]->name, stack[depth - 1]->ts, stack[depth - 1]->dur);
    else if (depth < 64)
      stack[depth++] = &sp[i];
  }
  free(sp);
  free(tr);
  free(pids);
  free(fl);
}

json_t *trace_check_file(const char *path, trace_check_t *r) {
  json_error_t e;
  json_t *doc = json_load_file(path, 0, &e);
  if (!doc) {
    memset(r, 0, sizeof *r);
    problem(r, "%s: not JSON (%s, line %d)", path, e.text, e.line);
    return NULL;
  }
  trace_check(doc, r);
  return doc;
}

long trace_track(const json_t *doc, const char *name) {
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *v = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
    if (!strcmp(json_string_value(json_object_get(e, "ph")), "M") &&
        !strcmp(json_string_value(json_object_get(e, "name")), "thread_name") && v && !strcmp(v, name))
      return (long)json_integer_value(json_object_get(e, "tid"));
  }
  return -1;
}

double trace_sum(const json_t *doc, long tid, double from, double to, const char *arg, size_t *count) {
  double sum = 0;
  size_t i, c = 0;
  const json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    if (strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
        json_integer_value(json_object_get(e, "tid")) != tid)
      continue;
    const double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
    if (to >= 0 && (ts < from || ts + dur > to)) continue;
    sum += arg ? json_number_value(json_object_get(json_object_get(e, "args"), arg)) : dur;
    c++;
  }
  if (count) *count = c;
  return sum;
}
