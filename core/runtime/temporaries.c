/* Temporaries to remove when the process is interrupted (hc.h). The table
 * is written by ordinary threads and read by a signal handler, so each slot
 * is published with a lock-free atomic state and removal uses only
 * async-signal-safe calls. */
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define SLOTS 64

enum { FREE, FILLING, LIVE };

static struct {
  atomic_int state;
  atomic_uint order; /* registration order, for removal in reverse */
  char path[PATH_MAX];
} slots[SLOTS];
static atomic_uint next_order;

HC_API int hc_temp_register(const char *path) {
  if (!path || strlen(path) >= PATH_MAX) return -1;
  for (int i = 0; i < SLOTS; i++) {
    int expect = FREE;
    if (!atomic_compare_exchange_strong(&slots[i].state, &expect, FILLING)) continue;
    memcpy(slots[i].path, path, strlen(path) + 1);
    atomic_store(&slots[i].order, atomic_fetch_add(&next_order, 1) + 1);
    atomic_store(&slots[i].state, LIVE);
    return i;
  }
  return -1;
}

HC_API void hc_temp_unregister(int slot) {
  if (slot < 0 || slot >= SLOTS) return;
  atomic_store(&slots[slot].state, FREE);
}

HC_API void hc_remove_temporaries(void) {
  /* Newest first: files before the directory that holds them. */
  unsigned last = UINT_MAX;
  for (;;) {
    int pick = -1;
    unsigned best = 0;
    for (int i = 0; i < SLOTS; i++) {
      unsigned o = atomic_load(&slots[i].order);
      if (atomic_load(&slots[i].state) == LIVE && o < last && o > best) best = o, pick = i;
    }
    if (pick < 0) return;
    last = best;
    if (unlink(slots[pick].path) != 0) rmdir(slots[pick].path);
  }
}
