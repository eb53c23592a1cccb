"""ctypes declarations of libhc's C API (include/hc/*.h) and how the library
is found. Nothing here is public: the classes in hc/__init__.py wrap it."""
import ctypes
import ctypes.util
import os
import subprocess
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t,
                    c_uint32, c_uint64, c_void_p)

HC_MAX_DIMS = 4
SONAME = 'libhc.so.0'
GRID_SONAME = 'libhc-grid.so.0'


class DeviceInfo(Structure):
    _fields_ = [('size', c_uint32), ('type', c_int), ('name', c_char * 128), ('vendor', c_char * 64),
                ('platform', c_char * 128), ('driver', c_char * 64), ('arch', c_char * 32),
                ('languages', c_uint32), ('compute_units', c_uint32), ('clock_mhz', c_uint32),
                ('fp64', c_uint32), ('max_work_group_size', c_uint32), ('preferred_group_multiple', c_uint32),
                ('global_mem_bytes', c_uint64), ('max_alloc_bytes', c_uint64), ('local_mem_bytes', c_uint64),
                ('l1_cache_bytes', c_uint64), ('l2_cache_bytes', c_uint64), ('l3_cache_bytes', c_uint64),
                ('cc_major', c_uint32), ('cc_minor', c_uint32), ('peak_fp32_gflops', c_double),
                ('peak_fp64_gflops', c_double), ('peak_bandwidth_gbs', c_double)]


class ContextOptions(Structure):
    _fields_ = [('size', c_uint32), ('plugin_dirs', POINTER(c_char_p)), ('plugin_dir_count', c_uint32),
                ('no_env_path', c_uint32), ('no_default_dirs', c_uint32), ('log', c_void_p), ('log_user', c_void_p),
                ('log_level', c_int), ('progress', c_void_p), ('progress_user', c_void_p)]


class PluginSummary(Structure):
    _fields_ = [('name', c_char_p), ('version', c_char_p), ('summary', c_char_p), ('path', c_char_p)]


class ParamSpec(Structure):
    _fields_ = [('name', c_char_p), ('type', c_uint32), ('reserved_', c_uint32), ('default', c_char_p),
                ('min', c_double), ('max', c_double), ('choices', c_char_p), ('help', c_char_p)]


class PortSpec(Structure):
    _fields_ = [('name', c_char_p), ('dtypes', c_uint32), ('rank_min', c_int32), ('rank_max', c_int32),
                ('flags', c_uint32), ('help', c_char_p)]


class JobTimes(Structure):
    _fields_ = [('wall_s', c_double), ('compute_s', c_double), ('device_s', c_double)]


class NativeMem(Structure):
    _fields_ = [('size', c_uint32), ('kind', c_uint32), ('ptr', c_void_p), ('ordinal', c_int32),
                ('reserved_', c_uint32)]


class TraceOptions(Structure):
    _fields_ = [('size', c_uint32), ('reserved_', c_uint32), ('max_events', c_uint64)]


class TraceUsage(Structure):
    _fields_ = [('size', c_uint32), ('device', c_uint32), ('events', c_uint64), ('window_s', c_double),
                ('compute_s', c_double), ('transfer_s', c_double)]


class PartStats(Structure):
    _fields_ = [('size', c_uint32), ('lo', c_int64), ('hi', c_int64), ('weight', c_double), ('compute_s', c_double),
                ('device_s', c_double), ('idle_s', c_double), ('halo_s', c_double), ('halo_bytes', c_uint64),
                ('collective_s', c_double), ('collectives', c_uint64), ('device', c_char * 48),
                ('halo_peer_bytes', c_uint64), ('halo_direct_bytes', c_uint64)]


class TransferStats(Structure):
    _fields_ = [('to_device_count', c_uint64), ('to_device_bytes', c_uint64), ('to_host_count', c_uint64),
                ('to_host_bytes', c_uint64), ('cross_device_count', c_uint64), ('cross_device_bytes', c_uint64),
                ('seconds', c_double)]


class StageInfo(Structure):
    _fields_ = [('workload', c_char_p), ('device', c_char_p), ('state', c_int), ('status', c_int),
                ('times', JobTimes), ('handover_s', c_double), ('handover', TransferStats),
                ('run', TransferStats)]


