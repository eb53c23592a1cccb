"""hc from Python: run hc's workloads, pipelines and grid expressions on
NumPy (and, on CUDA devices, CuPy) arrays, through libhc's C API.

    import numpy as np, hc
    ctx = hc.Context()
    r = ctx.run("simpson", input=np.random.rand(129, 129, 129), h=0.01, device="cpu")
    r.metrics["integral"], r.times.device, r.outputs

Errors are exceptions, one class per hc status (hc.ParamError,
hc.VerifyError, ...), all derived from hc.HcError. See docs/python.md."""
from ._lib import load as load_library
from .errors import CLASSES as _CLASSES, HcError
from ._field import Field
from ._context import Context, Result, Times
from ._pipeline import Pipeline, PipelineResult, StageResult
from ._grid import Expr, Grid, GridField, Operator, Range

globals().update(_CLASSES)
__version__ = '0.1.0'
__all__ = ['Context', 'Result', 'Times', 'Field', 'Pipeline', 'PipelineResult', 'StageResult', 'Grid', 'GridField',
           'Expr', 'Operator', 'Range', 'HcError', 'load_library'] + sorted(_CLASSES)
