"""hc.Grid: grid expressions (libhc-grid) with Python operators.

    g = hc.Grid(ctx, (129, 129, 129), device="cuda:0")
    f, h = g.field(np_array), g.zeros()
    lap = g.laplacian()
    h[g.interior()] = lap(f + 2 * f)      # one fused kernel
    h[1:-1, 1:-1, 1:-1] = lap(f)          # the same box, as slices

Expressions belong to their grid and stay valid until g.clear() (which
frees them; using one afterwards raises ValueError); operators stay valid
until the grid is closed."""
import ctypes

import numpy as np

from . import _lib
from ._field import DTYPES, Field, hc_dtype, to_field
from .errors import check, error

_FUSE = {'auto': 0, 'recompute': 1, 'materialise': 2, 'stage': 3}
_HOST = {'auto': 0, 'compile': 1, 'eval': 2}
_PARITY = {'all': 0, 'even': 1, 'odd': 2}
_DIFF = {'forward': 0, 'backward': 1, 'central': 2}


class Range:
    """The box an assignment writes: lo[d] cells left out at the low face of
    axis d, hi[d] at the high face; parity "all", "even" or "odd"."""

    def __init__(self, lo=(0, 0, 0, 0), hi=(0, 0, 0, 0), parity='all'):
        self.lo, self.hi, self.parity = tuple(lo), tuple(hi), parity

    def _c(self):
        r = _lib.GridRange()
        for d in range(min(len(self.lo), 4)):
            r.lo[d] = self.lo[d]
        for d in range(min(len(self.hi), 4)):
            r.hi[d] = self.hi[d]
        r.parity = _PARITY[self.parity]
        return r

    @classmethod
    def from_key(cls, key, shape):
        """A Range, Ellipsis (the whole field) or one slice per axis with
        step 1, like 1:-1 (the interior along that axis)."""
        if isinstance(key, Range):
            return key
        if key is Ellipsis:
            return cls()
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(shape) or not all(isinstance(k, slice) for k in key):
            raise IndexError('give a grid range, ... or one slice per axis (%d axes)' % len(shape))
        lo, hi = [], []
        for k, n in zip(key, shape):
            start, stop, step = k.indices(n)
            if step != 1 or stop <= start:
                raise IndexError('slices of a grid assignment take step 1 and a non-empty box')
            lo.append(start)
            hi.append(n - stop)
        return cls(lo, hi)


class Expr:
    """A grid expression; +, -, * (pointwise, or by a number) and / by a
    number build larger ones, evaluated only when assigned or reduced."""

    def __init__(self, grid, ptr):
        grid._check(ptr)
        self._g, self._p, self._gen = grid, ptr, grid._gen

    def _ptr(self):
        if self._gen != self._g._gen:
            raise ValueError('the grid was cleared: this expression no longer exists')
        return self._p

    def _other(self, x):
        return x if isinstance(x, Expr) else (x.expr if isinstance(x, GridField) else self._g.scalar(float(x)))

    def __add__(self, x):
        return Expr(self._g, self._g._lg.hc_gexpr_add(self._g._h, self._ptr(), self._other(x)._ptr()))

    __radd__ = __add__

    def __sub__(self, x):
        return Expr(self._g, self._g._lg.hc_gexpr_sub(self._g._h, self._ptr(), self._other(x)._ptr()))

    def __rsub__(self, x):
        return Expr(self._g, self._g._lg.hc_gexpr_sub(self._g._h, self._other(x)._ptr(), self._ptr()))

    def __mul__(self, x):
        if isinstance(x, (Expr, GridField)):
            return Expr(self._g, self._g._lg.hc_gexpr_mul(self._g._h, self._ptr(), self._other(x)._ptr()))
        return Expr(self._g, self._g._lg.hc_gexpr_scale(self._g._h, float(x), self._ptr()))

    __rmul__ = __mul__

    def __truediv__(self, x):
        return self * (1.0 / float(x))

    def __neg__(self):
        return self * -1.0


