/* Tracing: events of a context buffered per thread and written as Chrome
 * trace-event JSON (docs/trace.md). One process track (pid), one thread
 * track per device queue and one per host thread that did traced work.
 *
 * The hot path: hc__trace_enter is one load and a branch when tracing is
 * off; on, an event is a few atomics and a copy into the thread's own
 * buffer (no lock). A full buffer goes as it is, binary, to an anonymous
 * spill file under the trace's lock (a few microseconds per buffer); the
 * JSON is written at stop, from the spill file and the buffers, so no
 * formatting happens while the traced work runs. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc/trace.h"
#include "internal.h"

#define CHUNK 512    /* events per thread buffer */
#define MAX_DEPTH 32 /* nested ranges per thread */
#define DEFAULT_MAX_EVENTS 1000000u
#define DEVICE_TID0 1000 /* device tracks' tids: DEVICE_TID0 + index */
#define FLOWS_IN 4       /* arrows into one launch (further ones are not drawn) */
#define FLOW_SLOTS 64    /* a device's writes that no launch has waited for yet */

enum { CLS_COMPUTE, CLS_TRANSFER, CLS_HOST };
static const struct {
  const char *cat;
  int cls;
} kinds[] = {
#define KIND_ROW_(id, name, c) [HC__TRACE_##id] = {name, CLS_##c},
    HC__TRACE_KINDS(KIND_ROW_)
#undef KIND_ROW_
};

/* An event's flow arrows (ids; 0: none): out of a write, into a launch. */
typedef struct {
  uint32_t out, n_in;
  uint32_t in[FLOWS_IN];
} flows_t;

typedef struct {
  int64_t t0, t1; /* ns from the trace's start */
  int64_t dev_ns; /* device time; -1: not a device event */
  uint64_t bytes;
  int32_t tid;
  uint32_t kind;
  char name[80];
  char key[8], value[48];
  flows_t flows;
} ev_t;

typedef struct tbuf {
  struct tbuf *next;
  int32_t tid;
  uint32_t n;
  ev_t ev[CHUNK];
  uint32_t depth;
  double range_t0[MAX_DEPTH];
  char range_name[MAX_DEPTH][64];
} tbuf_t;

typedef struct {
  uint64_t events, compute_ns, transfer_ns; /* atomics */
} dev_usage_t;

/* Commands of a device whose backend keeps their times, queued and not
 * yet turned into events (hc__trace_device_sync). */
#define PENDING_MAX 256
typedef struct {
  void *record;
  double t0, t1; /* the host's view: before queueing, after */
  uint32_t kind;
  uint64_t bytes;
  char name[80];
  char peer[48];
  flows_t flows;
} pending_cmd_t;
typedef struct {
  pthread_mutex_t lock;
  hc_device_t *dev; /* the open device the records belong to */
  uint32_t n;
  int64_t last_end;
  int64_t last_dev_ns; /* the device time of the last command resolved */
  pending_cmd_t cmd[PENDING_MAX];
  /* the device's memory written by a traced command and not yet taken by
   * a launch, with the write's flow id (oldest first) */
  uint32_t nwritten;
  struct {
    void *mem;
    uint32_t id;
  } written[FLOW_SLOTS];
} pending_t;

struct hc__trace {
  hc_context_t *ctx;
  uint64_t gen;
  double start;
  uint64_t max_events;
  uint64_t recorded, dropped; /* atomics */
  uint32_t flows;             /* atomic: the last flow id given */
  FILE *f;
  FILE *spill; /* full thread buffers, binary (tmpfile) */
  char *path;
  char process_name[96];
  pthread_mutex_t lock; /* the file, the thread list */
  tbuf_t *threads;
  int32_t nthreads;
  uint32_t ndevices;
  dev_usage_t *usage;
  pending_t *pending; /* one per device */
  int io_error;
  int first_written; /* a comma goes before every event but the first */
};

/* What a stopped trace leaves for hc_trace_usage. */
typedef struct hc__trace_result {
  double window_s;
  uint32_t ndevices;
  dev_usage_t usage[];
} hc__trace_result_t;

static uint64_t next_gen = 1; /* atomic: traces never share a generation */

