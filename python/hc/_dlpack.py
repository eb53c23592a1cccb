"""DLPack export (the legacy unversioned "dltensor" capsule, which every
consumer accepts) built with ctypes: the capsule's deleter drops the
reference that keeps the hc field alive."""
import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p

KDL_CPU, KDL_CUDA = 1, 2
_KDL_FLOAT, _KDL_COMPLEX = 2, 5


class _Device(Structure):
    _fields_ = [('device_type', c_int32), ('device_id', c_int32)]


class _DType(Structure):
    _fields_ = [('code', c_uint8), ('bits', c_uint8), ('lanes', c_uint16)]


class _Tensor(Structure):
    _fields_ = [('data', c_void_p), ('device', _Device), ('ndim', c_int32), ('dtype', _DType),
                ('shape', POINTER(c_int64)), ('strides', POINTER(c_int64)), ('byte_offset', c_uint64)]


class _Managed(Structure):
    pass


_DELETER = CFUNCTYPE(None, POINTER(_Managed))
_Managed._fields_ = [('dl_tensor', _Tensor), ('manager_ctx', c_void_p), ('deleter', _DELETER)]

# Managed tensors handed out and not yet deleted, by address: each entry
# holds the struct, its shape array and the field.
_alive = {}


@_DELETER
def _delete(managed):
    _alive.pop(ctypes.addressof(managed.contents), None)


_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [c_void_p, ctypes.c_char_p]
_NAME = b'dltensor'


@CFUNCTYPE(None, c_void_p)
def _capsule_gone(capsule):
    # A capsule no consumer took ("dltensor", not renamed "used_dltensor"):
    # its tensor is ours to delete.
    if _api.PyCapsule_IsValid(capsule, _NAME):
        _alive.pop(_api.PyCapsule_GetPointer(capsule, _NAME), None)


def capsule(owner, ptr, device_type, device_id, shape, dtype):
    m = _Managed()
    dims = (c_int64 * max(len(shape), 1))(*shape)
    m.dl_tensor.data = ptr
    m.dl_tensor.device = _Device(device_type, device_id)
    m.dl_tensor.ndim = len(shape)
    complex_ = dtype.kind == 'c'
    m.dl_tensor.dtype = _DType(_KDL_COMPLEX if complex_ else _KDL_FLOAT, dtype.itemsize * 8, 1)
    m.dl_tensor.shape = dims
    m.dl_tensor.strides = None  # C order
    m.dl_tensor.byte_offset = 0
    m.deleter = _delete
    address = ctypes.addressof(m)
    _alive[address] = (m, dims, owner)
    return _api.PyCapsule_New(address, _NAME, ctypes.cast(_capsule_gone, c_void_p))
