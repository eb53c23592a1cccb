"""hc.Field: a field on an hc device, seen from Python as an array.

NumPy reads it without a copy where the device shares host memory (the cpu
backend) and with one read otherwise; CuPy and PyTorch take a CUDA field in
place through __cuda_array_interface__ or DLPack. Arrays become fields
without a copy where the device can use their memory (host arrays on the cpu
backend, CUDA arrays on their CUDA device) and with one write otherwise."""
import ctypes

import numpy as np

from . import _dlpack, _lib
from .errors import check, error

# hc_dtype_t <-> NumPy, in include/hc/types.h's order (HC_F32 = 1 ...).
DTYPES = {1: np.dtype('<f4'), 2: np.dtype('<f8'), 3: np.dtype('<c8'), 4: np.dtype('<c16')}
CODES = {v: k for k, v in DTYPES.items()}
NATIVE_HOST, NATIVE_CUDA = 1, 2
HOST_ALIGN = 64  # what a device that computes on host memory needs of memory it uses in place


def hc_dtype(dtype):
    """The hc dtype code of a NumPy dtype (native byte order)."""
    d = np.dtype(dtype).newbyteorder('<')
    if d not in CODES:
        raise TypeError('hc fields hold f32, f64, c64 or c128, not %s' % np.dtype(dtype))
    return CODES[d]


class _HostView:
    """What np.asarray sees of a field in host memory: its address, with the
    field kept alive as the array's base."""

    def __init__(self, field, ptr):
        self._field = field
        self.__array_interface__ = {'shape': field.shape, 'typestr': field.dtype.str, 'data': (ptr, False),
                                    'version': 3}


class Field:
    """A field (dtype, shape, device memory) owned by this object; freed when
    it is garbage-collected or closed."""

    def __init__(self, ctx, handle, keep=None, dtype=None, shape=None, dev=None):
        self._ctx = ctx
        self._rt = ctx._rt   # the C context outlives its fields
        self._rt.acquire()
        self._h = handle
        self._keep = keep    # memory the field uses in place
        lib = _lib.load()
        if dtype is None:    # else the caller made it and knows (to_field)
            dtype = DTYPES[lib.hc_field_dtype(handle)]
            rank = lib.hc_field_rank(handle)
            sh = lib.hc_field_shape(handle)
            shape = tuple(sh[i] for i in range(rank))
            dev = lib.hc_field_device(handle)
        self.dtype, self.shape = dtype, shape
        self.device = ctx._device_name(dev)
        ctx._dependents.add(self)

    # -- life
    def close(self):
        """Frees the field now (its arrays made without a copy must not be
        used afterwards)."""
        if self._h:
            _lib.load().hc_field_destroy(self._h)
            self._h = None
            self._keep = None
            self._rt.release()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _handle(self):
        if not self._h:
            raise ValueError('the field was closed')
        return self._h

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return '<hc.Field %s %s on %s>' % (self.dtype.name, 'x'.join(map(str, self.shape)) or 'scalar', self.device)

    def _native(self):
        lib = _lib.load()
        m = _lib.NativeMem()
        st = lib.hc_buffer_native(lib.hc_field_buffer(self._handle()), ctypes.byref(m))
        return m if st == 0 else None

    def _host_ptr(self):
        return _lib.load().hc_buffer_host_ptr(_lib.load().hc_field_buffer(self._handle()))

    # -- NumPy
    def numpy(self, copy=False):
        """The field as a NumPy array: a view when the device shares host
        memory (unless copy), else a copy read from the device."""
        ptr = self._host_ptr()
        if ptr and not copy:
            return np.asarray(_HostView(self, ptr))
        out = np.empty(self.shape, self.dtype)
        check(_lib.load().hc_field_read(self._handle(), out.ctypes.data_as(ctypes.c_void_p)))
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(copy=bool(copy))
        return a if dtype is None else a.astype(dtype, copy=False)

    # -- CUDA consumers (CuPy, PyTorch, Numba)
    @property
    def __cuda_array_interface__(self):
        m = self._native()
        if m is None or m.kind != NATIVE_CUDA:
            raise AttributeError('%s is not in CUDA memory' % self.device)
        # hc finishes its work before a run returns: no stream to wait on.
        return {'shape': self.shape, 'typestr': self.dtype.str, 'data': (m.ptr or 0, False), 'version': 3,
                'strides': None, 'stream': None}

    def __dlpack_device__(self):
        m = self._native()
        if m is not None and m.kind == NATIVE_CUDA:
            return (_dlpack.KDL_CUDA, m.ordinal)
        if self._host_ptr():
            return (_dlpack.KDL_CPU, 0)
        raise BufferError('%s memory cannot be shared through DLPack' % self.device)

    def __dlpack__(self, stream=None, **_):
        kind, ordinal = self.__dlpack_device__()
        ptr = self._native().ptr if kind == _dlpack.KDL_CUDA else self._host_ptr()
        return _dlpack.capsule(self, ptr, kind, ordinal, self.shape, self.dtype)


