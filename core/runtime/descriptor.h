/* Plugin descriptor validation as pure functions: a descriptor (with its
 * ops, parameter and port tables) in, NULL or the reason it is refused out.
 * No I/O, no context, no side effects, so tests/fuzz/fuzz_descriptor.c can
 * run them on any bytes. The loader applies them in this order: the header,
 * then (with the context) the duplicate-name check, then the ops. */
#ifndef HC_CORE_DESCRIPTOR_H
#define HC_CORE_DESCRIPTOR_H

#include <stddef.h>

#include "hc/plugin.h"

/* ABI version, kind, name, version, summary and the ops pointer. Returns
 * NULL when they are acceptable, else the reason (written into buf). */
const char *hc__descriptor_problem(const hc_plugin_descriptor_t *d, char *buf, size_t n);

/* The ops table of a descriptor that passed hc__descriptor_problem: its
 * size, required backend ops; a workload's parameter and port tables.
 * NULL when acceptable, else the reason (written into buf). */
const char *hc__descriptor_ops_problem(const hc_plugin_descriptor_t *d, char *buf, size_t n);

#endif
