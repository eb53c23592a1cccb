/* Facts about the host the process runs on. */
#include <sched.h>
#include <unistd.h>

#include "internal.h"

HC_API uint32_t hc_host_cores(void) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
    return (uint32_t)CPU_COUNT(&allowed);
  /* More cores than a cpu_set_t holds, or no affinity call: all of them. */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (uint32_t)online : 1;
}
