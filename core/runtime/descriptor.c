/* Plugin descriptor validation (see descriptor.h): everything the loader
 * checks about a descriptor before it trusts it, as pure functions. */
#include <stdio.h>
#include <string.h>

#include "descriptor.h"

static int valid_name(const char *s) {
  if (!s || !*s || strlen(s) > 63) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-')) return 0;
  return 1;
}

const char *hc__descriptor_problem(const hc_plugin_descriptor_t *d, char *buf, size_t n) {
  if (d->abi_major != HC_ABI_MAJOR || d->abi_minor > HC_ABI_MINOR) {
    snprintf(buf, n, "ABI mismatch: plugin built for %u.%u, core supports %u.0-%u.%u", d->abi_major, d->abi_minor,
             HC_ABI_MAJOR, HC_ABI_MAJOR, HC_ABI_MINOR);
    return buf;
  }
  if (d->kind != HC_PLUGIN_BACKEND && d->kind != HC_PLUGIN_WORKLOAD) {
    snprintf(buf, n, "invalid descriptor: unknown kind %u", d->kind);
    return buf;
  }
  if (!valid_name(d->name) || !d->ops || !d->version || !d->summary) {
    snprintf(buf, n,
             "invalid descriptor: name must be 1-63 of [a-z0-9_-], "
             "and version, summary and ops must be set");
    return buf;
  }
  return NULL;
}

/* Which required backend op is missing, or NULL. */
static const char *missing_backend_op(const hc_backend_ops_t *o) {
#define REQ(f) \
  if (!o->f) return #f
  REQ(init);
  REQ(device_count);
  REQ(device_info);
  REQ(device_open);
  REQ(device_close);
  REQ(mem_alloc);
  REQ(mem_free);
  REQ(mem_write);
  REQ(mem_read);
  REQ(mem_copy);
  REQ(mem_fill);
  REQ(kernel_release);
  REQ(launch);
  REQ(finish);
  REQ(timer_begin);
  REQ(timer_end);
#undef REQ
  if (!o->kernel_create_host && !(o->program_build && o->kernel_create))
    return "kernel_create_host or program_build+kernel_create";
  return NULL;
}

static const char *backend_problem(const hc_backend_ops_t *ops, char *buf, size_t n) {
  if (ops->size < HC_BACKEND_OPS_SIZE_1_0) {
    snprintf(buf, n, "invalid descriptor: backend ops size %u is smaller than ABI 1.0's (%zu)", ops->size,
             (size_t)HC_BACKEND_OPS_SIZE_1_0);
    return buf;
  }
  /* Only the members its size covers are read: the rest count as NULL,
   * as in the zero-extended copy the core keeps. */
  hc_backend_ops_t o;
  memset(&o, 0, sizeof o);
  memcpy(&o, ops, hc__ops_copy_bytes(ops->size, sizeof o));
  const char *miss = missing_backend_op(&o);
  if (miss) {
    snprintf(buf, n, "invalid descriptor: backend ops lack '%s'", miss);
    return buf;
  }
  return NULL;
}

/* ops is the plugin's table; members past ops->size are not read (the
 * loader keeps a zero-extended copy). */
static const char *workload_problem(const hc_workload_ops_t *ops) {
  if (ops->size < HC_WORKLOAD_OPS_SIZE_1_0) return "workload ops size smaller than ABI 1.0's";
  if (!ops->run) return "workload ops lack 'run'";
  if (ops->nparams && (!ops->params || ops->param_spec_size < HC_PARAM_SPEC_SIZE_1_0))
    return "parameter table missing or its entry size smaller than ABI 1.0's";
  if ((ops->ninputs && !ops->inputs) || (ops->noutputs && !ops->outputs) ||
      ((ops->ninputs || ops->noutputs) && ops->port_spec_size < HC_PORT_SPEC_SIZE_1_0))
    return "port table missing or its entry size smaller than ABI 1.0's";
  if (ops->nparams > 256 || ops->ninputs > 64 || ops->noutputs > 64) return "too many parameters or ports";
  for (uint32_t i = 0; i < ops->nparams; i++) {
    const hc_param_spec_t *p = (const void *)((const char *)ops->params + (size_t)i * ops->param_spec_size);
    if (!p->name || !*p->name) return "a parameter has no name";
    if (p->type >= HC_PARAM_TYPE_COUNT_) return "a parameter has an unknown type";
    if (p->type == HC_PARAM_ENUM && !p->choices) return "an enum parameter has no choices";
  }
  for (uint32_t k = 0; k < 2; k++) {
    uint32_t cnt = k ? ops->noutputs : ops->ninputs;
    const hc_port_spec_t *base = k ? ops->outputs : ops->inputs;
    for (uint32_t i = 0; i < cnt; i++) {
      const hc_port_spec_t *p = (const void *)((const char *)base + (size_t)i * ops->port_spec_size);
      if (!p->name || !*p->name) return "a port has no name";
      if (p->rank_min < 0 || p->rank_max > HC_MAX_DIMS || p->rank_min > p->rank_max)
        return "a port has an invalid rank range";
    }
  }
  return NULL;
}

const char *hc__descriptor_ops_problem(const hc_plugin_descriptor_t *d, char *buf, size_t n) {
  if (d->kind == HC_PLUGIN_BACKEND) return backend_problem(d->ops, buf, n);
  const char *bad = workload_problem(d->ops);
  if (!bad) return NULL;
  snprintf(buf, n, "invalid descriptor: %s", bad);
  return buf;
}
