/* Plugin isolation: plugins that crash, hang or exit in their init (or
 * carry bad pointers in their tables) are probed in a child process and
 * rejected with the signal (an exit, even with status 0, too: only the
 * probe's report is a pass); the host survives, and the verdict is
 * remembered, bound to the file and the libraries it loaded, trusted only
 * from a private registry, and not forever. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "plugins/stub_backend.h"

static char dir[4200], cache[4200];
static char out[1 << 16], err[1 << 16];

static int compile(const char *name, const char *init_body) {
  char src[8192], cpath[4400], cmd[16384];
  stub_backend_src(src, sizeof src, name, init_body, "HC_OK", 1);
  snprintf(cpath, sizeof cpath, "%s/%s.c", dir, name);
  FILE *f = fopen(cpath, "w");
  if (!f) return 1;
  fputs(src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -std=c11 -shared -fPIC -fvisibility=hidden -I%s/include -o %s/%s.so %s -L%s/lib -lhc",
           HC_SOURCE_DIR, dir, name, cpath, th_build_dir());
  int rc = th_run(cmd, NULL, 0, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  remove(cpath);
  return rc;
}

static int setup(void) {
  snprintf(dir, sizeof dir, "%s/plugins", th_tmpdir());
  snprintf(cache, sizeof cache, "%s/cache", th_tmpdir());
  mkdir(dir, 0755);
  setenv("HC_CACHE_DIR", cache, 1);
  setenv("HC_PLUGIN_PROBE_TIMEOUT", "2", 1);
  unsetenv("HC_PLUGIN_PROBE");
  return compile("segv", "raise(SIGSEGV)") || compile("hang", "for (;;) sleep(1000)") ||
         compile("quitter", "exit(3)") || compile("abrt", "abort()") || compile("fine", "(void)0") ||
         compile("exit0", "exit(0)") ||
         compile("fdhungry", "struct rlimit r; getrlimit(RLIMIT_NOFILE, &r); if (r.rlim_cur < 100) abort()");
}

static const char *reason_for(hc_context_t *c, const char *file) {
  for (uint32_t i = 0; i < hc_rejected_count(c); i++) {
    const char *path, *reason;
    hc_rejected_get(c, i, &path, &reason);
    const char *base = strrchr(path, '/');
    if (base && !strcmp(base + 1, file)) return reason;
  }
  return NULL;
}

static hc_context_t *ctx_over(const char *plugins) {
  const char *dirs[1] = {plugins};
  hc_context_options_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.plugin_dirs = dirs;
  o.plugin_dir_count = 1;
  o.no_env_path = 1;
  o.no_default_dirs = 1;
  hc_context_t *c = NULL;
  CU_ASSERT_EQUAL(hc_context_create(&o, &c), HC_OK);
  return c;
}

static hc_context_t *ctx_over_dir(void) { return ctx_over(dir); }

static void expect(hc_context_t *c, const char *file, const char *frag) {
  const char *r = reason_for(c, file);
  if (!r || !strstr(r, frag)) fprintf(stderr, "%s: '%s' lacks '%s'\n", file, r ? r : "(not rejected)", frag);
  CU_ASSERT_PTR_NOT_NULL(r);
  if (r) CU_ASSERT_PTR_NOT_NULL(strstr(r, frag));
}

static void test_bad_plugins_rejected(void) {
  double t0 = hc_now();
  hc_context_t *c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  double first = hc_now() - t0;
  expect(c, "segv.so", "crashed while probed: signal 11 (Segmentation fault)");
  expect(c, "abrt.so", "crashed while probed: signal 6 (Aborted)");
  expect(c, "hang.so", "hung while probed: no answer within 2 s");
  expect(c, "quitter.so", "exited while probed with status 3");
  /* Exit status 0 is no pass: the probe's report never came. */
  expect(c, "exit0.so", "exited while probed with status 0 before its probe reported");
  CU_ASSERT_PTR_NULL(reason_for(c, "fine.so"));
  CU_ASSERT_EQUAL(hc_backend_count(c), 2); /* fine and fdhungry */
  CU_ASSERT_TRUE(first >= 2.0);            /* the hang took its timeout */
  hc_context_destroy(c);
  /* Second time: remembered, no probe, no waiting for the hang. */
  t0 = hc_now();
  c = ctx_over_dir();
  double second = hc_now() - t0;
  expect(c, "hang.so", "(remembered verdict");
  expect(c, "segv.so", "signal 11");
  CU_ASSERT_TRUE(second < 1.5);
  hc_context_destroy(c);
  char reg[4400];
  snprintf(reg, sizeof reg, "%s/plugin-registry", cache);
  struct stat st;
  CU_ASSERT_EQUAL(stat(reg, &st), 0);
}

