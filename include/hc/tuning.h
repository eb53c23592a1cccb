/* Per-device tuning tables.
 *
 * The constants a kernel's speed depends on (group shapes, work per item,
 * groups per compute unit, which of two equivalent forms to build) differ
 * between kinds of device. Each workload or layer keeps them in one table
 * of rows, the first member of each row a device pattern, and picks the
 * row of a device once, instead of testing the device's type or vendor
 * wherever a constant is used. A table's comment says how to re-measure
 * its values; measured figures belong in the benchmark report.
 *
 * A pattern is a space-separated list of conditions, all of which must
 * hold:
 *   cpu, gpu, accelerator, other  the device's type
 *   host                    the device runs host functions (the cpu backend)
 *   cuda-c, opencl-c        the language source kernels are built in there
 *                           (CUDA C where the device takes it, else OpenCL C)
 *   vendor=TEXT             TEXT occurs in the vendor's name, in any case
 *   arch=TEXT               the architecture's name starts with TEXT
 *                           ("arch=sm_9")
 *   *                       any device
 * The last row of every table is "*", the values for devices no other row
 * names; rows are tried in order, so specific rows come first. */
#ifndef HC_TUNING_H
#define HC_TUNING_H

#include <stddef.h>

#include "hc/status.h"
#include "hc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *matches = whether pattern holds for the device. HC_ERR_INVALID_ARG,
 * naming the condition, for a pattern hc does not understand. */
hc_status_t hc_tuning_match(const hc_device_info_t *info, const char *pattern,
                            int *matches);

/* *row = the first of the table's count rows (each `stride` bytes, each
 * starting with its pattern, a const char *) whose pattern holds for the
 * device. HC_ERR_INVALID_ARG when a pattern is not understood or the last
 * row's is not "*" (then some device would have no row). */
hc_status_t hc_tuning_pick(const hc_device_info_t *info, const void *table,
                           size_t count, size_t stride, size_t *row);

/* The row of an array of row structs, for the device: HC_TUNING_PICK(info,
 * my_table, &row). */
#define HC_TUNING_PICK(info, table, row)                           \
  hc_tuning_pick((info), (table), sizeof(table) / sizeof *(table), \
                 sizeof *(table), (row))

#ifdef __cplusplus
}
#endif
#endif