class Operator:
    """A grid operator: op(expr) applies it; +, - and * by a number combine
    operators, a @ b composes them (a(b(u)))."""

    def __init__(self, grid, ptr):
        grid._check(ptr)
        self._g, self._p, self._gen = grid, ptr, grid._opgen

    def _ptr(self):
        if self._gen != self._g._opgen:
            raise ValueError('the grid was closed: this operator no longer exists')
        return self._p

    def __call__(self, e):
        e = e.expr if isinstance(e, GridField) else e
        return Expr(self._g, self._g._lg.hc_gexpr_apply(self._g._h, self._ptr(), e._ptr()))

    def __add__(self, o):
        return Operator(self._g, self._g._lg.hc_gop_add(self._g._h, self._ptr(), o._ptr()))

    def __sub__(self, o):
        return Operator(self._g, self._g._lg.hc_gop_sub(self._g._h, self._ptr(), o._ptr()))

    def __mul__(self, s):
        return Operator(self._g, self._g._lg.hc_gop_scale(self._g._h, float(s), self._ptr()))

    __rmul__ = __mul__

    def __matmul__(self, o):
        return Operator(self._g, self._g._lg.hc_gop_compose(self._g._h, self._ptr(), o._ptr()))


class GridField(Field):
    """A field of a grid: an array (np.asarray, .numpy()) and an expression
    (arithmetic with it builds expressions); f[range] = expr assigns."""

    def __init__(self, grid, handle, keep=None):
        super().__init__(grid._ctx, handle, keep)
        self._grid = grid
        self._expr = None

    @property
    def expr(self):
        if self._expr is None or self._expr._gen != self._grid._gen:
            self._expr = Expr(self._grid, self._grid._lg.hc_gexpr_dense(self._grid._h, self._handle()))
        return self._expr

    def __setitem__(self, key, value):
        self._grid.assign(self, value, Range.from_key(key, self.shape))

    def __add__(self, x): return self.expr + x
    def __radd__(self, x): return self.expr + x
    def __sub__(self, x): return self.expr - x
    def __rsub__(self, x): return x - self.expr
    def __mul__(self, x): return self.expr * x
    def __rmul__(self, x): return self.expr * x
    def __truediv__(self, x): return self.expr / x
    def __neg__(self): return -self.expr