/* Whether the registry has a verdict on a file of that path. */
static int registry_names(const char *path) {
  char reg[4400], line[8192];
  snprintf(reg, sizeof reg, "%s/plugin-registry", cache);
  FILE *f = fopen(reg, "r");
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f)) found = line[0] == 'P' && strstr(line, path) != NULL;
  if (f) fclose(f);
  return found;
}

/* A folder of plugins that is removed (a test's, a build's) leaves no
 * verdicts behind once the registry is next written. */
static void test_verdicts_on_removed_files_dropped(void) {
  char other[4200], gone[4400], next[4400], cmd[16384];
  snprintf(other, sizeof other, "%s/plugins-gone", th_tmpdir());
  snprintf(gone, sizeof gone, "%s/gone.so", other);
  snprintf(next, sizeof next, "%s/next.so", other);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/fine.so' '%s'", other, dir, gone);
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  hc_context_t *c = ctx_over(other);
  hc_context_destroy(c);
  CU_ASSERT_TRUE(registry_names(gone));
  /* gone.so goes; a new file's probe writes the registry again. */
  snprintf(cmd, sizeof cmd, "mv '%s' '%s' && touch '%s'", gone, next, next);
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  c = ctx_over(other);
  CU_ASSERT_EQUAL(hc_backend_count(c), 1);
  hc_context_destroy(c);
  CU_ASSERT_TRUE(registry_names(next));
  CU_ASSERT_FALSE(registry_names(gone));
}

static void test_changed_file_is_probed_again(void) {
  /* Replace the crashing plugin by a good one with the same name: its size
   * and mtime change, so the old verdict no longer applies. */
  char a[4400], b[4400];
  snprintf(a, sizeof a, "%s/fine.so", dir);
  snprintf(b, sizeof b, "%s/segv.so", dir);
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && touch '%s'", a, b, b);
  CU_ASSERT_EQUAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  hc_context_t *c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  expect(c, "segv.so", "duplicate backend name 'fine'"); /* loaded, now a duplicate */
  hc_context_destroy(c);
}

static void test_hcrun_survives(void) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH=%s HC_CACHE_DIR=%s %s/bin/hcrun --list", dir, cache, th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "Rejected plugin files:"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "abrt.so: crashed while probed: signal 6"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "cpu:0"));
  /* The verdict this program's probe made is remembered for hcrun, whose
   * resource limits are the same; under valgrind they are not (valgrind
   * lowers the program's file limit), so hcrun rightly probes again. */
  if (!th_slow_tool())
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "abrt.so: crashed while probed: signal 6 (Aborted) (remembered verdict"));
  /* --rescan: probed again, not remembered. */
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH=%s HC_CACHE_DIR=%s %s/bin/hcrun --rescan --list", dir, cache,
           th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "abrt.so: crashed while probed: signal 6 (Aborted)\n"));
}

/* Copies the registry with every "bad" verdict for segv.so turned "ok"
 * (identity and hash still right): only its ownership and mode can tell a
 * planted verdict from the user's own. */
static void plant_ok_verdict(mode_t mode) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && sed 's|^P\tbad\t\\(.*/segv.so\t\\)|P\tok\t\\1|' plugin-registry > r.new && "
           "grep -q '^P.ok.*segv.so' r.new && mv r.new plugin-registry && chmod %o plugin-registry",
           cache, (unsigned)mode);
  CU_ASSERT_EQUAL(th_run(cmd, NULL, 0, err, sizeof err), 0);
}

/* What a fresh process (hcrun --list) says of segv.so. */
static int listed_as_crashed(void) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH=%s HC_CACHE_DIR=%s %s/bin/hcrun --list", dir, cache, th_build_dir());
  th_run(cmd, out, sizeof out, err, sizeof err);
  return strstr(out, "segv.so: crashed while probed: signal 11") != NULL;
}

static void test_verdicts_are_trusted_only_when_private(void) {
  /* A fresh crash verdict for segv.so (the previous test replaced it). */
  CU_ASSERT_EQUAL(compile("segv", "raise(SIGSEGV)"), 0);
  CU_ASSERT_TRUE(listed_as_crashed());
  /* A registry anyone may write: ignored, every plugin probed. */
  plant_ok_verdict(0666);
  CU_ASSERT_TRUE(listed_as_crashed());
  /* A cache folder writable by others: the same. */
  plant_ok_verdict(0644);
  CU_ASSERT_EQUAL(chmod(cache, 0777), 0);
  CU_ASSERT_TRUE(listed_as_crashed());
  CU_ASSERT_EQUAL(chmod(cache, 0700), 0);
}

