/* Temporary files being written (hc_write_file_atomic's "<path>.tmp.PID.N"),
 * so that an interrupted program can remove them: the embedding program's
 * signal handler calls hc_cleanup_temporaries(), which only reads fixed
 * slots and calls unlink(), both async-signal-safe. The library installs no
 * signal handler of its own. */
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define SLOTS 64
#define PATH_CAP 4200

/* state: 0 free, 1 being filled, 2 holds a path to remove on cleanup */
static struct {
  _Atomic int state;
  char path[PATH_CAP];
} slots[SLOTS];

int hc__temp_register(const char *path) {
  size_t n = strlen(path);
  if (n >= PATH_CAP) return -1;
  for (int i = 0; i < SLOTS; i++) {
    int expect = 0;
    if (atomic_compare_exchange_strong(&slots[i].state, &expect, 1)) {
      memcpy(slots[i].path, path, n + 1);
      atomic_store(&slots[i].state, 2);
      return i;
    }
  }
  return -1; /* all taken: written all the same, only not cleaned on a signal */
}

void hc__temp_unregister(int slot) {
  if (slot >= 0 && slot < SLOTS) atomic_store(&slots[slot].state, 0);
}

HC_API void hc_cleanup_temporaries(void) {
  for (int i = 0; i < SLOTS; i++)
    if (atomic_load(&slots[i].state) == 2) {
      unlink(slots[i].path);
      atomic_store(&slots[i].state, 0);
    }
}
