/* hc-plugin-scanner PATH: loads one plugin file in a process of its own and
 * exercises what the host will call first (a backend's init, device count
 * and device info, fini; a workload's descriptor tables), so that a plugin
 * that crashes or hangs there takes down this process, not the host. The
 * core (core/runtime/probe.c) runs it with a timeout and remembers the verdict,
 * like GStreamer's gst-plugin-scanner.
 *
 * The verdict is the report on descriptor 3 (a pipe from the host): "lib"
 * lines naming every library mapped (path, size, mtime: a verdict holds
 * only while they stay the same), written once after dlopen and again at
 * the end, then "ok" once everything above returned. Exit status 0 without
 * "ok" (a plugin that calls exit(0)) is not a pass. Clean rejections, such
 * as a missing descriptor, are reported "ok" and left to the host's loader,
 * which names them. */
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hc/plugin.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* LeakSanitizer off in this process (sanitizer builds): the scanner is
 * thrown away after one probe, and what the probed plugin and its drivers
 * keep until exit would turn its exit status into a false verdict. */
__attribute__((visibility("default"))) int __lsan_is_turned_off(void);
__attribute__((visibility("default"))) int __lsan_is_turned_off(void) { return 1; }

/* Touches every string of a table so that a bad pointer faults here. */
static size_t touch(const char *s) { return s ? strlen(s) : 0; }

static FILE *report;

static int list_lib(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  struct stat st;
  const char *p = info->dlpi_name;
  if (p && p[0] == '/' && !strpbrk(p, "\t\n") && stat(p, &st) == 0)
    fprintf(report, "lib\t%lld\t%lld\t%s\n", (long long)st.st_size,
            (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, p);
  return 0;
}

/* The libraries mapped now, so that a verdict made by a crash still names
 * the versions it was made with. */
static void report_libs(void) {
  if (!report) return;
  dl_iterate_phdr(list_lib, NULL);
  fflush(report);
}

static int done(void) {
  report_libs();
  if (report) {
    fputs("ok\n", report);
    fclose(report);
    report = NULL;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: hc-plugin-scanner PLUGIN.so\n");
    return 2;
  }
  /* A faulting plugin must kill this process with its signal, which is the
   * verdict the host reports: undo handlers a runtime may have installed
   * (AddressSanitizer's turns SIGSEGV into exit status 1). */
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
  report = fdopen(3, "w"); /* NULL when run by hand: exit status only */
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) return done(); /* the host reports why it cannot be loaded */
  report_libs();
  const hc_plugin_descriptor_t *d = dlsym(h, HC_PLUGIN_SYMBOL);
  if (!d || d->abi_major != HC_ABI_MAJOR || !d->ops) return done();
  size_t sum = touch(d->name) + touch(d->version) + touch(d->summary);
  if (d->kind == HC_PLUGIN_BACKEND) {
    const hc_backend_ops_t *ops = d->ops;
    if (ops->size < offsetof(hc_backend_ops_t, peer_copy) || !ops->init || !ops->device_count) return done();
    hc_context_options_t o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.no_env_path = 1;
    o.no_default_dirs = 1;
    hc_context_t *ctx = NULL;
    if (hc_context_create(&o, &ctx) != HC_OK) return done();
    void *state = NULL;
    if (ops->init(ctx, &state) == HC_OK) {
      uint32_t n = ops->device_count(state);
      for (uint32_t i = 0; i < n && i < 64 && ops->device_info; i++) {
        hc_device_info_t info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        ops->device_info(state, i, &info);
      }
      if (ops->status_message) sum += touch(ops->status_message(state));
      if (ops->fini) ops->fini(state);
    }
    hc_context_destroy(ctx);
  } else if (d->kind == HC_PLUGIN_WORKLOAD) {
    const hc_workload_ops_t *ops = d->ops;
    if (ops->size < sizeof *ops) return done();
    for (uint32_t i = 0; ops->params && ops->param_spec_size >= sizeof(hc_param_spec_t) && i < ops->nparams && i < 256;
         i++) {
      const hc_param_spec_t *p = (const void *)((const char *)ops->params + (size_t)i * ops->param_spec_size);
      sum += touch(p->name) + touch(p->def) + touch(p->choices) + touch(p->help);
    }
    for (int k = 0; k < 2; k++) {
      const hc_port_spec_t *base = k ? ops->outputs : ops->inputs;
      uint32_t n = k ? ops->noutputs : ops->ninputs;
      for (uint32_t i = 0; base && ops->port_spec_size >= sizeof(hc_port_spec_t) && i < n && i < 64; i++) {
        const hc_port_spec_t *p = (const void *)((const char *)base + (size_t)i * ops->port_spec_size);
        sum += touch(p->name) + touch(p->help);
      }
    }
  }
  /* Leave the plugin mapped: its destructors run at exit like the host's. */
  return sum == (size_t)-1 ? 3 : done();
}