/* The calling thread's buffers, one per trace it recorded into (a thread
 * may work for several tracing contexts). */
#define TL_SLOTS 4
static _Thread_local struct {
  uint64_t gen;
  tbuf_t *buf;
} tl[TL_SLOTS];
static _Thread_local char tl_scope[64];

static int64_t rel_ns(const hc__trace_t *t, double s) { return (int64_t)llround((s - t->start) * 1e9); }

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void put_us(FILE *f, int64_t ns) {
  if (ns < 0) {
    fputc('-', f);
    ns = -ns;
  }
  fprintf(f, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* Marks the flow ids that the events start (a bit each). */
static void mark_starts(uint8_t *starts, const ev_t *ev, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ev[i].flows.out) starts[ev[i].flows.out / 8] |= (uint8_t)(1u << (ev[i].flows.out % 8));
}

/* Called with t->lock held. starts: NULL, or the flow ids whose start was
 * recorded (a bit each): an arrow's end is written only with its start. */
static void write_events(hc__trace_t *t, const ev_t *ev, uint32_t n, const uint8_t *starts) {
  const int pid = (int)getpid();
  for (uint32_t i = 0; i < n; i++) {
    const ev_t *e = &ev[i];
    fputs(t->first_written ? ",\n" : "\n", t->f);
    t->first_written = 1;
    fputs("{\"name\":", t->f);
    json_str(t->f, e->name);
    fprintf(t->f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", kinds[e->kind].cat);
    put_us(t->f, e->t0);
    fputs(",\"dur\":", t->f);
    put_us(t->f, e->t1 - e->t0);
    fprintf(t->f, ",\"pid\":%d,\"tid\":%d,\"args\":{", pid, (int)e->tid);
    int comma = 0;
    if (e->dev_ns >= 0) {
      fputs("\"device_us\":", t->f);
      put_us(t->f, e->dev_ns);
      comma = 1;
    }
    if (e->bytes) fprintf(t->f, "%s\"bytes\":%" PRIu64, comma++ ? "," : "", e->bytes);
    if (e->key[0]) {
      fprintf(t->f, "%s\"%s\":", comma++ ? "," : "", e->key);
      json_str(t->f, e->value);
    }
    fputs("}}", t->f);
    /* Flow arrows bind to this event: phase events inside it on its track
     * (at its middle, clear of the neighbours it may touch). */
    const int64_t mid = e->t0 + (e->t1 - e->t0) / 2;
    for (uint32_t k = 0; k <= e->flows.n_in; k++) { /* the ends into it, then the start out of it */
      const uint32_t id = k < e->flows.n_in ? e->flows.in[k] : e->flows.out;
      if (!id || (starts && k < e->flows.n_in && !(starts[id / 8] & (1u << (id % 8))))) continue;
      fprintf(t->f, ",\n{\"name\":\"reads\",\"cat\":\"flow\",\"ph\":\"%s\",\"id\":%" PRIu32 ",\"ts\":",
              k < e->flows.n_in ? "f\",\"bp\":\"e" : "s", id);
      put_us(t->f, mid);
      fprintf(t->f, ",\"pid\":%d,\"tid\":%d}", pid, (int)e->tid);
    }
  }
  if (ferror(t->f)) t->io_error = 1;
}

static tbuf_t *thread_buf(hc__trace_t *t) {
  for (int i = 0; i < TL_SLOTS; i++)
    if (tl[i].gen == t->gen) return tl[i].buf;
  tbuf_t *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  pthread_mutex_lock(&t->lock);
  b->tid = ++t->nthreads;
  b->next = t->threads;
  t->threads = b;
  pthread_mutex_unlock(&t->lock);
  /* the slot of the oldest generation goes */
  int slot = 0;
  for (int i = 1; i < TL_SLOTS; i++)
    if (tl[i].gen < tl[slot].gen) slot = i;
  tl[slot].gen = t->gen;
  tl[slot].buf = b;
  return b;
}

/* A slot in the thread's buffer for one more event, or NULL when the cap
 * is reached (counted) or memory is short. */
static ev_t *new_event(hc__trace_t *t, tbuf_t **bp) {
  tbuf_t *b = thread_buf(t);
  if (!b) return NULL;
  if (__atomic_add_fetch(&t->recorded, 1, __ATOMIC_RELAXED) > t->max_events) {
    if (__atomic_add_fetch(&t->dropped, 1, __ATOMIC_RELAXED) == 1)
      hc_log(t->ctx, HC_LOG_WARN, "trace %s: more than %" PRIu64 " events; further events are dropped", t->path,
             t->max_events);
    return NULL;
  }
  if (b->n == CHUNK) {
    pthread_mutex_lock(&t->lock);
    if (fwrite(b->ev, sizeof b->ev[0], b->n, t->spill) != b->n) t->io_error = 1;
    pthread_mutex_unlock(&t->lock);
    b->n = 0;
  }
  *bp = b;
  return &b->ev[b->n];
}

hc__trace_t *hc__trace_enter(hc_context_t *ctx) {
  if (!__atomic_load_n(&ctx->trace, __ATOMIC_RELAXED)) return NULL;
  /* hc_trace_stop clears ctx->trace, then waits for trace_users to drain:
   * either it sees this hold or this load sees its store. */
  __atomic_add_fetch(&ctx->trace_users, 1, __ATOMIC_SEQ_CST);
  hc__trace_t *t = __atomic_load_n(&ctx->trace, __ATOMIC_SEQ_CST);
  if (!t) __atomic_sub_fetch(&ctx->trace_users, 1, __ATOMIC_SEQ_CST);
  return t;
}

void hc__trace_leave(hc__trace_t *t) {
  if (t) __atomic_sub_fetch(&t->ctx->trace_users, 1, __ATOMIC_SEQ_CST);
}

void hc__trace_scope_swap(const char *label, char *previous, size_t n) {
  if (previous && n) snprintf(previous, n, "%s", tl_scope);
  snprintf(tl_scope, sizeof tl_scope, "%s", label ? label : "");
}

/* Copies src after out[at], truncated to n; returns the new length (the
 * hot path's string copy: snprintf costs more than the rest of an event). */
static size_t put(char *out, size_t n, size_t at, const char *src) {
  size_t l = strlen(src);
  if (at + l >= n) {
    l = at < n - 1 ? n - 1 - at : 0;
    while (l > 0 && ((unsigned char)src[l] & 0xC0) == 0x80) l--; /* a whole UTF-8 character, or none */
  }
  memcpy(out + at, src, l);
  out[at + l] = '\0';
  return at + l;
}

/* Adds a device event: the usage, then the event itself. */
static void device_event(hc__trace_t *t, uint32_t dev, hc__trace_kind_t kind, const char *name, int64_t t0, int64_t t1,
                         int64_t dev_ns, uint64_t bytes, const char *peer, const flows_t *flows) {
  if (dev < t->ndevices) {
    dev_usage_t *u = &t->usage[dev];
    __atomic_add_fetch(&u->events, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(kinds[kind].cls == CLS_COMPUTE ? &u->compute_ns : &u->transfer_ns, (uint64_t)(t1 - t0),
                       __ATOMIC_RELAXED);
  }
  tbuf_t *b;
  ev_t *e = new_event(t, &b);
  if (!e) return;
  e->t0 = t0;
  e->t1 = t1;
  e->dev_ns = dev_ns;
  e->bytes = bytes;
  e->tid = DEVICE_TID0 + (int32_t)dev;
  e->kind = kind;
  put(e->name, sizeof e->name, 0, name);
  e->flows = *flows;
  e->key[0] = '\0';
  if (peer) {
    put(e->key, sizeof e->key, 0, "peer");
    put(e->value, sizeof e->value, 0, peer);
  }
  b->n++;
}

static void full_name(char *out, size_t n, const char *what) {
  size_t at = 0;
  if (tl_scope[0]) at = put(out, n, put(out, n, 0, tl_scope), "/");
  put(out, n, at, what);
}

int hc__trace_cmd_begin(hc_context_t *ctx, hc_device_t *d, hc__trace_cmd_t *c) {
  if (!(c->tr = hc__trace_enter(ctx))) return 0;
  c->dev = d;
  c->flow_dev = NULL;
  c->flow_mem = NULL;
  c->launch = NULL;
  c->record = d->backend->ops.trace_command_begin ? d->backend->ops.trace_command_begin(d->handle) : NULL;
  c->t0 = hc_now();
  return 1;
}

/* Resolves dev's pending commands into events; called with p->lock held. */
static void resolve_locked(hc__trace_t *t, hc_device_t *d, pending_t *p) {
  for (uint32_t i = 0; i < p->n; i++) {
    pending_cmd_t *pc = &p->cmd[i];
    double s = 0, e = 0;
    if (d->backend->ops.trace_time(d->handle, pc->record, &s, &e) != HC_OK || (s != 0 && e < s)) {
      /* the device's clock failed us: the host's view of the command */
      s = pc->t0;
      e = pc->t1;
    }
    /* The mapping onto the host clock is good to its error (microseconds):
     * a command starts neither before it was queued nor, on an in-order
     * queue, before the one before it ended. */
    const int64_t queued = rel_ns(t, pc->t0);
    int64_t t0, t1 = rel_ns(t, e), dev_ns;
    if (s == 0) {
      /* no start from the device: when the call that queued the command
       * returned or the one before it ended, whichever is later */
      t0 = rel_ns(t, pc->t1);
      if (t0 < p->last_end) t0 = p->last_end;
      if (t1 < t0) t1 = t0;
      dev_ns = t1 - t0;
    } else {
      t0 = rel_ns(t, s);
      dev_ns = t1 - t0;
      if (t0 < queued) t1 += queued - t0, t0 = queued;
      if (t0 < p->last_end) t1 += p->last_end - t0, t0 = p->last_end;
    }
    p->last_dev_ns = dev_ns;
    p->last_end = t1;
    device_event(t, d->index, pc->kind, pc->name, t0, t1, dev_ns, pc->bytes, pc->peer[0] ? pc->peer : NULL, &pc->flows);
  }
  p->n = 0;
}

/* Removes entry i of p's written memory; with p->lock held. */
static void written_drop(pending_t *p, uint32_t i) {
  memmove(&p->written[i], &p->written[i + 1], (p->nwritten - i - 1) * sizeof p->written[0]);
  p->nwritten--;
}

/* The flow ids of c: a new one out of a write, the waiting ones of the
 * memory a launch takes. */
static void command_flows(hc__trace_t *t, const hc__trace_cmd_t *c, flows_t *fl) {
  memset(fl, 0, sizeof *fl);
  if (c->flow_mem && c->flow_dev && c->flow_dev->index < t->ndevices) {
    pending_t *p = &t->pending[c->flow_dev->index];
    fl->out = __atomic_add_fetch(&t->flows, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->nwritten; i++)
      if (p->written[i].mem == c->flow_mem) written_drop(p, i--);
    if (p->nwritten == FLOW_SLOTS) written_drop(p, 0); /* the oldest write's arrow is not drawn */
    p->written[p->nwritten].mem = c->flow_mem;
    p->written[p->nwritten++].id = fl->out;
    pthread_mutex_unlock(&p->lock);
  }
  if (c->launch && c->dev->index < t->ndevices) {
    pending_t *p = &t->pending[c->dev->index];
    pthread_mutex_lock(&p->lock);
    for (uint32_t a = 0; a < c->launch->nargs && p->nwritten; a++) {
      const void *mem = c->launch->args[a].mem;
      for (uint32_t i = 0; mem && i < p->nwritten; i++)
        if (p->written[i].mem == mem) {
          if (fl->n_in < FLOWS_IN) fl->in[fl->n_in++] = p->written[i].id;
          written_drop(p, i);
          break;
        }
    }
    pthread_mutex_unlock(&p->lock);
  }
}

void hc__trace_forget(hc_device_t *d, void *mem) {
  hc__trace_t *t = hc__trace_enter(d->ctx);
  if (!t) return;
  if (d->index < t->ndevices) {
    pending_t *p = &t->pending[d->index];
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->nwritten; i++)
      if (p->written[i].mem == mem) written_drop(p, i--);
    pthread_mutex_unlock(&p->lock);
  }
  hc__trace_leave(t);
}

void hc__trace_cmd_end(hc__trace_cmd_t *c, hc_status_t st, hc__trace_kind_t kind, const char *what, uint64_t bytes,
                       const char *peer) {
  hc__trace_t *t = c->tr;
  hc_device_t *d = c->dev;
  flows_t fl = {0};
  if (st == HC_OK) command_flows(t, c, &fl);
  if (st != HC_OK) {
    if (c->record) {
      if (d->backend->ops.trace_discard) d->backend->ops.trace_discard(d->handle, c->record);
    }
  } else if (c->record && d->index < t->ndevices) {
    const double returned = hc_now(); /* the call that queued it returned (before the end record) */
    d->backend->ops.trace_command_end(d->handle, c->record);
    pending_t *p = &t->pending[d->index];
    pthread_mutex_lock(&p->lock);
    p->dev = d; /* (a device closing resolves its records first) */
    if (p->n == PENDING_MAX) resolve_locked(t, d, p);
    pending_cmd_t *pc = &p->cmd[p->n++];
    pc->record = c->record;
    pc->t0 = c->t0;
    pc->t1 = returned;
    pc->kind = kind;
    pc->bytes = bytes;
    full_name(pc->name, sizeof pc->name, what);
    put(pc->peer, sizeof pc->peer, 0, peer ? peer : "");
    pc->flows = fl;
    pthread_mutex_unlock(&p->lock);
  } else {
    if (c->record && d->backend->ops.trace_discard) d->backend->ops.trace_discard(d->handle, c->record);
    /* The device's queue finished: the event ends when the device did. A
     * failure shows again at the next command, where the caller sees it. */
    (void)d->backend->ops.finish(d->handle);
    const int64_t t0 = rel_ns(t, c->t0), t1 = rel_ns(t, hc_now());
    char name[sizeof((ev_t *)0)->name];
    full_name(name, sizeof name, what);
    device_event(t, d->index, kind, name, t0, t1, t1 - t0, bytes, peer, &fl);
  }
  hc__trace_leave(t);
}

double hc__trace_device_sync(hc_device_t *d) {
  hc__trace_t *t = hc__trace_enter(d->ctx);
  if (!t) return -1;
  double last = -1;
  if (d->index < t->ndevices) {
    pending_t *p = &t->pending[d->index];
    pthread_mutex_lock(&p->lock);
    if (p->n && p->dev == d) {
      resolve_locked(t, d, p);
      last = 1e-9 * (double)p->last_dev_ns;
    }
    pthread_mutex_unlock(&p->lock);
  }
  hc__trace_leave(t);
  return last;
}

void hc__trace_host(hc__trace_t *t, hc__trace_kind_t kind, const char *name, double t0, const char *key,
                    const char *value) {
  const double t1 = hc_now();
  tbuf_t *b;
  ev_t *e = new_event(t, &b);
  if (!e) return;
  e->t0 = rel_ns(t, t0);
  e->t1 = rel_ns(t, t1);
  e->dev_ns = -1;
  e->bytes = 0;
  e->tid = b->tid;
  e->kind = kind;
  put(e->name, sizeof e->name, 0, name);
  e->key[0] = '\0';
  if (key) {
    put(e->key, sizeof e->key, 0, key);
    put(e->value, sizeof e->value, 0, value ? value : "");
  }
  b->n++;
}

void hc__trace_timer(hc_device_t *d, double t0, double seconds) {
  hc__trace_t *t = hc__trace_enter(d->ctx);
  if (!t) return;
  tbuf_t *b;
  ev_t *e = new_event(t, &b);
  if (e) {
    e->t0 = rel_ns(t, t0 < t->start ? t->start : t0);
    e->t1 = rel_ns(t, hc_now());
    e->dev_ns = (int64_t)llround(seconds * 1e9);
    e->bytes = 0;
    e->tid = b->tid;
    e->kind = HC__TRACE_TIMER;
    snprintf(e->name, sizeof e->name, "device time on %s", d->id);
    snprintf(e->key, sizeof e->key, "%s", "device");
    snprintf(e->value, sizeof e->value, "%s", d->id);
    b->n++;
  }
  hc__trace_leave(t);
}

/* Frees a trace whose file is closed: its thread buffers, locks and tables. */
static void trace_free(hc__trace_t *t) {
  for (tbuf_t *b = t->threads, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  pthread_mutex_destroy(&t->lock);
  for (uint32_t i = 0; i < t->ndevices; i++) pthread_mutex_destroy(&t->pending[i].lock);
  free(t->pending);
  free(t->usage);
  free(t->path);
  free(t);
}

HC_API hc_status_t hc_trace_start(hc_context_t *ctx, const char *path, const hc_trace_options_t *opts) {
  if (!ctx || !path || !*path) return hc_error(HC_ERR_INVALID_ARG, "hc_trace_start: NULL argument");
  if (opts && opts->size < sizeof(uint32_t)) return hc_error(HC_ERR_INVALID_ARG, "hc_trace_start: opts->size not set");
  hc_trace_options_t o = {.size = sizeof o};
  if (opts) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
  if (__atomic_load_n(&ctx->trace, __ATOMIC_SEQ_CST))
    return hc_error(HC_ERR_INVALID_ARG, "hc_trace_start: the context is already tracing");
  /* A track for every device: a trace starts every backend. */
  const uint32_t ndev = hc_device_count(ctx);
  hc__trace_t *t = calloc(1, sizeof *t);
  if (t) t->usage = calloc(ndev ? ndev : 1, sizeof *t->usage);
  if (t) t->pending = calloc(ndev ? ndev : 1, sizeof *t->pending);
  if (t) t->path = hc__strdup(path);
  if (!t || !t->usage || !t->pending || !t->path) {
    if (t) free(t->usage), free(t->pending), free(t->path);
    free(t);
    return hc_error(HC_ERR_NO_MEMORY, "hc_trace_start: out of memory");
  }
  if (!(t->f = fopen(path, "w")) || !(t->spill = tmpfile())) {
    int err = errno;
    if (t->f) fclose(t->f), remove(path);
    free(t->pending);
    free(t->usage);
    free(t->path);
    free(t);
    return hc_error(HC_ERR_IO, "trace file %s cannot be written: %s", path, strerror(err));
  }
  t->ctx = ctx;
  t->gen = __atomic_add_fetch(&next_gen, 1, __ATOMIC_RELAXED);
  t->max_events = o.max_events ? o.max_events : DEFAULT_MAX_EVENTS;
  if (o.process_name)
    snprintf(t->process_name, sizeof t->process_name, "%s", o.process_name);
  else
    snprintf(t->process_name, sizeof t->process_name, "hc (pid %d)", (int)getpid());
  t->ndevices = ndev;
  pthread_mutex_init(&t->lock, NULL);
  for (uint32_t i = 0; i < t->ndevices; i++) pthread_mutex_init(&t->pending[i].lock, NULL);
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", t->f);
  t->start = hc_now();
  hc__trace_t *none = NULL;
  if (!__atomic_compare_exchange_n(&ctx->trace, &none, t, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    fclose(t->f);
    fclose(t->spill);
    remove(path);
    trace_free(t);
    return hc_error(HC_ERR_INVALID_ARG, "hc_trace_start: the context is already tracing");
  }
  return HC_OK;
}

static void write_meta(hc__trace_t *t, int tid, const char *what, const char *name, int sort) {
  const int pid = (int)getpid();
  fputs(t->first_written ? ",\n" : "\n", t->f);
  t->first_written = 1;
  fprintf(t->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", what, pid, tid);
  json_str(t->f, name);
  fprintf(t->f, "}},\n{\"name\":\"%s_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
          what[0] == 'p' ? "process" : "thread", pid, tid, sort);
}

HC_API hc_status_t hc_trace_stop(hc_context_t *ctx) {
  if (!ctx) return hc_error(HC_ERR_INVALID_ARG, "hc_trace_stop: NULL context");
  hc__trace_t *t = __atomic_exchange_n(&ctx->trace, NULL, __ATOMIC_SEQ_CST);
  if (!t) return hc_error(HC_ERR_INVALID_ARG, "hc_trace_stop: the context is not tracing");
  while (__atomic_load_n(&ctx->trace_users, __ATOMIC_SEQ_CST)) sched_yield();
  /* Nothing records into t from here on: its buffers are this thread's. */
  for (uint32_t i = 0; i < t->ndevices; i++)
    if (t->pending[i].n) resolve_locked(t, t->pending[i].dev, &t->pending[i]);
  const double window = hc_now() - t->start;
  const uint64_t dropped = __atomic_load_n(&t->dropped, __ATOMIC_RELAXED);
  /* With events dropped at the cap, an arrow's start may be among them
   * while its end (on another device's track) was kept: the starts kept
   * are collected first, so that no arrow ends without one. */
  uint8_t *starts = dropped ? calloc(t->flows / 8 + 1, 1) : NULL;
  if (dropped && !starts) t->io_error = 1;
  for (int pass = starts ? 0 : 1; pass < 2; pass++) { /* 0: collect the starts, 1: write */
    if (fflush(t->spill) != 0 || fseek(t->spill, 0, SEEK_SET) != 0) t->io_error = 1;
    for (ev_t chunk[64];;) {
      const size_t got = t->io_error ? 0 : fread(chunk, sizeof chunk[0], 64, t->spill);
      if (pass == 0)
        mark_starts(starts, chunk, got);
      else
        write_events(t, chunk, (uint32_t)got, starts);
      if (got < 64) break;
    }
    for (tbuf_t *b = t->threads; pass == 0 && b; b = b->next) mark_starts(starts, b->ev, b->n);
  }
  fclose(t->spill);
  for (tbuf_t *b = t->threads; b; b = b->next) write_events(t, b->ev, b->n, starts);
  free(starts);
  char name[96];
  write_meta(t, 0, "process_name", t->process_name, 0);
  for (tbuf_t *b = t->threads; b; b = b->next) {
    /* the list is newest first: tid 1 is the first thread that recorded */
    if (b->tid == 1)
      snprintf(name, sizeof name, "host");
    else
      snprintf(name, sizeof name, "host thread %d", (int)b->tid);
    write_meta(t, b->tid, "thread_name", name, b->tid);
  }
  for (uint32_t i = 0; i < t->ndevices; i++) {
    if (!__atomic_load_n(&t->usage[i].events, __ATOMIC_RELAXED)) continue;
    snprintf(name, sizeof name, "%s queue", ctx->devices[i].id);
    write_meta(t, DEVICE_TID0 + (int)i, "thread_name", name, DEVICE_TID0 + (int)i);
  }
  if (dropped) {
    fputs(",\n{\"name\":", t->f);
    snprintf(name, sizeof name, "trace truncated: %" PRIu64 " events beyond the cap of %" PRIu64 " were dropped",
             dropped, t->max_events);
    json_str(t->f, name);
    fprintf(t->f, ",\"cat\":\"note\",\"ph\":\"i\",\"s\":\"g\",\"ts\":0,\"pid\":%d,\"tid\":0}", (int)getpid());
    hc_log(ctx, HC_LOG_WARN, "trace %s: %s", t->path, name);
  }
  fprintf(t->f,
          "\n],\"otherData\":{\"hc_version\":\"%s\",\"clock\":\"CLOCK_MONOTONIC, from the start of the trace\","
          "\"max_events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 "}}\n",
          hc_version(), t->max_events, dropped);
  int bad = t->io_error || ferror(t->f);
  if (fclose(t->f) != 0) bad = 1;
  hc_status_t st = bad ? hc_error(HC_ERR_IO, "trace file %s: writing failed", t->path) : HC_OK;
  /* Keep the usage for hc_trace_usage. */
  hc__trace_result_t *r = malloc(sizeof *r + t->ndevices * sizeof r->usage[0]);
  if (r) {
    r->window_s = window;
    r->ndevices = t->ndevices;
    memcpy(r->usage, t->usage, t->ndevices * sizeof r->usage[0]);
  }
  pthread_mutex_lock(&ctx->lock);
  free(ctx->trace_result);
  ctx->trace_result = r;
  pthread_mutex_unlock(&ctx->lock);
  trace_free(t);
  return st;
}

/* Ranges go to the backends that have started: one that has not has no
 * device a profiler could show them beside. */
static int running(const hc__backend_t *b) { return __atomic_load_n(&b->started, __ATOMIC_ACQUIRE) == 1; }

void hc__profiler_push(hc_context_t *ctx, const char *name) {
  for (uint32_t i = 0; i < ctx->nbackends; i++)
    if (ctx->backends[i].ops.range_push && running(&ctx->backends[i]))
      ctx->backends[i].ops.range_push(ctx->backends[i].state, name);
}

void hc__profiler_pop(hc_context_t *ctx) {
  for (uint32_t i = ctx->nbackends; i-- > 0;)
    if (ctx->backends[i].ops.range_pop && running(&ctx->backends[i]))
      ctx->backends[i].ops.range_pop(ctx->backends[i].state);
}

HC_API int hc_trace_active(const hc_context_t *ctx) {
  return ctx && __atomic_load_n(&ctx->trace, __ATOMIC_SEQ_CST) != NULL;
}

HC_API void hc_trace_range_begin(hc_context_t *ctx, const char *name) {
  if (!ctx) return;
  hc__profiler_push(ctx, name ? name : "");
  hc__trace_t *t = hc__trace_enter(ctx);
  if (!t) return;
  tbuf_t *b = thread_buf(t);
  if (b && b->depth < MAX_DEPTH) {
    b->range_t0[b->depth] = hc_now();
    put(b->range_name[b->depth], sizeof b->range_name[0], 0, name ? name : "");
  }
  if (b) b->depth++; /* counted beyond MAX_DEPTH too, so ends pair up */
  hc__trace_leave(t);
}

HC_API void hc_trace_range_end(hc_context_t *ctx) {
  if (!ctx) return;
  hc__profiler_pop(ctx);
  hc__trace_t *t = hc__trace_enter(ctx);
  if (!t) return;
  tbuf_t *b = thread_buf(t);
  if (b && b->depth > 0 && --b->depth < MAX_DEPTH)
    hc__trace_host(t, HC__TRACE_RANGE, b->range_name[b->depth], b->range_t0[b->depth], NULL, NULL);
  hc__trace_leave(t);
}

HC_API hc_status_t hc_trace_usage(const hc_context_t *ctx, uint32_t device, hc_trace_usage_t *out) {
  if (!ctx || !out || out->size < sizeof *out)
    return hc_error(HC_ERR_INVALID_ARG, "hc_trace_usage: NULL argument or out->size not set");
  hc_context_t *c = (hc_context_t *)ctx;
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->device = device;
  if (device >= hc__ndevices(ctx))
    return hc_error(HC_ERR_INVALID_ARG, "hc_trace_usage: device index %u out of range", device);
  hc__trace_t *t = hc__trace_enter(c);
  if (t) {
    pending_t *p = &t->pending[device];
    pthread_mutex_lock(&p->lock);
    if (p->n) resolve_locked(t, p->dev, p);
    pthread_mutex_unlock(&p->lock);
    const dev_usage_t *u = &t->usage[device];
    out->window_s = hc_now() - t->start;
    out->events = __atomic_load_n(&u->events, __ATOMIC_RELAXED);
    out->compute_s = 1e-9 * (double)__atomic_load_n(&u->compute_ns, __ATOMIC_RELAXED);
    out->transfer_s = 1e-9 * (double)__atomic_load_n(&u->transfer_ns, __ATOMIC_RELAXED);
    hc__trace_leave(t);
    return HC_OK;
  }
  hc_status_t st = HC_OK;
  pthread_mutex_lock(&c->lock);
  const hc__trace_result_t *r = c->trace_result;
  if (!r)
    st = hc_error(HC_ERR_NOT_FOUND, "hc_trace_usage: nothing was traced on this context");
  else if (device < r->ndevices) {
    out->window_s = r->window_s;
    out->events = r->usage[device].events;
    out->compute_s = 1e-9 * (double)r->usage[device].compute_ns;
    out->transfer_s = 1e-9 * (double)r->usage[device].transfer_ns;
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}
