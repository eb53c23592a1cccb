#include "cpuinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Value of the first "key : value" line of /proc/cpuinfo. */
static int cpuinfo_field(const char *key, char *out, size_t n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  size_t klen = strlen(key);
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, n, "%s", colon);
    found = 1;
  }
  fclose(f);
  return found;
}

static int has_flag(const char *flags, const char *flag) {
  size_t l = strlen(flag);
  for (const char *p = flags; (p = strstr(p, flag)); p += l)
    if ((p == flags || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0')) return 1;
  return 0;
}

void hc_cpu_describe(hc_device_info_t *in, unsigned threads) {
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  in->type = HC_DEVICE_CPU;
  if (!cpuinfo_field("model name", in->name, sizeof in->name)) snprintf(in->name, sizeof in->name, "host CPU");
  if (!cpuinfo_field("vendor_id", in->vendor, sizeof in->vendor)) snprintf(in->vendor, sizeof in->vendor, "unknown");
  snprintf(in->platform, sizeof in->platform, "host");
  struct utsname u;
  if (uname(&u) == 0) snprintf(in->driver, sizeof in->driver, "%.16s %.44s", u.sysname, u.release);
  char buf[4096] = "";
  double mhz = cpuinfo_field("cpu MHz", buf, sizeof buf) ? atof(buf) : 0;
  in->clock_mhz = (uint32_t)mhz;
  char flags[4096] = "";
  cpuinfo_field("flags", flags, sizeof flags);
  int lanes32 = has_flag(flags, "avx512f") ? 16 : has_flag(flags, "avx2") ? 8 : has_flag(flags, "sse2") ? 4 : 1;
  int fma = has_flag(flags, "fma");
  snprintf(in->arch, sizeof in->arch, "%s", has_flag(flags, "avx512f") ? "x86-64-avx512" : has_flag(flags, "avx2") ? "x86-64-avx2" : "host");
  in->languages = HC_LANG_BIT(HC_LANG_HOST);
  in->compute_units = threads;
  in->fp64 = 1;
  in->max_work_group_size = 1u << 30;
  in->preferred_group_multiple = (uint32_t)lanes32;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psize > 0) in->global_mem_bytes = (uint64_t)pages * (uint64_t)psize;
  in->max_alloc_bytes = in->global_mem_bytes;
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  in->l1_cache_bytes = l1 > 0 ? (uint64_t)l1 : 0;
  in->l2_cache_bytes = l2 > 0 ? (uint64_t)l2 : 0;
  in->l3_cache_bytes = l3 > 0 ? (uint64_t)l3 : 0;
  in->local_mem_bytes = in->l1_cache_bytes ? in->l1_cache_bytes : 32768;
  /* Estimated peak: one vector FMA port per core (2 flops per lane).
   * Benchmarks measure the real ceiling in the same run. */
  in->peak_fp32_gflops = threads * mhz * 1e-3 * lanes32 * (fma ? 2 : 1);
  in->peak_fp64_gflops = in->peak_fp32_gflops / 2;
}