static void test_hung_verdict_not_forever(void) {
  hc_context_t *c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  expect(c, "hang.so", "within 2 s");
  hc_context_destroy(c);
  /* A longer timeout than the one that gave "hung": probed again. */
  setenv("HC_PLUGIN_PROBE_TIMEOUT", "3", 1);
  double t0 = hc_now();
  c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  expect(c, "hang.so", "hung while probed: no answer within 3 s");
  CU_ASSERT_TRUE(hc_now() - t0 >= 3.0);
  hc_context_destroy(c);
  setenv("HC_PLUGIN_PROBE_TIMEOUT", "2", 1);
  /* hc_plugin_rescan (hcrun --rescan): every verdict forgotten. */
  CU_ASSERT_EQUAL(hc_plugin_rescan(), HC_OK);
  c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  const char *r = reason_for(c, "abrt.so");
  CU_ASSERT_PTR_NOT_NULL(r);
  if (r) CU_ASSERT_PTR_NULL(strstr(r, "remembered"));
  hc_context_destroy(c);
}

/* A verdict is bound to the libraries the plugin loaded: a crash in a
 * library that is then updated is probed again. */
static void test_verdict_follows_libraries(void) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && printf 'int dep_ok(void) { return 0; }\n' > dep.c && cc -shared -fPIC -o libdep.so dep.c && "
           "rm dep.c",
           dir);
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, err, sizeof err), 0);
  /* The plugin links libdep.so and crashes while dep_ok() says so. */
  snprintf(cmd, sizeof cmd,
           "cd '%s' && printf '#include <hc/plugin.h>\n#include <signal.h>\nextern int dep_ok(void);\n"
           "static hc_status_t init(hc_context_t *c, void **s) { (void)c; *s = 0; if (!dep_ok()) raise(SIGSEGV); "
           "return HC_ERR_DEVICE; }\n"
           "static uint32_t count(void *s) { (void)s; return 0; }\n"
           "static const hc_backend_ops_t ops = { .size = sizeof(hc_backend_ops_t), .init = init, .device_count = "
           "count };\n"
           "HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR, HC_ABI_MINOR, HC_PLUGIN_BACKEND, 0, \"deppy\", \"1\", "
           "\"t\", &ops};\n' > deppy.c && cc -std=c11 -shared -fPIC -I%s/include -o deppy.so deppy.c -L. -ldep "
           "-Wl,-rpath,'%s' -L%s/lib -lhc && rm deppy.c",
           dir, HC_SOURCE_DIR, dir, th_build_dir());
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, err, sizeof err), 0);
  hc_context_t *c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  expect(c, "deppy.so", "crashed while probed: signal 11");
  hc_context_destroy(c);
  c = ctx_over_dir();
  expect(c, "deppy.so", "remembered verdict");
  hc_context_destroy(c);
  /* The library is fixed (a new version): the verdict no longer holds. */
  snprintf(cmd, sizeof cmd,
           "cd '%s' && printf 'int dep_ok(void) { return 1; }\n' > dep.c && cc -shared -fPIC -o libdep.so.new dep.c && "
           "mv libdep.so.new libdep.so && rm dep.c",
           dir);
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, err, sizeof err), 0);
  c = ctx_over_dir();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  /* Probed again and passed: rejected, if at all, by the host's checks. */
  const char *r = reason_for(c, "deppy.so");
  if (r) CU_ASSERT_PTR_NULL(strstr(r, "crashed"));
  hc_context_destroy(c);
  snprintf(cmd, sizeof cmd, "rm -f '%s/deppy.so' '%s/libdep.so'", dir, dir);
  th_run(cmd, NULL, 0, NULL, 0);
}

/* A backend that aborts in its init only under a resource limit (as PoCL
 * does when it cannot start its threads under ulimit -u): its verdict, made
 * without the limit, does not hold under it, so it is probed again there
 * and rejected, and the rest works. */
static void test_backend_failing_under_a_limit(void) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH=%s HC_CACHE_DIR=%s %s/bin/hcrun --list", dir, cache, th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NULL(strstr(out, "fdhungry.so: crashed"));
  snprintf(cmd, sizeof cmd, "ulimit -n 64 && HC_PLUGIN_PATH=%s HC_CACHE_DIR=%s %s/bin/hcrun --list", dir, cache,
           th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "fdhungry.so: crashed while probed: signal 6"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "cpu:0"));
  snprintf(cmd, sizeof cmd,
           "ulimit -n 64 && HC_PLUGIN_PATH=%s HC_CACHE_DIR=%s %s/bin/hcrun --backend=cpu --workload=simpson n=9x9x9",
           dir, cache, th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "integral"));
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("isolation", setup, NULL);
  CU_ADD_TEST(s, test_bad_plugins_rejected);
  CU_ADD_TEST(s, test_changed_file_is_probed_again);
  CU_ADD_TEST(s, test_verdicts_on_removed_files_dropped);
  CU_ADD_TEST(s, test_hcrun_survives);
  CU_ADD_TEST(s, test_verdicts_are_trusted_only_when_private);
  CU_ADD_TEST(s, test_hung_verdict_not_forever);
  CU_ADD_TEST(s, test_verdict_follows_libraries);
  CU_ADD_TEST(s, test_backend_failing_under_a_limit);
}

TH_MAIN(register_tests)
