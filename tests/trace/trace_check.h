/* A checker of the Chrome trace-event files hc writes (docs/trace.md), for
 * the tests: well-formed events, named tracks, spans that nest on a host
 * track, no overlap on a device track, flow arrows whose ends lie in an
 * event of their track and whose start comes first. */
#ifndef HC_TEST_TRACE_CHECK_H
#define HC_TEST_TRACE_CHECK_H

#include <jansson.h>
#include <stddef.h>

typedef struct {
  int problems;      /* 0: the trace is valid */
  char first[512];   /* the first problem, for the failure message */
  int tracks;        /* thread tracks named */
  int device_tracks; /* ... of them device queues ("<id> queue") */
  int host_tracks;
  size_t complete; /* "X" events */
  size_t flows;    /* flow arrows: "f" events matched to their "s" */
} trace_check_t;

/* Checks a parsed trace document; fills *r. Every problem is also printed
 * to stderr (up to a few). */
void trace_check(const json_t *doc, trace_check_t *r);
/* Loads path and checks it; NULL (with r->problems 1) when it is not JSON.
 * The caller owns the document. */
json_t *trace_check_file(const char *path, trace_check_t *r);
/* The tid of the track named name in doc, or -1. */
long trace_track(const json_t *doc, const char *name);
/* Sum of "dur" (µs) of the "X" events on track tid whose span lies within
 * [from, to] (µs; to < 0: no bounds), and their count. */
double trace_sum(const json_t *doc, long tid, double from, double to, const char *arg, size_t *count);

#endif