class PipelineTransfer(Structure):
    _fields_ = [('stage', c_uint32), ('input', c_char_p), ('from_stage', c_int32), ('output', c_char_p),
                ('from_device', c_char * 48), ('to_device', c_char * 48), ('bytes', c_uint64),
                ('seconds', c_double)]


class PipelineReport(Structure):
    _fields_ = [('status', c_int), ('failed_stage', c_int32), ('message', c_char_p), ('stages_run', c_uint32),
                ('wall_s', c_double), ('compute_s', c_double), ('device_s', c_double), ('handovers', c_uint32),
                ('handovers_on_device', c_uint32), ('transfer_count', c_uint32), ('transfer_bytes', c_uint64),
                ('transfer_s', c_double), ('between', TransferStats), ('total', TransferStats)]


class GridOptions(Structure):
    _fields_ = [('size', c_uint32), ('fuse', c_uint32), ('host', c_uint32), ('reserved_', c_uint32)]


class GridRange(Structure):
    _fields_ = [('lo', c_int64 * HC_MAX_DIMS), ('hi', c_int64 * HC_MAX_DIMS), ('parity', c_uint32),
                ('reserved_', c_uint32)]


class GridStats(Structure):
    _fields_ = [('size', c_uint32), ('reserved_', c_uint32)] + [
        (n, c_uint64) for n in ('assignments', 'launches', 'kernels_built', 'cache_hits', 'materialised', 'staged',
                                'host_compiled', 'host_evaluated', 'compiler_fallbacks')]


P = c_void_p  # every opaque handle
S = c_int     # hc_status_t

