/* A test workload that exercises the core's parameter handling and hcrun's
 * exit codes: one parameter of every type, echoed back as metrics, and
 * switches that make the run fail in chosen ways. Host kernel only. */
#include <hc/plugin.h>
#include <string.h>

static const hc_param_spec_t params[] = {
    {"count", HC_PARAM_INT, 0, "10", 1, 1e9, NULL, "an integer in [1, 1e9]"},
    {"ratio", HC_PARAM_FLOAT, 0, "0.5", 0, 1, NULL, "a float in [0, 1]"},
    {"flag", HC_PARAM_BOOL, 0, "false", 1, 0, NULL, "a boolean"},
    {"label", HC_PARAM_STRING, 0, "hello", 1, 0, NULL, "a string"},
    {"mode", HC_PARAM_ENUM, 0, "fast", 0, 0, "fast|slow|exact", "an enum"},
    {"grid", HC_PARAM_SHAPE, 0, "4x5x6", 1, 4096, NULL, "a shape with extents in [1, 4096]"},
    {"dir", HC_PARAM_VEC, 0, "0,0,1", -10, 10, NULL, "up to 4 numbers in [-10, 10]"},
    {"nodefault", HC_PARAM_INT, 0, NULL, 1, 0, NULL, "an optional integer without default"},
    {"fail", HC_PARAM_ENUM, 0, "none", 0, 0, "none|verify|runtime|param|typo",
     "make the run fail this way (typo: read an undeclared parameter, and return success)"},
};

static const hc_port_spec_t outputs[] = {
    {"grid", HC_DTYPE_BIT(HC_F64), 1, 4, HC_PORT_PRIMARY, "a field of the grid's shape, value = linear index"},
};

static void fill_index(const hc_host_group_t *g, void *const *args) {
  double *out = args[0];
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) out[i] = (double)i;
}

static hc_status_t probe_run(hc_job_t *job) {
  const char *fail = hc_job_string(job, "fail");
  if (!strcmp(fail, "param")) return hc_error(HC_ERR_PARAM, "probe: fail=param asked for a parameter error");
  if (!strcmp(fail, "runtime")) return hc_error(HC_ERR_DEVICE, "probe: fail=runtime asked for a device error");
  if (!strcmp(fail, "typo")) return hc_job_int(job, "cuont") == 0 ? HC_OK : HC_ERR_INTERNAL;
  hc_shape_t s = hc_job_shape(job, "grid");
  hc_vec_t v = hc_job_vec(job, "dir");
  hc_job_add_metric(job, "count", (double)hc_job_int(job, "count"), "");
  hc_job_add_metric(job, "ratio", hc_job_float(job, "ratio"), "");
  hc_job_add_metric(job, "flag", hc_job_bool(job, "flag"), "");
  hc_job_add_metric(job, "label_length", (double)strlen(hc_job_string(job, "label")), "chars");
  hc_job_add_metric(job, "grid_rank", s.rank, "");
  hc_job_add_metric(job, "dir_count", v.count, "");
  hc_job_add_metric(job, "dir_last", v.count ? v.v[v.count - 1] : 0, "");
  hc_job_add_metric(job, "nodefault_given", hc_job_given(job, "nodefault"), "");
  hc_field_t *f = NULL;
  hc_kernel_t *k = NULL;
  hc_status_t st = hc_field_create(hc_job_device(job), HC_F64, s.rank, s.dims, &f);
  if (st != HC_OK) return st;
  hc_kernel_desc_t kd = {sizeof kd, "fill_index", NULL, NULL, fill_index};
  st = hc_kernel_create(hc_job_device(job), &kd, &k);
  if (st == HC_OK) {
    size_t n = hc_field_count(f);
    hc_arg_t a = HC_ARG_BUF(hc_field_buffer(f));
    st = hc_kernel_launch(k, 1, &n, NULL, 1, &a);
  }
  hc_kernel_destroy(k);
  if (st != HC_OK) {
    hc_field_destroy(f);
    return st;
  }
  if (hc_job_verify_requested(job))
    hc_job_set_verified(job, strcmp(fail, "verify") != 0, "probe verification (fail=%s)", fail);
  hc_job_note(job, "probe ran");
  return hc_job_set_output(job, "grid", f);
}

static const hc_workload_ops_t probe_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_OUTPUTS(outputs),
    .run = probe_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "probe",
                        "1.0",
                        "test workload: parameter types and failure modes",
                        &probe_ops};
