/* hc — configuration from the environment.
 *
 * Every HC_* environment variable hc reads is one entry of one table
 * (core/runtime/config_vars.h; docs/env.md lists the public and tuning
 * ones and tests/unit/test_config.c checks the two agree). Each entry has a
 * type, a default, the accepted values and a one-line description, and
 * every read goes through this reader: a value it does not accept is an
 * error (HC_ERR_PARAM) whose message names the variable, the value and
 * the accepted values, never a silent fallback. hc_context_create checks
 * every variable of the table once, so a bad setting fails the context.
 *
 * Plugins read the table's variables by name (hc_config_int(
 * "HC_CPU_THREADS", &v)); an out-of-tree plugin that wants a variable of its
 * own declares an hc_config_var_t (a static const in the plugin) and reads
 * it with the hc_config_var_* functions, with the same parsing and the
 * same messages. The reader keeps no state: each call reads the process
 * environment, so values are what they are at the time of the call; callers
 * that must not see a change mid-run read once and keep the value.
 *
 * Threads: the reader may be called from any thread; like getenv(), it
 * must not run while another thread changes the environment. */
#ifndef HC_CONFIG_H
#define HC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "hc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hc_config_type {
  HC_CONFIG_STRING = 0, /* any text (paths, flags, lists) */
  HC_CONFIG_BOOL = 1,   /* 1 on yes true / 0 off no false -> 1 / 0 */
  HC_CONFIG_INT = 2,    /* a whole number in [min, max] or one of `names` */
  HC_CONFIG_SIZE =
      3, /* bytes in [min, max], optional k, M, G suffix, or one of `names` */
  HC_CONFIG_DOUBLE = 4, /* a number in [min, max] */
  HC_CONFIG_CHOICE = 5, /* one of `names` ("a|b|c") -> its index */
  HC_CONFIG_SHAPE = 6   /* "BXxBYxZ": BX*BY in [min, max] items, Z 1..16; or one
                           of `names` (all 0) */
} hc_config_type_t;

/* Who the variable is for: PUBLIC settings a user makes; TUNING knobs for
 * experiments (defaults are the measured best, see docs/performance/);
 * INTERNAL test hooks, not documented in docs/env.md. */
typedef enum hc_config_scope {
  HC_CONFIG_PUBLIC = 0,
  HC_CONFIG_TUNING = 1,
  HC_CONFIG_INTERNAL = 2
} hc_config_scope_t;

typedef struct hc_config_var {
  const char *name; /* "HC_..." */
  hc_config_type_t type;
  hc_config_scope_t scope;
  const char *def;   /* the default as the variable would spell it; NULL
                        when computed at run time (doc says how) */
  double min, max;   /* INT, SIZE, DOUBLE; SHAPE: items per group */
  const char *names; /* CHOICE: "a|b|c"; INT, SIZE: named values
                        "off=0|on=1"; SHAPE: words meaning "none" */
  const char *doc;   /* one line */
} hc_config_var_t;

/* The table: entries 0 .. hc_config_count() - 1 (NULL past the end), and
 * the entry named `name` (NULL when the table has none). */
uint32_t hc_config_count(void);
const hc_config_var_t *hc_config_at(uint32_t i);
const hc_config_var_t *hc_config_find(const char *name);

/* Readers. When the variable is unset or empty, the default is returned;
 * when it also has no default (def NULL), *out is left as the caller set
 * it, so the caller pre-sets the computed default. HC_ERR_PARAM (message
 * "NAME=value: give ...") for a value the entry does not accept, *out
 * unchanged; HC_ERR_INVALID_ARG for a NULL or unknown variable or a reader
 * that does not fit its type:
 *   int    BOOL, INT, SIZE (bytes), CHOICE (the index in names)
 *   double DOUBLE, INT
 *   str    every type: the raw text (owned by the environment) or def
 *   shape  SHAPE: out[0..2] = BX, BY, Z; all 0 for a word of `names` */
hc_status_t hc_config_var_int(const hc_config_var_t *v, long long *out);
hc_status_t hc_config_var_double(const hc_config_var_t *v, double *out);
hc_status_t hc_config_var_str(const hc_config_var_t *v, const char **out);
hc_status_t hc_config_var_shape(const hc_config_var_t *v, int out[3]);
/* The same for the table's variable `name`. */
hc_status_t hc_config_int(const char *name, long long *out);
hc_status_t hc_config_double(const char *name, double *out);
hc_status_t hc_config_str(const char *name, const char **out);
hc_status_t hc_config_shape(const char *name, int out[3]);

/* Checks the value of every variable of the table; the first that is not
 * accepted gives HC_ERR_PARAM and its message. */
hc_status_t hc_config_check(void);

/* "give a whole number from 1 to 1024" etc.: what v accepts, as text
 * (at most n bytes with the NUL); returns out. */
char *hc_config_accepted(const hc_config_var_t *v, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