class Grid:
    """Grid expressions on one device: fields of shape `shape` and dtype
    ("f32"/"f64"), operators, fused assignments and reductions. fuse and
    host as in docs/grid.md (fuse: auto|recompute|materialise|stage; host:
    auto|compile|eval)."""

    def __init__(self, ctx, shape, device=None, dtype='f64', spacing=None, fuse='auto', host='auto'):
        self._ctx, self._lg = ctx, _lib.grid()
        self.shape = tuple(int(n) for n in shape)
        self.dtype = DTYPES[hc_dtype({'f32': 'f4', 'f64': 'f8'}.get(dtype, dtype))]
        self.spacing = tuple(spacing) if spacing is not None else tuple(1.0 / (n - 1) for n in self.shape)
        self._dev = ctx._device(device)
        opts = _lib.GridOptions(ctypes.sizeof(_lib.GridOptions), _FUSE[fuse], _HOST[host], 0)
        h = ctypes.c_void_p()
        check(self._lg.hc_grid_create(self._dev, ctypes.byref(opts), ctypes.byref(h)))
        self._h, self._gen, self._opgen = h.value, 0, 0
        self._rt = ctx._rt
        self._rt.acquire()
        ctx._dependents.add(self)

    @property
    def device(self):
        return _lib.load().hc_device_name(self._dev).decode()

    def close(self):
        if self._h:
            self._lg.hc_grid_destroy(self._h)
            self._h = None
            self._gen += 1
            self._opgen += 1
            self._rt.release()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def clear(self):
        """Frees every expression built so far (fields and operators stay)."""
        self._lg.hc_grid_clear(self._h)
        self._gen += 1

    def _check(self, ptr):
        if not ptr:
            msg = ctypes.c_char_p()
            st = self._lg.hc_grid_error(self._h, ctypes.byref(msg))
            raise error(st or 18, (msg.value or b'grid expression failed').decode(errors='replace'))

    # -- fields and expressions
    def field(self, data=None, name=None):
        """A field of the grid: a copy of data (array-like of the grid's shape)
        or, without data, zeros."""
        lib = _lib.load()
        if data is None:
            data = np.zeros(self.shape, self.dtype)
        a = np.asarray(data, dtype=self.dtype) if not isinstance(data, Field) else data
        if tuple(a.shape) != self.shape:
            raise ValueError('field of shape %s on a grid of shape %s' % (tuple(a.shape), self.shape))
        f, _ = to_field(self._ctx, self._dev, a)
        h, keep = f._h, f._keep
        f._h, f._keep = None, None  # the grid field takes the handle over
        g = GridField(self, h, keep)
        sp = (ctypes.c_double * len(self.shape))(*self.spacing)
        lib.hc_field_set_spacing(h, sp)
        if name:
            lib.hc_field_set_name(h, name.encode())
        return g

    def zeros(self, name=None):
        return self.field(None, name)

    def scalar(self, value):
        return Expr(self, self._lg.hc_gexpr_scalar(self._h, float(value)))

    def coord(self, axis):
        return Expr(self, self._lg.hc_gexpr_coord(self._h, axis))

    def index(self, axis):
        return Expr(self, self._lg.hc_gexpr_index(self._h, axis))

    # -- operators
    def laplacian(self, h=None):
        sp = (ctypes.c_double * len(self.shape))(*(h or self.spacing))
        return Operator(self, self._lg.hc_gop_laplacian(self._h, len(self.shape), sp))

    def diff(self, axis, kind='central', h=None):
        return Operator(self, self._lg.hc_gop_diff(self._h, len(self.shape), axis, _DIFF[kind],
                                                   float(h if h is not None else self.spacing[axis])))

    def stencil(self, offsets, coeffs):
        """sum_p coeffs[p] u(i + offsets[p]) (offsets: one tuple per point)."""
        offs = [int(o) for p in offsets for o in p]
        n = len(coeffs)
        if len(offs) != n * len(self.shape):
            raise ValueError('each offset needs %d components' % len(self.shape))
        return Operator(self, self._lg.hc_gop_stencil(self._h, len(self.shape), n, (ctypes.c_int32 * len(offs))(*offs),
                                                      (ctypes.c_double * n)(*coeffs)))

    def identity(self):
        return Operator(self, self._lg.hc_gop_identity(self._h, len(self.shape)))

    def restrict(self):
        return Operator(self, self._lg.hc_gop_restrict_fw(self._h, len(self.shape)))

    def prolong(self):
        return Operator(self, self._lg.hc_gop_prolong_linear(self._h, len(self.shape)))

    # -- evaluation
    def interior(self, width=1, parity='all'):
        return Range((width,) * len(self.shape), (width,) * len(self.shape), parity)

    def assign(self, dst, e, where=None):
        """dst = e on the box `where` (default: the whole field), one fused
        kernel (or the few the cost model chooses)."""
        e = e.expr if isinstance(e, GridField) else (e if isinstance(e, Expr) else self.scalar(float(e)))
        r = (where or Range())._c()
        check(self._lg.hc_grid_assign(self._h, dst._handle(), e._ptr(), ctypes.byref(r), None))

    def _reduce(self, op, e, where):
        e = e.expr if isinstance(e, GridField) else e
        like = e._g._like()
        r = (where or Range())._c()
        out = ctypes.c_double()
        check(self._lg.hc_grid_reduce(self._h, op, like, e._ptr(), ctypes.byref(r), None, ctypes.byref(out)))
        return out.value

    def _like(self):
        if not hasattr(self, '_like_field'):
            self._like_field = self.zeros()
        return self._like_field._handle()

    def sum(self, e, where=None):
        return self._reduce(0, e, where)

    def norm(self, e, where=None):
        """The L2 norm, sqrt(sum e^2)."""
        return self._reduce(1, e, where) ** 0.5

    def maxabs(self, e, where=None):
        return self._reduce(2, e, where)

    @property
    def stats(self):
        s = _lib.GridStats()
        s.size = ctypes.sizeof(s)
        self._lg.hc_grid_stats(self._h, ctypes.byref(s))
        return {n: getattr(s, n) for n, _ in s._fields_[2:]}
