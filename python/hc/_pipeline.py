"""hc.Pipeline: workloads chained as in hcrun --pipeline; data stays on the
device between stages that share one."""
import ctypes
from collections import namedtuple

from . import _lib
from ._context import Result, _text
from ._field import Field, to_field
from .errors import check, error

HC_RUN_VERIFY = 1
_ERR_VERIFY = 15
_STATES = {0: 'pending', 1: 'done', 2: 'failed', 3: 'skipped'}

Transfer = namedtuple('Transfer', 'stage input from_stage output from_device to_device bytes seconds')


class StageResult(Result):
    """A stage's Result, with .state ("done", "failed", "skipped"),
    .handover_s (moving its inputs to its device) and .split (a stage on a
    device set that split: as Context.run's Result.split; else None)."""


class PipelineResult:
    """The last run: .stages (StageResult per stage, in order), .transfers
    (moves between devices), .wall, .compute, .device (seconds) and
    .handovers_on_device / .handovers."""

    def __init__(self, stages, transfers, report):
        self.stages = stages
        self.transfers = transfers
        self.wall, self.compute, self.device = report.wall_s, report.compute_s, report.device_s
        self.handovers, self.handovers_on_device = report.handovers, report.handovers_on_device

    def __getitem__(self, i):
        return self.stages[i]

    def __repr__(self):
        return '<hc.PipelineResult %s; %.3g s, %d transfer(s)>' % (
            ' | '.join('%s@%s' % (s.workload, s.device) for s in self.stages), self.wall, len(self.transfers))

    def _repr_html_(self):
        rows = ''.join('<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%.4g</td><td>%.4g</td></tr>' %
                       (i + 1, s.workload, s.device, s.state, s.times.compute, s.times.device)
                       for i, s in enumerate(self.stages))
        return ('<table><tr><th>stage</th><th>workload</th><th>device</th><th>state</th><th>compute s</th>'
                '<th>device s</th></tr>%s</table><p>wall %.4g s; %d of %d hand-overs on the device; %d transfer(s)</p>'
                % (rows, self.wall, self.handovers_on_device, self.handovers, len(self.transfers)))


class Pipeline:
    def __init__(self, ctx, text):
        self._ctx = ctx
        self._lib = _lib.load()
        h = ctypes.c_void_p()
        check(self._lib.hc_pipeline_parse(ctx._handle(), text.encode(), ctypes.byref(h)))
        self._h = h.value
        self._inputs = []
        self._rt = ctx._rt
        self._rt.acquire()
        ctx._dependents.add(self)

    def close(self):
        if self._h:
            self._lib.hc_pipeline_destroy(self._h)
            self._h = None
            for f in self._inputs:
                f.close()
            self._inputs = []
            self._rt.release()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __len__(self):
        return self._lib.hc_pipeline_stage_count(self._h)

    def set_input(self, stage, port, data):
        """Feeds data (NumPy, CuPy, hc.Field) to input `port` of stage
        (0-based), on that stage's device."""
        self.validate()
        dev = self._lib.hc_pipeline_stage_device(self._h, stage)
        f, made = to_field(self._ctx, dev or self._ctx._device(None), data)
        if made:
            self._inputs.append(f)
        check(self._lib.hc_pipeline_set_input(self._h, stage, port.encode(), f._handle()))
        return self

    def validate(self):
        """Checks the pipeline without running it (hc.PipelineError etc.)."""
        check(self._lib.hc_pipeline_validate(self._h))
        return self

    def run(self, verify=False, output_dir=None):
        """Runs every stage; returns a PipelineResult. A failing stage raises
        its error with .result (the stages so far); a failed verification
        raises hc.VerifyError with .result."""
        lib = self._lib
        if output_dir is not None:
            check(lib.hc_pipeline_set_output_dir(self._h, str(output_dir).encode()))
        st = lib.hc_pipeline_run(self._h, HC_RUN_VERIFY if verify else 0)
        report = _lib.PipelineReport()
        lib.hc_pipeline_report(self._h, ctypes.byref(report))
        message = _text(report.message) or _text(lib.hc_last_error())
        result = PipelineResult(self._stages(), self._transfers(), report)
        if st != 0:
            e = error(st, message)
            e.result = result
            raise e
        return result

    def _stages(self):
        lib, out = self._lib, []
        for i in range(lib.hc_pipeline_stage_count(self._h)):
            info = _lib.StageInfo()
            check(lib.hc_pipeline_stage_info(self._h, i, ctypes.byref(info)))
            job = lib.hc_pipeline_stage_job(self._h, i)
            workload = _text(info.workload)
            fields = {}
            if info.state == 1:
                for port in self._ctx.ports(workload, output=True):
                    if lib.hc_job_output(job, port.encode()):
                        h = ctypes.c_void_p()
                        check(lib.hc_job_take_output(job, port.encode(), ctypes.byref(h)))
                        fields[port] = Field(self._ctx, h.value)
            s = StageResult(workload, _text(info.device), job, fields)
            s.state = _STATES.get(info.state, str(info.state))
            s.handover_s = info.handover_s
            devset = lib.hc_pipeline_stage_set(self._h, i)
            s.split = self._ctx._split_report(devset) if devset and lib.hc_devset_parts(devset) > 1 else None
            out.append(s)
        return out

    def _transfers(self):
        out = []
        for i in range(self._lib.hc_pipeline_transfer_count(self._h)):
            t = _lib.PipelineTransfer()
            check(self._lib.hc_pipeline_transfer_get(self._h, i, ctypes.byref(t)))
            out.append(Transfer(t.stage, _text(t.input), t.from_stage, _text(t.output), _text(t.from_device),
                                _text(t.to_device), t.bytes, t.seconds))
        return out
