/* The partition layer's own declarations: a device set, a part, and what
 * the files of core/partition share. */
#ifndef HC_PARTITION_INTERNAL_H
#define HC_PARTITION_INTERNAL_H

#include "layer.h"
#include "transport.h"

struct hc_devset {
  hc_context_t *ctx;
  uint32_t n;
  hc_device_t *dev[HC_DEVSET_MAX];
  double weight[HC_DEVSET_MAX]; /* as given; 0: equal shares */
  int weighted;
  /* The last run. */
  uint32_t nparts;
  hc_part_stats_t stats[HC_DEVSET_MAX];
  char plan[512];
};

struct hc_part {
  uint32_t index, count;
  int64_t rows, lo, hi;
  uint32_t halo, below, above;
  hc__transport_t *tr;
  hc_part_stats_t stats;
  char *stage;        /* host staging of halo rows: 4 areas of stage_area bytes */
  size_t stage_area;
};

#endif
