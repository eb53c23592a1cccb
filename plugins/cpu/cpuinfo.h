/* Describes the host CPU as an hc device (name, cores, caches, memory). */
#ifndef HC_CPU_CPUINFO_H
#define HC_CPU_CPUINFO_H
#include <hc/hc.h>
void hc_cpu_describe(hc_device_info_t *info, unsigned threads);
#endif