def _cuda_interface(obj):
    return getattr(obj, '__cuda_array_interface__', None) if not isinstance(obj, Field) else None


def is_array(obj):
    """Whether a keyword argument is data for an input port."""
    return isinstance(obj, (np.ndarray, Field)) or _cuda_interface(obj) is not None


def to_field(ctx, dev, obj):
    """A Field on device handle dev holding obj's data: obj itself when it is
    a Field there, its memory in place where the device can use it, else a
    copy. Returns (field, owned) — owned: made here, closed after the run."""
    lib = _lib.load()
    host = ctx._rt.host_memory
    if dev not in host:  # "host" kernels: the device runs on host memory
        host[dev] = bool(lib.hc_device_info(dev).contents.languages & 1)
    if type(obj) is np.ndarray and obj.dtype in CODES and obj.flags.c_contiguous:
        # The common case, in as few steps as it takes: a NumPy array of a
        # field's dtype, in place on a device that computes on host memory
        # (when it is aligned as the device needs), else copied.
        code, ptr = CODES[obj.dtype], obj.__array_interface__['data'][0]
        if host[dev] and ptr % HOST_ALIGN == 0:
            m = _lib.NativeMem(ctypes.sizeof(_lib.NativeMem), NATIVE_HOST, ptr, -1, 0)
            f = _wrap_code(dev, code, obj.shape, m)
            if f is not None:
                return Field(ctx, f, keep=obj, dtype=DTYPES[code], shape=obj.shape, dev=dev), True
        return _copy_to(ctx, dev, code, obj), True
    if isinstance(obj, Field):
        if lib.hc_field_device(obj._handle()) == dev:
            return obj, False
        obj = obj.numpy()
    cai = _cuda_interface(obj)
    if cai is not None:
        shape = tuple(cai['shape'])
        dtype = np.dtype(cai['typestr'])
        contiguous = cai.get('strides') in (None, _c_strides(shape, dtype.itemsize))
        info = lib.hc_device_info(dev).contents
        if contiguous and dtype in CODES and info.platform == b'CUDA':
            _sync_cuda(obj)
            m = _lib.NativeMem(ctypes.sizeof(_lib.NativeMem), NATIVE_CUDA, cai['data'][0], _cuda_ordinal(obj), 0)
            f = _wrap(dev, dtype, shape, m)
            if f is not None:
                return Field(ctx, f, keep=obj), True
        obj = obj.get() if hasattr(obj, 'get') else np.asarray(obj)
    a = np.asarray(obj)
    if a.dtype not in CODES and a.dtype.kind in 'biuf':
        a = a.astype(np.float64)
    code = hc_dtype(a.dtype)
    a = np.ascontiguousarray(a, dtype=DTYPES[code])
    if host[dev]:
        m = _lib.NativeMem(ctypes.sizeof(_lib.NativeMem), NATIVE_HOST, a.ctypes.data, -1, 0)
        f = _wrap(dev, a.dtype, a.shape, m)
        if f is not None:
            return Field(ctx, f, keep=a), True
    return _copy_to(ctx, dev, code, a), True


def _copy_to(ctx, dev, code, a):
    """A new field on dev holding a copy of the C-contiguous array a."""
    lib = _lib.load()
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    h = ctypes.c_void_p()
    check(lib.hc_field_create(dev, code, a.ndim, shape, ctypes.byref(h)))
    field = Field(ctx, h.value, dtype=DTYPES[code], shape=a.shape, dev=dev)
    st = lib.hc_field_write(h.value, ctypes.c_void_p(a.__array_interface__['data'][0]))
    if st != 0:
        e = error(st)
        field.close()
        raise e
    return field


def _wrap(dev, dtype, shape, mem):
    return _wrap_code(dev, CODES[np.dtype(dtype).newbyteorder('<')], shape, mem)


def _wrap_code(dev, code, shape, mem):
    h = ctypes.c_void_p()
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    st = _lib.load().hc_field_wrap(dev, code, len(shape), dims, ctypes.byref(mem), ctypes.byref(h))
    return h.value if st == 0 else None  # unsupported there: the caller copies


def _c_strides(shape, item):
    out, s = [], item
    for n in reversed(shape):
        out.append(s)
        s *= n
    return tuple(reversed(out))


def _cuda_ordinal(obj):
    dev = getattr(obj, 'device', None)
    return int(getattr(dev, 'id', getattr(dev, 'index', 0)) or 0)


def _sync_cuda(obj):
    """hc's stream does not wait for the producer's: let the producer's
    queued work finish first."""
    mod = type(obj).__module__.split('.')[0]
    if mod == 'cupy':
        import cupy
        cupy.cuda.get_current_stream().synchronize()
    elif mod == 'torch':
        import torch
        torch.cuda.synchronize()
