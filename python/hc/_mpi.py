"""MPI for hc.Context (docs/mpi.md): libhc-mpi's MPI_COMM_WORLD, started
once per process and ended at exit, as hcrun starts it under a launcher."""
import atexit
import ctypes
import os
from ctypes import POINTER, Structure, c_char, c_int, c_void_p

from . import _lib
from .errors import error

# The variables MPI launchers set in the processes they start (as hcrun
# looks for them: tools/hcrun/mpi.c).
LAUNCHER_VARS = ('OMPI_COMM_WORLD_SIZE', 'PMIX_RANK', 'PMI_RANK', 'PMI_SIZE', 'MPI_LOCALNRANKS')
LIBRARY = 'libhc-mpi.so.0'


class World(Structure):
    _fields_ = [('transport', c_void_p), ('rank', c_int), ('ranks', c_int), ('local_rank', c_int),
                ('local_ranks', c_int), ('argc', c_int), ('argv', c_void_p), ('library', c_char * 64)]


_world = None


def wanted():
    """Whether HC_MPI asks for MPI: on, or auto under a launcher."""
    mode = ctypes.c_longlong(0)
    st = _lib.load().hc_config_int(b'HC_MPI', ctypes.byref(mode))
    if st != 0:
        raise error(st)
    return mode.value == 1 or (mode.value == 0 and any(v in os.environ for v in LAUNCHER_VARS))


def world():
    """(libhc-mpi, its World) of this process, started at the first call."""
    global _world
    if _world is None:
        libhc = _lib.load()
        beside = os.path.join(os.path.dirname(libhc._name), LIBRARY)
        try:
            lib = ctypes.CDLL(beside if os.path.exists(beside) else LIBRARY, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise error(4, 'MPI was asked for (HC_MPI, or an MPI launcher started this process), but %s cannot '
                        'be loaded (%s): build hc with MPI, or set HC_MPI=off' % (LIBRARY, e))
        lib.hc_mpi_world_start.restype = c_int
        lib.hc_mpi_world_start.argtypes = [c_int, c_void_p, POINTER(World)]
        lib.hc_mpi_world_finish.restype = c_int
        lib.hc_mpi_world_finish.argtypes = [POINTER(World)]
        lib.hc_mpi_agree.restype = c_int
        lib.hc_mpi_agree.argtypes = [c_void_p, c_int]
        lib.hc_mpi_rank_device.restype = c_int
        lib.hc_mpi_rank_device.argtypes = [c_void_p, ctypes.c_char_p, c_int, POINTER(ctypes.c_uint32)]
        lib.hc_mpi_share_cores.restype = c_int
        lib.hc_mpi_share_cores.argtypes = [POINTER(World), c_int, POINTER(c_int), ctypes.c_char_p, ctypes.c_size_t]
        w = World()
        st = lib.hc_mpi_world_start(0, None, ctypes.byref(w))
        if st != 0:
            raise error(st)
        _world = (lib, w)
        atexit.register(_finish)
        share_cores(lib, w)
    return _world


def share_cores(lib, w):
    """As hcrun: ranks of a node that were left the same cores share them
    (hc_mpi_share_cores), each running as many threads as its run of them
    has (pinned there with HC_MPI_PIN=1), unless HC_CPU_THREADS is set
    (then nothing changes)."""
    user = bool(os.environ.get('HC_CPU_THREADS'))
    pin = ctypes.c_longlong(0)
    if _lib.load().hc_config_int(b'HC_MPI_PIN', ctypes.byref(pin)) != 0:
        pin.value = 0
    threads = c_int(0)
    if lib.hc_mpi_share_cores(ctypes.byref(w), int(not user and pin.value), ctypes.byref(threads), None, 0) != 0:
        return  # not fatal: this rank keeps every core it may run on
    if not user and threads.value:
        os.environ['HC_CPU_THREADS'] = str(threads.value)


def agree(status):
    """Every rank's status in, the deciding one out (its message in
    hc_last_error)."""
    lib, w = _world
    return lib.hc_mpi_agree(w.transport, status)


def rank_device(ctx_handle, workload, index):
    """The device this rank drives when it was given "auto" (hcrun's rule:
    hc_mpi_rank_device)."""
    lib, w = _world
    idx = ctypes.c_uint32(index)
    st = lib.hc_mpi_rank_device(ctx_handle, workload.encode(), w.local_rank, ctypes.byref(idx))
    if st != 0:
        raise error(st)
    return idx.value


def _finish():
    global _world
    if _world is not None:
        lib, w = _world
        _world = None
        lib.hc_mpi_world_finish(ctypes.byref(w))
