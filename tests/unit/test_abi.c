/* The plugin ABI pinned: every size and member offset of the structs that
 * cross the plugin boundary (x86-64 / LP64). An accidental change fails
 * here; an intended one bumps HC_ABI_MAJOR (or, for members appended at
 * the end, HC_ABI_MINOR) and updates this file. */
#include <stddef.h>

#include "harness.h"

static void test_abi_version(void) {
  CU_ASSERT_EQUAL(HC_ABI_MAJOR, 1);
  CU_ASSERT_EQUAL(HC_ABI_MINOR, 7);
  CU_ASSERT_STRING_EQUAL(HC_PLUGIN_SYMBOL, "hc_plugin_descriptor");
}

static void test_enums(void) {
  CU_ASSERT_EQUAL(HC_F32, 1);
  CU_ASSERT_EQUAL(HC_F64, 2);
  CU_ASSERT_EQUAL(HC_C64, 3);
  CU_ASSERT_EQUAL(HC_C128, 4);
  CU_ASSERT_EQUAL(HC_LANG_HOST, 0);
  CU_ASSERT_EQUAL(HC_LANG_OPENCL_C, 1);
  CU_ASSERT_EQUAL(HC_LANG_CUDA_C, 2);
  CU_ASSERT_EQUAL(HC_PLUGIN_BACKEND, 1);
  CU_ASSERT_EQUAL(HC_PLUGIN_WORKLOAD, 2);
  CU_ASSERT_EQUAL(HC_PARAM_INT, 0);
  CU_ASSERT_EQUAL(HC_PARAM_VEC, 6);
  CU_ASSERT_EQUAL(HC_ERR_INTERNAL, 18);
  CU_ASSERT_EQUAL(HC_ERR_NUMERIC, 19);
  CU_ASSERT_EQUAL(HC_ARG_KIND_BUFFER, 1);
  CU_ASSERT_EQUAL(HC_ARG_KIND_SCALAR, 2);
}

static void test_names_from_one_list(void) {
  CU_ASSERT_STRING_EQUAL(hc_status_name(HC_ERR_DEVICE_MEMORY), "HC_ERR_DEVICE_MEMORY");
  CU_ASSERT_STRING_EQUAL(hc_status_str(HC_ERR_DEVICE_MEMORY), "out of device memory");
  CU_ASSERT_STRING_EQUAL(hc_status_name((hc_status_t)999), "HC_UNKNOWN");
  CU_ASSERT_STRING_EQUAL(hc_dtype_name(HC_C128), "c128");
  CU_ASSERT_EQUAL(hc_dtype_from_name("c64"), HC_C64);
  CU_ASSERT_EQUAL(hc_dtype_from_name("i32"), HC_DTYPE_NONE);
  CU_ASSERT_EQUAL(hc_dtype_size(HC_C128), 16);
  CU_ASSERT_EQUAL(hc_dtype_real_part(HC_C64), HC_F32);
  CU_ASSERT_STRING_EQUAL(hc_language_name(HC_LANG_CUDA_C), "cuda-c");
  CU_ASSERT_STRING_EQUAL(hc_device_type_name(HC_DEVICE_GPU), "gpu");
  CU_ASSERT_STRING_EQUAL(hc_param_type_name(HC_PARAM_SHAPE), "shape");
}