# name: (restype, argtypes). One table for libhc ...
LIBHC = {
    'hc_status_name': (c_char_p, [S]),
    'hc_status_exit_code': (c_int, [S]),
    'hc_status_str': (c_char_p, [S]),
    'hc_last_error': (c_char_p, []),
    'hc_context_create': (S, [POINTER(ContextOptions), POINTER(P)]),
    'hc_context_live_buffers': (c_uint64, [P]),
    'hc_context_destroy': (None, [P]),
    'hc_backend_count': (c_uint32, [P]),
    'hc_backend_get': (S, [P, c_uint32, POINTER(PluginSummary)]),
    'hc_backend_status': (c_char_p, [P, c_uint32]),
    'hc_workload_count': (c_uint32, [P]),
    'hc_workload_get': (S, [P, c_uint32, POINTER(PluginSummary)]),
    'hc_device_count': (c_uint32, [P]),
    'hc_device_id': (c_char_p, [P, c_uint32]),
    'hc_device_query': (S, [P, c_uint32, POINTER(DeviceInfo)]),
    'hc_device_find': (S, [P, c_char_p, POINTER(c_uint32)]),
    'hc_device_find_auto': (S, [P, c_char_p, POINTER(c_uint32)]),
    'hc_device_open': (S, [P, c_uint32, POINTER(P)]),
    'hc_device_close': (None, [P]),
    'hc_device_name': (c_char_p, [P]),
    'hc_device_info': (POINTER(DeviceInfo), [P]),
    'hc_device_finish': (S, [P]),
    'hc_buffer_host_ptr': (c_void_p, [P]),
    'hc_buffer_native': (S, [P, POINTER(NativeMem)]),
    'hc_field_create': (S, [P, c_int, c_uint32, POINTER(c_int64), POINTER(P)]),
    'hc_field_wrap': (S, [P, c_int, c_uint32, POINTER(c_int64), POINTER(NativeMem), POINTER(P)]),
    'hc_field_destroy': (None, [P]),
    'hc_field_dtype': (c_int, [P]),
    'hc_field_rank': (c_uint32, [P]),
    'hc_field_shape': (POINTER(c_int64), [P]),
    'hc_field_bytes': (c_size_t, [P]),
    'hc_field_buffer': (P, [P]),
    'hc_field_device': (P, [P]),
    'hc_field_read': (S, [P, c_void_p]),
    'hc_field_write': (S, [P, c_void_p]),
    'hc_field_set_spacing': (None, [P, POINTER(c_double)]),
    'hc_field_spacing': (POINTER(c_double), [P]),
    'hc_field_name': (c_char_p, [P]),
    'hc_field_set_name': (None, [P, c_char_p]),
    'hc_job_create': (S, [P, c_char_p, POINTER(P)]),
    'hc_job_destroy': (None, [P]),
    'hc_job_set': (S, [P, c_char_p, c_char_p]),
    'hc_job_set_input': (S, [P, c_char_p, P]),
    'hc_job_set_output_dir': (S, [P, c_char_p]),
    'hc_job_run': (S, [P, P, c_uint32]),
    'hc_job_output': (P, [P, c_char_p]),
    'hc_job_take_output': (S, [P, c_char_p, POINTER(P)]),
    'hc_job_times': (None, [P, POINTER(JobTimes)]),
    'hc_job_build_time': (None, [P, POINTER(c_double), POINTER(c_double)]),
    'hc_job_metric_count': (c_uint32, [P]),
    'hc_job_metric': (S, [P, c_uint32, POINTER(c_char_p), POINTER(c_double), POINTER(c_char_p)]),
    'hc_job_verified': (c_int, [P, POINTER(c_char_p)]),
    'hc_job_notes': (c_char_p, [P]),
    'hc_job_param_count': (c_uint32, [P]),
    'hc_job_param_get': (S, [P, c_uint32, POINTER(c_char_p), POINTER(c_char_p)]),
    'hc_workload_param_count': (c_uint32, [P, c_char_p]),
    'hc_workload_param': (POINTER(ParamSpec), [P, c_char_p, c_uint32]),
    'hc_workload_port_count': (c_uint32, [P, c_char_p, c_int]),
    'hc_workload_port': (POINTER(PortSpec), [P, c_char_p, c_int, c_uint32]),
    'hc_pipeline_parse': (S, [P, c_char_p, POINTER(P)]),
    'hc_pipeline_destroy': (None, [P]),
    'hc_pipeline_set_output_dir': (S, [P, c_char_p]),
    'hc_pipeline_validate': (S, [P]),
    'hc_pipeline_run': (S, [P, c_uint32]),
    'hc_pipeline_stage_count': (c_uint32, [P]),
    'hc_pipeline_stage_job': (P, [P, c_uint32]),
    'hc_pipeline_stage_device': (P, [P, c_uint32]),
    'hc_pipeline_stage_set': (P, [P, c_uint32]),
    'hc_pipeline_stage_info': (S, [P, c_uint32, POINTER(StageInfo)]),
    'hc_pipeline_transfer_count': (c_uint32, [P]),
    'hc_pipeline_transfer_get': (S, [P, c_uint32, POINTER(PipelineTransfer)]),
    'hc_pipeline_report': (None, [P, POINTER(PipelineReport)]),
    'hc_pipeline_set_input': (S, [P, c_uint32, c_char_p, P]),
    'hc_config_int': (S, [c_char_p, POINTER(ctypes.c_longlong)]),
    'hc_devset_parse': (S, [P, c_char_p, c_char_p, POINTER(P)]),
    'hc_devset_create': (S, [P, POINTER(P), c_uint32, POINTER(P)]),
    'hc_devset_set_transport': (S, [P, P]),
    'hc_devset_parse_weights': (S, [P, c_char_p]),
    'hc_devset_destroy': (None, [P]),
    'hc_devset_device': (P, [P, c_uint32]),
    'hc_devset_parts': (c_uint32, [P]),
    'hc_devset_part_stats': (S, [P, c_uint32, POINTER(PartStats)]),
    'hc_devset_plan': (c_char_p, [P]),
    'hc_devset_best_single': (c_double, [P, POINTER(c_char_p)]),
    'hc_job_check_split': (S, [P, P]),
    'hc_job_run_split': (S, [P, P, c_uint32]),
    'hc_job_find_device': (S, [P, POINTER(c_uint32), c_char_p, c_size_t]),
    'hc_job_record_run': (None, [P, P]),
    'hc_trace_start': (S, [P, c_char_p, POINTER(TraceOptions)]),
    'hc_trace_stop': (S, [P]),
    'hc_trace_active': (c_int, [P]),
    'hc_trace_usage': (S, [P, c_uint32, POINTER(TraceUsage)]),
}

