/* The source of a backend plugin with no device, for tests that compile
 * plugins at run time (the loader's, the probe's): its init runs
 * `init_body;` and returns `init_status`; `with_launch` 0 leaves the
 * required launch op out. Returns buf. */
#ifndef HC_TESTS_STUB_BACKEND_H
#define HC_TESTS_STUB_BACKEND_H

#include <stdio.h>

static inline const char *stub_backend_src(char *buf, size_t n, const char *name, const char *init_body,
                                           const char *init_status, int with_launch) {
  snprintf(
      buf, n,
      "#include <hc/plugin.h>\n#include <signal.h>\n#include <stdlib.h>\n#include <sys/resource.h>\n#include "
      "<unistd.h>\n"
      "static hc_status_t init(hc_context_t *c, void **s) { (void)c; *s = 0; %s; return %s; }\n"
      "static uint32_t count(void *s) { (void)s; return 0; }\n"
      "static hc_status_t info(void *s, uint32_t i, hc_device_info_t *o) { (void)s; (void)i; (void)o; return "
      "HC_ERR_NOT_FOUND; }\n"
      "static hc_status_t open_(void *s, uint32_t i, void **d) { (void)s; (void)i; (void)d; return HC_ERR_NOT_FOUND; "
      "}\n"
      "static void close_(void *d) { (void)d; }\n"
      "static hc_status_t alloc(void *d, size_t n, void **m) { (void)d; (void)n; (void)m; return HC_ERR_DEVICE; }\n"
      "static void mfree(void *d, void *m) { (void)d; (void)m; }\n"
      "static hc_status_t rw(void *d, void *m, size_t o, const void *s, size_t n) { (void)d; (void)m; (void)o; "
      "(void)s; (void)n; return HC_OK; }\n"
      "static hc_status_t rd(void *d, void *m, size_t o, void *s, size_t n) { (void)d; (void)m; (void)o; (void)s; "
      "(void)n; return HC_OK; }\n"
      "static hc_status_t cp(void *d, void *a, size_t b, void *c, size_t e, size_t n) { (void)d; (void)a; (void)b; "
      "(void)c; (void)e; (void)n; return HC_OK; }\n"
      "static hc_status_t fill(void *d, void *m, size_t o, const void *p, size_t ps, size_t n) { (void)d; (void)m; "
      "(void)o; (void)p; (void)ps; (void)n; return HC_OK; }\n"
      "static hc_status_t kh(void *d, hc_host_kernel_fn f, void **k) { (void)d; (void)f; (void)k; return HC_OK; }\n"
      "static void kr(void *d, void *k) { (void)d; (void)k; }\n"
      "static hc_status_t launch(void *d, void *k, const hc_launch_t *l) { (void)d; (void)k; (void)l; return HC_OK; }\n"
      "static hc_status_t fin(void *d) { (void)d; return HC_OK; }\n"
      "static hc_status_t te(void *d, double *s) { (void)d; *s = 0; return HC_OK; }\n"
      "static const hc_backend_ops_t ops = { .size = sizeof(hc_backend_ops_t), .init = init, .device_count = count,\n"
      "  .device_info = info, .device_open = open_, .device_close = close_, .mem_alloc = alloc, .mem_free = mfree,\n"
      "  .mem_write = rw, .mem_read = rd, .mem_copy = cp, .mem_fill = fill, .kernel_create_host = kh,\n"
      "  .kernel_release = kr, .launch = %s, .finish = fin, .timer_begin = fin, .timer_end = te };\n"
      "HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR, HC_ABI_MINOR, HC_PLUGIN_BACKEND, 0, \"%s\", \"1\", \"test\", &ops};\n",
      init_body, init_status, with_launch ? "launch" : "0", name);
  return buf;
}

#endif
