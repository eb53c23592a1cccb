/* The capability record of a CUDA device: what the driver reports, and peak
 * figures computed from it (datasheet style: lanes x 2 FLOP x clock). */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* FP32 / FP64 lanes per SM by compute capability, from NVIDIA's
 * architecture whitepapers ("arithmetic instructions" throughput table of
 * the CUDA C Programming Guide). Unknown parts stay 0: no guessed peaks. */
static const struct {
  int cc, fp32, fp64;
} lanes[] = {
    {30, 192, 8}, {32, 192, 8}, {35, 192, 64}, {37, 192, 64},  {50, 128, 4},  {52, 128, 4},  {53, 128, 4},
    {60, 64, 32}, {61, 128, 4}, {62, 128, 4},  {70, 64, 32},   {75, 64, 2},   {80, 64, 32},  {86, 128, 2},
    {87, 128, 2}, {89, 128, 2}, {90, 128, 64}, {100, 128, 64}, {120, 128, 2}, {121, 128, 2},
};

void cuda_lanes_per_sm(int cc, int *fp32, int *fp64) {
  *fp32 = *fp64 = 0;
  for (size_t i = 0; i < sizeof lanes / sizeof lanes[0]; i++)
    if (lanes[i].cc == cc) {
      *fp32 = lanes[i].fp32;
      *fp64 = lanes[i].fp64;
    }
}

/* An attribute, or 0 when this driver does not report it (some are
 * deprecated in CUDA 13, e.g. the clock rates, and may go away). */
static int attr(const hc_cu_api_t *cu, CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  return cu->cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS && v > 0 ? v : 0;
}

hc_status_t cuda_describe(const hc_cu_api_t *cu, CUdevice dev, int driver_version, hc_device_info_t *info, int *cc) {
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  info->type = HC_DEVICE_GPU;
  CUresult r = cu->cuDeviceGetName(info->name, sizeof info->name, dev);
  if (r != CUDA_SUCCESS) return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuDeviceGetName");
  size_t total = 0;
  r = cu->cuDeviceTotalMem(&total, dev);
  if (r != CUDA_SUCCESS) return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuDeviceTotalMem");
  snprintf(info->vendor, sizeof info->vendor, "NVIDIA");
  snprintf(info->platform, sizeof info->platform, "CUDA");
  snprintf(info->driver, sizeof info->driver, "%d.%d", driver_version / 1000, driver_version % 1000 / 10);
  int major = attr(cu, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = attr(cu, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  *cc = major * 10 + minor;
  info->cc_major = (uint32_t)major;
  info->cc_minor = (uint32_t)minor;
  snprintf(info->arch, sizeof info->arch, "sm_%d", *cc);
  info->languages = HC_LANG_BIT(HC_LANG_CUDA_C);
  info->compute_units = (uint32_t)attr(cu, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  int clock_khz = attr(cu, dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info->clock_mhz = (uint32_t)(clock_khz / 1000);
  info->fp64 = 1; /* every architecture CUDA 12+ supports has double */
  info->max_work_group_size = (uint32_t)attr(cu, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info->preferred_group_multiple = (uint32_t)attr(cu, dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info->global_mem_bytes = total;
  info->max_alloc_bytes = total; /* CUDA has no smaller single-allocation limit */
  /* Static __shared__ arrays, which portable kernels use, are capped at the
   * per-block default (48 KiB); the opt-in maximum needs dynamic shared
   * memory, which the dialect does not expose. */
  info->local_mem_bytes = (uint64_t)attr(cu, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info->l2_cache_bytes = (uint64_t)attr(cu, dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  int fp32 = 0, fp64 = 0;
  cuda_lanes_per_sm(*cc, &fp32, &fp64);
  double ghz = clock_khz / 1e6;
  info->peak_fp32_gflops = (double)info->compute_units * fp32 * 2.0 * ghz;
  info->peak_fp64_gflops = (double)info->compute_units * fp64 * 2.0 * ghz;
  int mem_khz = attr(cu, dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  int bus_bits = attr(cu, dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  /* Double data rate: two transfers per memory clock. */
  info->peak_bandwidth_gbs = mem_khz * 1e3 * bus_bits * 2.0 / 8.0 / 1e9;
  return HC_OK;
}

void cuda_pci_bus_id(const hc_cu_api_t *cu, CUdevice dev, char *out, size_t n) {
  /* (function 0: a CUDA device is its PCI device's first function) */
  snprintf(out, n, "%04x:%02x:%02x.0", (unsigned)attr(cu, dev, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID) & 0xffff,
           (unsigned)attr(cu, dev, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) & 0xff,
           (unsigned)attr(cu, dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID) & 0x1f);
}