# ... and one for libhc-grid.
LIBGRID = {
    'hc_grid_create': (S, [P, POINTER(GridOptions), POINTER(P)]),
    'hc_grid_destroy': (None, [P]),
    'hc_grid_clear': (None, [P]),
    'hc_grid_error': (S, [P, POINTER(c_char_p)]),
    'hc_grid_stats': (None, [P, POINTER(GridStats)]),
    'hc_grid_fuse_from_name': (S, [c_char_p, POINTER(c_uint32)]),
    'hc_grid_host_from_name': (S, [c_char_p, POINTER(c_uint32)]),
    'hc_gexpr_dense': (P, [P, P]),
    'hc_gexpr_scalar': (P, [P, c_double]),
    'hc_gexpr_coord': (P, [P, c_uint32]),
    'hc_gexpr_index': (P, [P, c_uint32]),
    'hc_gexpr_add': (P, [P, P, P]),
    'hc_gexpr_sub': (P, [P, P, P]),
    'hc_gexpr_mul': (P, [P, P, P]),
    'hc_gexpr_scale': (P, [P, c_double, P]),
    'hc_gexpr_apply': (P, [P, P, P]),
    'hc_gop_stencil': (P, [P, c_uint32, c_uint32, POINTER(c_int32), POINTER(c_double)]),
    'hc_gop_laplacian': (P, [P, c_uint32, POINTER(c_double)]),
    'hc_gop_diff': (P, [P, c_uint32, c_uint32, c_int, c_double]),
    'hc_gop_restrict_fw': (P, [P, c_uint32]),
    'hc_gop_prolong_linear': (P, [P, c_uint32]),
    'hc_gop_identity': (P, [P, c_uint32]),
    'hc_gop_add': (P, [P, P, P]),
    'hc_gop_sub': (P, [P, P, P]),
    'hc_gop_scale': (P, [P, c_double, P]),
    'hc_gop_compose': (P, [P, P, P]),
    'hc_grid_interior': (GridRange, [c_int64]),
    'hc_grid_assign': (S, [P, P, P, POINTER(GridRange), POINTER(GridOptions)]),
    'hc_grid_reduce': (S, [P, c_int, P, P, POINTER(GridRange), POINTER(GridOptions), POINTER(c_double)]),
}


def _declare(lib, table):
    for name, (res, args) in table.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def _candidates(soname):
    """Where libhc may be: the checkout's build tree (this package's
    ../../build/lib), pkg-config's libdir, then the loader's own search."""
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(os.path.dirname(os.path.dirname(here)), 'build', 'lib', soname)
    if os.path.exists(tree):
        yield tree
    try:
        libdir = subprocess.run(['pkg-config', '--variable=libdir', 'hc'], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        if libdir and os.path.exists(os.path.join(libdir, soname)):
            yield os.path.join(libdir, soname)
    except (OSError, subprocess.SubprocessError):
        pass
    found = ctypes.util.find_library(soname[3:].split('.so')[0])
    if found:
        yield found


_hc = None
_grid = None


def load(path=None):
    """Loads libhc (from path, or the first of _candidates) once."""
    global _hc
    if _hc is not None:
        if path and os.path.realpath(path) != os.path.realpath(_hc._name):
            raise RuntimeError('libhc is already loaded from %s' % _hc._name)
        return _hc
    tried = [path] if path else list(_candidates(SONAME))
    errors = []
    for p in tried:
        try:
            # RTLD_GLOBAL: libhc-grid and the plugins resolve against this copy.
            _hc = _declare(ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL), LIBHC)
            return _hc
        except OSError as e:
            errors.append('%s: %s' % (p, e))
    raise ImportError('hc: cannot load libhc (%s). Build hc (scons) or install it (scons install) and make '
                      'pkg-config find it (PKG_CONFIG_PATH).' % ('; '.join(errors) or 'not found'))


def grid():
    """Loads libhc-grid beside the libhc in use."""
    global _grid
    if _grid is None:
        lib = load()
        beside = os.path.join(os.path.dirname(lib._name), GRID_SONAME)
        try:
            _grid = _declare(ctypes.CDLL(beside if os.path.exists(beside) else GRID_SONAME), LIBGRID)
        except OSError as e:
            raise ImportError('hc: cannot load libhc-grid (%s)' % e) from None
    return _grid
