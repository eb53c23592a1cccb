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

/* Size in bytes of cpu0's cache of `level` and type "Data" or "Unified"
 * from sysfs (what lscpu reads), or 0. sysconf's _SC_LEVEL3_CACHE_SIZE can
 * be far off: an EPYC VM with a 32 MiB L3 reported 320 MiB. */
static uint64_t sysfs_cache_bytes(int level, const char *type) {
  for (int idx = 0; idx < 16; idx++) {
    char path[96], buf[64];
    int lv = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* past the last index */
    int ok = fscanf(f, "%d", &lv) == 1;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
    if (!ok || lv != level || !(f = fopen(path, "r"))) continue;
    ok = fgets(buf, sizeof buf, f) && !strncmp(buf, type, strlen(type));
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
    if (!ok || !(f = fopen(path, "r"))) continue;
    unsigned long long v = 0;
    char unit = 0;
    int got = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (got < 1) continue;
    return v * (unit == 'K' ? 1024ull : unit == 'M' ? 1048576ull : unit == 'G' ? 1073741824ull : 1ull);
  }
  return 0;
}

/* A cache's size: sysfs, else sysconf, else 0. */
static uint64_t cache_bytes(int level, const char *type, int sysconf_name) {
  uint64_t b = sysfs_cache_bytes(level, type);
  long v = b ? 0 : sysconf(sysconf_name);
  return b ? b : v > 0 ? (uint64_t)v : 0;
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
  snprintf(in->arch, sizeof in->arch, "%s",
           has_flag(flags, "avx512f") ? "x86-64-avx512"
           : has_flag(flags, "avx2")  ? "x86-64-avx2"
                                      : "host");
  in->languages = HC_LANG_BIT(HC_LANG_HOST);
  in->compute_units = threads;
  in->fp64 = 1;
  in->max_work_group_size = 1u << 30;
  in->preferred_group_multiple = (uint32_t)lanes32;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psize > 0) in->global_mem_bytes = (uint64_t)pages * (uint64_t)psize;
  in->max_alloc_bytes = in->global_mem_bytes;
  in->l1_cache_bytes = cache_bytes(1, "Data", _SC_LEVEL1_DCACHE_SIZE);
  in->l2_cache_bytes = cache_bytes(2, "Unified", _SC_LEVEL2_CACHE_SIZE);
  in->l3_cache_bytes = cache_bytes(3, "Unified", _SC_LEVEL3_CACHE_SIZE);
  in->local_mem_bytes = in->l1_cache_bytes ? in->l1_cache_bytes : 32768;
  /* Estimated peak, an upper bound: two vector FMA ports per core (x86
   * cores since Haswell and Zen 2 have two; AVX-512 parts with one 512-bit
   * unit reach half), 2 flops per lane, at the clock /proc/cpuinfo shows.
   * Benchmarks measure the real ceiling in the same run. */
  in->peak_fp32_gflops = threads * mhz * 1e-3 * lanes32 * (fma ? 2 * 2 : 1);
  in->peak_fp64_gflops = in->peak_fp32_gflops / 2;
}
