/* Plugin descriptor validation as pure functions: a descriptor (with its
 * ops, parameter and port tables) in, NULL or the reason it is refused out.
 * No I/O, no context, no side effects, so tests/fuzz/fuzz_descriptor.c can
 * run them on any bytes. The loader applies them in this order: the header,
 * then (with the context) the duplicate-name check, then the ops. */
#ifndef HC_CORE_DESCRIPTOR_H
#define HC_CORE_DESCRIPTOR_H

#include <stddef.h>
#include <stdint.h>

#include "hc/plugin.h"

/* ABI version, kind, name, version, summary and the ops pointer. Returns
 * NULL when they are acceptable, else the reason (written into buf). */
const char *hc__descriptor_problem(const hc_plugin_descriptor_t *d, char *buf, size_t n);

/* The ops table of a descriptor that passed hc__descriptor_problem: its
 * size, required backend ops; a workload's parameter and port tables.
 * NULL when acceptable, else the reason (written into buf). */
const char *hc__descriptor_ops_problem(const hc_plugin_descriptor_t *d, char *buf, size_t n);

/* How many bytes of a plugin's ops table of `size` the core copies into its
 * own of `cap`: the members the size covers whole. Past the leading
 * integers every member is pointer-sized, so a size that ends inside a
 * pointer (a corrupt table) drops that pointer instead of copying its low
 * bytes, which would make a wild function pointer. */
static inline size_t hc__ops_copy_bytes(uint32_t size, size_t cap) {
  size_t s = size < cap ? size : cap;
  return s / sizeof(void (*)(void)) * sizeof(void (*)(void));
}

#endif