static void test_layouts(void) {
  /* ABI 1.0's table sizes, the smallest the core accepts: fixed forever */
  CU_ASSERT_EQUAL(HC_BACKEND_OPS_SIZE_1_0, 208);
  CU_ASSERT_EQUAL(HC_WORKLOAD_OPS_SIZE_1_0, 80);
  CU_ASSERT_EQUAL(HC_PARAM_SPEC_SIZE_1_0, 56);
  CU_ASSERT_EQUAL(HC_PORT_SPEC_SIZE_1_0, 32);
  CU_ASSERT_EQUAL(sizeof(hc_plugin_descriptor_t), 48);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, abi_major), 0);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, abi_minor), 4);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, kind), 8);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, name), 16);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, version), 24);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, summary), 32);
  CU_ASSERT_EQUAL(offsetof(hc_plugin_descriptor_t, ops), 40);
  CU_ASSERT_EQUAL(sizeof(hc_backend_ops_t), 336);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, size), 0);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, init), 8);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, fini), 16);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_count), 24);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, status_message), 32);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_info), 40);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_open), 48);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_close), 56);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_alloc), 64);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_free), 72);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_write), 80);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_read), 88);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_copy), 96);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_fill), 104);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_host_ptr), 112);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, program_build), 120);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, program_release), 128);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, kernel_create), 136);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, kernel_create_host), 144);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, kernel_release), 152);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, kernel_max_group_size), 160);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, launch), 168);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, finish), 176);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, timer_begin), 184);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, timer_end), 192);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, peer_copy), 200);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_native), 208);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_wrap), 216);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, mem_unwrap), 224);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, trace_command_begin), 232);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, trace_command_end), 240);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, trace_time), 248);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, trace_discard), 256);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, range_push), 264);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, range_pop), 272);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, host_alloc), 280);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, host_free), 288);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_pci_bus_id), 296);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_set_workers), 304);
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, device_bind_thread), 312); /* ABI 1.6 */
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, host_register), 320);      /* ABI 1.7 */
  CU_ASSERT_EQUAL(offsetof(hc_backend_ops_t, host_unregister), 328);
  CU_ASSERT_EQUAL(sizeof(hc_workload_ops_t), 88);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, size), 0);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, languages), 4);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, param_spec_size), 8);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, nparams), 12);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, params), 16);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, port_spec_size), 24);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, ninputs), 28);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, inputs), 32);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, noutputs), 40);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, outputs), 48);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, check), 56);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, describe_output), 64);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, run), 72);
  CU_ASSERT_EQUAL(offsetof(hc_workload_ops_t, split), 80); /* ABI 1.2 */
  CU_ASSERT_EQUAL(sizeof(hc_split_t), 336);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, kind), 4);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, rows), 8);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, halo), 16);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, min_rows), 20);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, why), 24);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, calibrate), 224);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, calibrate_work), 320);
  CU_ASSERT_EQUAL(offsetof(hc_split_t, slab_inputs), 328); /* ABI 1.6 */
  CU_ASSERT_EQUAL(sizeof(hc_param_spec_t), 56);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, name), 0);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, type), 8);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, def), 16);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, min), 24);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, max), 32);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, choices), 40);
  CU_ASSERT_EQUAL(offsetof(hc_param_spec_t, help), 48);
  CU_ASSERT_EQUAL(sizeof(hc_port_spec_t), 32);
  CU_ASSERT_EQUAL(offsetof(hc_port_spec_t, name), 0);
  CU_ASSERT_EQUAL(offsetof(hc_port_spec_t, dtypes), 8);
  CU_ASSERT_EQUAL(offsetof(hc_port_spec_t, rank_min), 12);
  CU_ASSERT_EQUAL(offsetof(hc_port_spec_t, rank_max), 16);
  CU_ASSERT_EQUAL(offsetof(hc_port_spec_t, flags), 20);
  CU_ASSERT_EQUAL(offsetof(hc_port_spec_t, help), 24);
  CU_ASSERT_EQUAL(sizeof(hc_launch_t), 72);
  CU_ASSERT_EQUAL(offsetof(hc_launch_t, size), 0);
  CU_ASSERT_EQUAL(offsetof(hc_launch_t, dims), 4);
  CU_ASSERT_EQUAL(offsetof(hc_launch_t, global), 8);
  CU_ASSERT_EQUAL(offsetof(hc_launch_t, local), 32);
  CU_ASSERT_EQUAL(offsetof(hc_launch_t, nargs), 56);
  CU_ASSERT_EQUAL(offsetof(hc_launch_t, args), 64);
  CU_ASSERT_EQUAL(sizeof(hc_launch_arg_t), 24);
  CU_ASSERT_EQUAL(offsetof(hc_launch_arg_t, kind), 0);
  CU_ASSERT_EQUAL(offsetof(hc_launch_arg_t, size), 4);
  CU_ASSERT_EQUAL(offsetof(hc_launch_arg_t, value), 8);
  CU_ASSERT_EQUAL(offsetof(hc_launch_arg_t, mem), 16);
  CU_ASSERT_EQUAL(sizeof(hc_host_group_t), 136);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, dims), 0);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, worker), 4);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, num_workers), 8);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, group_id), 16);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, num_groups), 40);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, lo), 64);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, hi), 88);
  CU_ASSERT_EQUAL(offsetof(hc_host_group_t, global), 112);
  CU_ASSERT_EQUAL(sizeof(hc_kernel_desc_t), 40);
  CU_ASSERT_EQUAL(offsetof(hc_kernel_desc_t, size), 0);
  CU_ASSERT_EQUAL(offsetof(hc_kernel_desc_t, name), 8);
  CU_ASSERT_EQUAL(offsetof(hc_kernel_desc_t, source), 16);
  CU_ASSERT_EQUAL(offsetof(hc_kernel_desc_t, options), 24);
  CU_ASSERT_EQUAL(offsetof(hc_kernel_desc_t, host_fn), 32);
  CU_ASSERT_EQUAL(sizeof(hc_arg_t), 16);
  CU_ASSERT_EQUAL(offsetof(hc_arg_t, kind), 0);
  CU_ASSERT_EQUAL(offsetof(hc_arg_t, size), 4);
  CU_ASSERT_EQUAL(offsetof(hc_arg_t, value), 8);
  CU_ASSERT_EQUAL(sizeof(hc_device_info_t), 528);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, size), 0);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, type), 4);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, name), 8);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, vendor), 136);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, platform), 200);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, driver), 328);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, arch), 392);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, languages), 424);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, compute_units), 428);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, clock_mhz), 432);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, fp64), 436);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, max_work_group_size), 440);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, preferred_group_multiple), 444);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, global_mem_bytes), 448);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, max_alloc_bytes), 456);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, local_mem_bytes), 464);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, l1_cache_bytes), 472);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, l2_cache_bytes), 480);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, l3_cache_bytes), 488);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, cc_major), 496);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, cc_minor), 500);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, peak_fp32_gflops), 504);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, peak_fp64_gflops), 512);
  CU_ASSERT_EQUAL(offsetof(hc_device_info_t, peak_bandwidth_gbs), 520);
  CU_ASSERT_EQUAL(sizeof(hc_context_options_t), 72);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, size), 0);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, plugin_dirs), 8);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, plugin_dir_count), 16);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, no_env_path), 20);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, no_default_dirs), 24);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, log), 32);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, log_user), 40);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, log_level), 48);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, progress), 56);
  CU_ASSERT_EQUAL(offsetof(hc_context_options_t, progress_user), 64);
  CU_ASSERT_EQUAL(sizeof(hc_shape_t), 40);
  CU_ASSERT_EQUAL(sizeof(hc_vec_t), 40);
  CU_ASSERT_EQUAL(sizeof(hc_job_times_t), 24);
  CU_ASSERT_EQUAL(sizeof(hc_transfer_stats_t), 56);
  CU_ASSERT_EQUAL(sizeof(hc_plugin_summary_t), 32);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("abi", NULL, NULL);
  CU_ADD_TEST(s, test_abi_version);
  CU_ADD_TEST(s, test_enums);
  CU_ADD_TEST(s, test_names_from_one_list);
  CU_ADD_TEST(s, test_layouts);
}

TH_MAIN(register_tests)
