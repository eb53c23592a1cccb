"""hc.Context: the registry of backends, devices and workloads, and single
runs of a workload (hcrun --workload=...)."""
import contextlib
import ctypes
import os
import weakref
from collections import namedtuple

from . import _lib, _mpi
from ._field import Field, is_array, to_field
from .errors import HcError, check, error

HC_RUN_VERIFY = 1
_ERR_VERIFY = 15
_ERR_UNSUPPORTED = 4
_PARAM_SHAPE, _PARAM_VEC = 5, 6

Times = namedtuple('Times', 'wall compute device build', defaults=(0.0,))
Times.__doc__ = ('Seconds: the whole run (wall), the workload\'s timed region (compute, the papers\' "total"), '
                 'the device\'s time in it (device, the papers\' "GPU") and the time spent building kernels '
                 '(build: programs and drivers\' builds at first launches, never part of compute).')


def _text(b):
    return b.decode(errors='surrogateescape') if b is not None else None


def _split_text(split):
    """Context.run's split= as hc_devset_parse_weights takes it: shares
    from the performance history unless given (as hcrun)."""
    if split is None:
        return b'auto'
    return (split if isinstance(split, str) else ','.join(repr(float(w)) for w in split)).encode()


class Result:
    """One run: .metrics (name -> value), .units, .times, .verified (None,
    True or False) and .verify_message, .notes, .params (effective, as
    text), .fields (output port -> hc.Field) and .outputs (port -> NumPy
    array; a view on host-memory devices).

    A Result of Context.run owns its C job and reads the report, and takes
    the output fields, from it when one of these is first asked for (a run
    pays only for what it reads); the job is freed with the Result, or when
    its context closes (report and outputs taken first). A pipeline stage's
    Result reads its stage's job at once."""

    _REPORT = ('times', 'metrics', 'units', 'verified', 'verify_message', 'notes', 'params')

    def __init__(self, workload, device, job, fields, rt=None, ctx=None):
        self.workload = workload
        self.device = device
        self._fields, self._ctx = fields, ctx  # fields None: taken from the job when first asked for
        self.split = None  # a split run's plan and parts (Context.run with a device set)
        self._outputs = None
        self._job, self._rt = None, None
        if rt is None:
            self._read(job)
        else:  # owns the job until the report is read or it goes
            self._job, self._rt = job, rt
            rt.acquire()
            rt.reports.add(self)

    def __getattr__(self, name):
        # only reached for attributes not yet set: the report, read once
        if name in Result._REPORT and self.__dict__.get('_job'):
            self._release()
            return self.__dict__[name]
        raise AttributeError(name)

    @property
    def fields(self):
        if self._fields is None:
            job = self.__dict__.get('_job')
            self._fields = self._ctx._take_outputs(job, self.workload) if job else {}
        return self._fields

    def _release(self):
        """Reads the report and takes the outputs from the owned job, then
        frees the job."""
        job, rt = self.__dict__.get('_job'), self.__dict__.get('_rt')
        if job:
            try:
                if self._fields is None:  # taken while the job lives
                    self._fields = self._ctx._take_outputs(job, self.workload)
                self._job = None
                self._read(job)
            finally:
                self._job = None
                rt.lib.hc_job_destroy(job)
                rt.reports.discard(self)
                rt.release()

    def __del__(self):
        try:
            job, rt = self.__dict__.get('_job'), self.__dict__.get('_rt')
            if job:
                self._job = None
                rt.lib.hc_job_destroy(job)
                rt.reports.discard(self)
                rt.release()
        except Exception:  # interpreter shutdown
            pass

    def _read(self, job):
        lib = _lib.load()
        t = _lib.JobTimes()
        lib.hc_job_times(job, ctypes.byref(t))
        build = ctypes.c_double()
        lib.hc_job_build_time(job, ctypes.byref(build), None)
        self.times = Times(t.wall_s, t.compute_s, t.device_s, build.value)
        self.metrics, self.units = {}, {}
        for i in range(lib.hc_job_metric_count(job)):
            name, unit, value = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_double()
            check(lib.hc_job_metric(job, i, ctypes.byref(name), ctypes.byref(value), ctypes.byref(unit)))
            self.metrics[_text(name.value)] = value.value
            self.units[_text(name.value)] = _text(unit.value) or ''
        msg = ctypes.c_char_p()
        v = lib.hc_job_verified(job, ctypes.byref(msg))
        self.verified = None if v < 0 else bool(v)
        self.verify_message = _text(msg.value)
        self.notes = _text(lib.hc_job_notes(job)) or ''
        self.params = {}
        for i in range(lib.hc_job_param_count(job)):
            k, val = ctypes.c_char_p(), ctypes.c_char_p()
            check(lib.hc_job_param_get(job, i, ctypes.byref(k), ctypes.byref(val)))
            self.params[_text(k.value)] = _text(val.value)

    @property
    def outputs(self):
        if self._outputs is None:
            self._outputs = {k: f.numpy() for k, f in self.fields.items()}
        return self._outputs

    def __repr__(self):
        m = ', '.join('%s=%.6g' % kv for kv in list(self.metrics.items())[:4])
        return '<hc.Result %s on %s: %s; %.3g s>' % (self.workload, self.device, m, self.times.compute)

    def _repr_html_(self):
        rows = ''.join('<tr><td>%s</td><td>%.6g</td><td>%s</td></tr>' % (k, v, self.units.get(k, ''))
                       for k, v in self.metrics.items())
        ver = '' if self.verified is None else '<p>verification %s: %s</p>' % (
            'passed' if self.verified else 'FAILED', self.verify_message or '')
        outs = ', '.join('%s %s %s' % (k, f.dtype.name, 'x'.join(map(str, f.shape))) for k, f in self.fields.items())
        return ('<p><b>%s</b> on %s — wall %.4g s, compute %.4g s, device %.4g s</p><table>%s</table>%s<p>outputs: %s</p>'
                % (self.workload, self.device, self.times.wall, self.times.compute, self.times.device, rows, ver,
                   outs or 'none'))


class _Runtime:
    """The C context and its opened devices. Fields, pipelines and grids
    count themselves as users; the context is destroyed when it was closed
    and its last user is gone, in whatever order Python finalises them
    (at exit, finalisers run in no particular order)."""

    def __init__(self, lib, handle):
        self.lib, self.h, self.open, self.users, self.closing = lib, handle, {}, 0, False
        # per device handle, asked once: its name, and whether it runs on host memory
        self.device_names, self.host_memory = {}, {}
        self.named = {}  # device name as given -> handle
        self.reports = weakref.WeakSet()  # Results that still own their job

    def acquire(self):
        self.users += 1

    def release(self):
        self.users -= 1
        if self.closing and self.users <= 0:
            self._destroy()

    def close(self):
        for r in list(self.reports):  # their reports stay readable
            r._release()
        self.closing = True
        if self.users <= 0:
            self._destroy()

    def _destroy(self):
        if self.h:
            for d in self.open.values():
                self.lib.hc_device_close(d)
            self.open.clear()
            self.lib.hc_context_destroy(self.h)
            self.h = None


class Context:
    """One hc runtime: finds the backend and workload plugins as hcrun does
    (plugin_dirs first, then HC_PLUGIN_PATH, the install and the build tree).
    Usable as a context manager; its fields, pipelines and grids keep it
    alive until they are gone."""

    def __init__(self, plugin_dirs=(), mpi=None):
        """mpi: True runs every Context.run as one part of a split over the
        ranks of MPI_COMM_WORLD (as hcrun under mpirun: docs/mpi.md); None
        (the default) does when HC_MPI says so (auto: when an MPI launcher
        started the process); False never."""
        self._lib = lib = _lib.load()
        self._mpi = _mpi.world() if (mpi if mpi is not None else _mpi.wanted()) else None
        opts = _lib.ContextOptions()
        opts.size = ctypes.sizeof(opts)
        dirs = [d.encode() if isinstance(d, str) else d for d in plugin_dirs]
        self._dirs = (ctypes.c_char_p * max(len(dirs), 1))(*dirs)
        opts.plugin_dirs = self._dirs if dirs else None
        opts.plugin_dir_count = len(dirs)
        h = ctypes.c_void_p()
        check(lib.hc_context_create(ctypes.byref(opts), ctypes.byref(h)))
        self._rt = _Runtime(lib, h.value)
        self._dependents = weakref.WeakSet()
        self._ports = {}  # (workload, output) -> port names: a registry does not change

    # -- life
    @property
    def _h(self):
        return self._rt.h

    def _handle(self):
        if not self._rt.h or self._rt.closing:
            raise ValueError('the context was closed')
        return self._rt.h

    def close(self):
        """Closes the devices and unloads the plugins; the fields, pipelines
        and grids made from this context are closed first."""
        for d in list(self._dependents):
            d.close()
        self._rt.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._rt.close()
        except Exception:  # interpreter shutdown
            pass

    # -- registry
    @property
    def devices(self):
        """Device names, as hcrun --list shows them ("cpu:0", "opencl:0")."""
        h = self._handle()
        return [_text(self._lib.hc_device_id(h, i)) for i in range(self._lib.hc_device_count(h))]

    @property
    def workloads(self):
        return self._names(self._lib.hc_workload_count, self._lib.hc_workload_get)

    @property
    def backends(self):
        return self._names(self._lib.hc_backend_count, self._lib.hc_backend_get)

    def _names(self, count, get):
        h, out = self._handle(), []
        for i in range(count(h)):
            s = _lib.PluginSummary()
            check(get(h, i, ctypes.byref(s)))
            out.append(_text(s.name))
        return out

    def device_info(self, device):
        """The capability record of a device ("cuda:0") as a dict."""
        info = _lib.DeviceInfo()
        check(self._lib.hc_device_query(self._handle(), self._index(device), ctypes.byref(info)))
        out = {}
        for name, _ in info._fields_:
            v = getattr(info, name)
            out[name] = v.decode(errors='replace') if isinstance(v, bytes) else v
        return out

    def params(self, workload):
        """The workload's parameters: name -> (type, default, help)."""
        out = {}
        for i in range(self._lib.hc_workload_param_count(self._handle(), workload.encode())):
            p = self._lib.hc_workload_param(self._h, workload.encode(), i).contents
            out[_text(p.name)] = (p.type, _text(p.default), _text(p.help))
        return out

    def ports(self, workload, output=False):
        """Port names, inputs (or outputs), the primary one first."""
        key = (workload, bool(output))
        if key not in self._ports:
            self._ports[key] = tuple(self._read_ports(workload, output))
        return list(self._ports[key])

    def _read_ports(self, workload, output):
        ports = []
        for i in range(self._lib.hc_workload_port_count(self._handle(), workload.encode(), int(output))):
            p = self._lib.hc_workload_port(self._h, workload.encode(), int(output), i).contents
            ports.append((not (p.flags & 2), _text(p.name)))
        return [name for _, name in sorted(ports, key=lambda t: t[0])]

    # -- devices
    # -- timelines (docs/trace.md)
    @contextlib.contextmanager
    def trace(self, path, max_events=0):
        """Traces what runs on this context inside the with-block to path, a
        Chrome trace-event JSON file for ui.perfetto.dev (hcrun --trace).
        The file is created at once (an error if it cannot be) and complete
        when the block ends:

            with ctx.trace('run.json'):
                ctx.run('simpson', device='cpu', n=(65, 65, 65))
        """
        opts = _lib.TraceOptions(ctypes.sizeof(_lib.TraceOptions), 0, max_events)
        check(self._lib.hc_trace_start(self._handle(), os.fsencode(path), ctypes.byref(opts)))
        try:
            yield self
        finally:
            check(self._lib.hc_trace_stop(self._handle()))

    def trace_usage(self, device):
        """How busy a device was over the current or last trace: a dict of
        events, window_s, compute_s, transfer_s and idle_s (seconds)."""
        u = _lib.TraceUsage(ctypes.sizeof(_lib.TraceUsage))
        check(self._lib.hc_trace_usage(self._handle(), self._index(device), ctypes.byref(u)))
        busy = u.compute_s + u.transfer_s
        return {'events': u.events, 'window_s': u.window_s, 'compute_s': u.compute_s, 'transfer_s': u.transfer_s,
                'idle_s': max(u.window_s - busy, 0.0)}

    def _index(self, device, workload=None):
        idx = ctypes.c_uint32()
        if device in (None, 'auto'):
            check(self._lib.hc_device_find_auto(self._handle(), workload.encode() if workload else None,
                                                ctypes.byref(idx)))
        else:
            check(self._lib.hc_device_find(self._handle(), device.encode(), ctypes.byref(idx)))
        return idx.value

    def _device_name(self, dev):
        names = self._rt.device_names
        if dev not in names:
            names[dev] = _text(self._lib.hc_device_name(dev))
        return names[dev]

    def _device(self, device, workload=None):
        named = self._rt.named
        if device not in (None, 'auto') and device in named:
            return named[device]  # a name means the same device for the context's life
        i = self._index(device, workload)
        if device not in (None, 'auto'):
            named[device] = self._device_handle(i)
        return self._device_handle(i)

    def _device_handle(self, i):
        if i not in self._rt.open:
            h = ctypes.c_void_p()
            check(self._lib.hc_device_open(self._handle(), i, ctypes.byref(h)))
            self._rt.open[i] = h.value
        return self._rt.open[i]

    def empty(self, shape, dtype='f64', device='auto'):
        """A new field on a device (contents undefined). On a device that
        shares host memory, .numpy() is a writable view: fill it in place
        and pass the field to run() without any copy."""
        from ._field import DTYPES, hc_dtype
        dt = hc_dtype({'f32': 'f4', 'f64': 'f8', 'c64': 'c8', 'c128': 'c16'}.get(dtype, dtype))
        shape = tuple(int(n) for n in shape)
        h = ctypes.c_void_p()
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        check(self._lib.hc_field_create(self._device(device), dt, len(shape), dims, ctypes.byref(h)))
        assert DTYPES[dt]
        return Field(self, h.value)

    def field(self, data, device='auto'):
        """data (NumPy, CuPy or an hc.Field) as a field on device: in place
        where the device can use the memory, else copied."""
        f, _ = to_field(self, self._device(device), data)
        return f

    # -- runs
    def _param_text(self, workload, name, value):
        if isinstance(value, bool):
            return '1' if value else '0'
        if isinstance(value, (tuple, list)):
            spec = self.params(workload).get(name)
            sep = 'x' if spec and spec[0] == _PARAM_SHAPE else ','
            return sep.join(self._param_text(workload, name, v) for v in value)
        if isinstance(value, float):
            return repr(value)
        return str(value)

    def run(self, workload, device=None, verify=False, output_dir=None, split=None, **kwargs):
        """Runs a workload once and returns its Result.

        Keyword arguments are the workload's parameters (validated by hc,
        with hcrun's messages) or, for arrays (NumPy, CuPy, hc.Field), its
        input ports by name; `input=` with an array binds the primary input.
        device: "cuda:0", "cpu", "auto" (default: the device that ran these
        parameters fastest in the performance history, once the best device
        by kind has a figure; docs/partition.md), or a device set as hcrun takes it, "cuda:0,cpu:0" or
        "all": the work is split over the set (docs/partition.md), with
        split=(0.8, 0.2) (or "0.8,0.2") as the devices' shares, "equal", or
        "auto" (the default: from the measured history of earlier runs,
        leaving out devices that would slow the run; docs/partition.md), and
        Result.split tells how each part did. verify=True checks against
        the workload's reference and raises hc.VerifyError (with .result)
        when it fails."""
        lib = self._lib
        if self._mpi:
            return self._run_ranks(workload, device, verify, output_dir, split, kwargs)
        job = ctypes.c_void_p()
        check(lib.hc_job_create(self._handle(), workload.encode(), ctypes.byref(job)))
        owned = []
        devset = None
        try:
            inputs = self._set_params(job, workload, kwargs)
            if isinstance(device, str) and (',' in device or device == 'all'):
                devset = self._devset(job, workload, device, split)
                dev = lib.hc_devset_device(devset, 0)
            elif split is not None:
                raise error(5, 'split=%r needs a device set (device="cuda:0,cpu:0" or "all")' % (split,))
            elif device in (None, 'auto'):
                idx = ctypes.c_uint32()
                check(lib.hc_job_find_device(job, ctypes.byref(idx), None, 0))
                dev = self._device_handle(idx.value)
            else:
                dev = self._device(device, workload)
            self._bind_inputs(job, workload, dev, inputs, owned)
            if output_dir is not None:
                check(lib.hc_job_set_output_dir(job, str(output_dir).encode()))
            flags = HC_RUN_VERIFY if verify else 0
            st = lib.hc_job_run_split(job, devset, flags) if devset else lib.hc_job_run(job, dev, flags)
            if st not in (0, _ERR_VERIFY):
                raise error(st)
            if st == 0 and not devset:
                lib.hc_job_record_run(job, dev)  # device="auto"'s figures
            result = Result(workload, device if devset else self._device_name(dev), job.value, None, self._rt,
                            self)
            job = None  # the Result owns it
            return self._finished(result, st, devset)
        finally:
            self._release_run(job, owned, devset)

    def _release_run(self, job, owned, devset):
        """What a run leaves: its job unless a Result owns it, the input
        fields made for it, its device set."""
        if job:
            self._lib.hc_job_destroy(job)
        for f in owned:
            f.close()
        if devset:
            self._lib.hc_devset_destroy(devset)

    def _finished(self, result, st, devset):
        """A run's Result, with its split's report; hc.VerifyError (with
        .result) when its verification failed."""
        result.split = self._split_report(devset) if devset else None
        if st == _ERR_VERIFY:
            e = error(st, result.verify_message or _text(self._lib.hc_last_error()))
            e.result = result
            raise e
        return result

    def _set_params(self, job, workload, kwargs):
        """Sets the parameters among kwargs; returns the arrays among them."""
        inputs = {}
        for k, v in kwargs.items():
            if is_array(v):
                inputs[k] = v
            else:
                check(self._lib.hc_job_set(job, k.encode(), self._param_text(workload, k, v).encode()))
        return inputs

    def _bind_inputs(self, job, workload, dev, inputs, owned):
        """Binds each array to its port on dev (`input`: the primary one);
        the fields made for them go to owned."""
        ports = self.ports(workload)
        for k, v in inputs.items():
            port = k
            if k not in ports:
                if k == 'input' and ports:
                    port = ports[0]
                else:
                    raise error(5, '%s: %s is neither a parameter nor an input port (inputs: %s)' %
                                (workload, k, ', '.join(ports) or 'none'))
            f, made = to_field(self, dev, v)
            if made:
                owned.append(f)
            check(self._lib.hc_job_set_input(job, port.encode(), f._handle()))

    def _run_ranks(self, workload, device, verify, output_dir, split, kwargs):
        """Context.run as one rank's part of a split over MPI_COMM_WORLD:
        every rank calls it with the same arguments; rank 0's Result has
        the whole outputs, another rank's its own rows. Whatever fails on
        one rank before the run fails on every rank, with that message."""
        lib, (_, w) = self._lib, self._mpi
        job, devset, owned, dev = ctypes.c_void_p(), ctypes.c_void_p(), [], None
        try:
            try:
                check(lib.hc_job_create(self._handle(), workload.encode(), ctypes.byref(job)))
                inputs = self._set_params(job, workload, kwargs)
                if device == 'all':
                    raise error(5, 'device=all: under MPI each rank names the devices it drives (device="auto,cpu:0": '
                                'the rank\'s GPU and its share of the cores)')
                if isinstance(device, str) and ',' in device:
                    # each rank drives the set; "auto" in it is the rank's device
                    ids = [self._rank_device_id(workload) if d == 'auto' else d for d in device.split(',')]
                    check(lib.hc_devset_parse(self._handle(), ','.join(ids).encode(), workload.encode(),
                                              ctypes.byref(devset)))
                    dev = lib.hc_devset_device(devset, 0)
                else:
                    i = self._index(device, workload)
                    if device in (None, 'auto'):
                        i = _mpi.rank_device(self._handle(), workload, i)
                    dev = self._device_handle(i)
                    check(lib.hc_devset_create(self._handle(), ctypes.byref(ctypes.c_void_p(dev)), 1,
                                               ctypes.byref(devset)))
                check(lib.hc_devset_set_transport(devset, w.transport))
                check(lib.hc_devset_parse_weights(devset, _split_text(split)))
                self._bind_inputs(job, workload, dev, inputs, owned)
                if output_dir is not None and w.rank == 0:  # rank 0 writes
                    check(lib.hc_job_set_output_dir(job, str(output_dir).encode()))
                st = 0
            except HcError as e:
                st = e.status
                lib.hc_error(st, b'%s', e.message.encode(errors='surrogateescape'))
            st = _mpi.agree(st)
            if st != 0:
                raise error(st)
            st = lib.hc_job_run_split(job, devset, HC_RUN_VERIFY if verify else 0)
            if st not in (0, _ERR_VERIFY):
                raise error(st)
            result = Result(workload, self._device_name(dev), job.value, None, self._rt, self)
            job = None  # the Result owns it
            return self._finished(result, st, devset)
        finally:
            self._release_run(job, owned, devset)

    def _rank_device_id(self, workload):
        """Under MPI: the id ("cuda:1") of the device this rank takes alone."""
        i = _mpi.rank_device(self._handle(), workload, self._index(None, workload))
        return _text(self._lib.hc_device_id(self._handle(), i))

    def _devset(self, job, workload, spec, split):
        """A device set for job (its problems are HC_ERR_PARAM, as in hcrun)."""
        lib = self._lib
        h = ctypes.c_void_p()
        check(lib.hc_devset_parse(self._handle(), spec.encode(), workload.encode(), ctypes.byref(h)))
        try:
            check(lib.hc_devset_parse_weights(h, _split_text(split)))
            st = lib.hc_job_check_split(job, h)
            if st != 0:
                raise error(5 if st == _ERR_UNSUPPORTED else st)
        except BaseException:
            lib.hc_devset_destroy(h)
            raise
        return h

    def _split_report(self, devset):
        """The last split run of devset: {'plan': text, 'parts': [dict per part],
        'best_single': {'device', 'predicted_s'} or {'why'}}."""
        lib = self._lib
        parts = []
        for i in range(lib.hc_devset_parts(devset)):
            s = _lib.PartStats()
            s.size = ctypes.sizeof(s)
            check(lib.hc_devset_part_stats(devset, i, ctypes.byref(s)))
            parts.append({'device': _text(s.device), 'rows': (s.lo, s.hi), 'weight': s.weight,
                          'compute_s': s.compute_s, 'device_s': s.device_s, 'idle_s': s.idle_s,
                          'halo_s': s.halo_s, 'halo_bytes': s.halo_bytes, 'collective_s': s.collective_s,
                          'collectives': s.collectives, 'halo_peer_bytes': s.halo_peer_bytes,
                          'halo_direct_bytes': s.halo_direct_bytes})
        name = ctypes.c_char_p()
        best_s = lib.hc_devset_best_single(devset, ctypes.byref(name))
        # the fastest device of the set alone, as the history has it
        best = {'device': _text(name.value), 'predicted_s': best_s} if best_s > 0 else {'why': _text(name.value)}
        return {'plan': _text(lib.hc_devset_plan(devset)), 'parts': parts, 'best_single': best}

    def _take_outputs(self, job, workload):
        fields = {}
        for port in self.ports(workload, output=True):
            if self._lib.hc_job_output(job, port.encode()):
                h = ctypes.c_void_p()
                check(self._lib.hc_job_take_output(job, port.encode(), ctypes.byref(h)))
                fields[port] = Field(self, h.value)
        return fields

    def pipeline(self, text):
        """A pipeline from hcrun's syntax ("jacobi n=65 @cpu | simpson")."""
        from ._pipeline import Pipeline
        return Pipeline(self, text)

    def __repr__(self):
        return '<hc.Context: devices %s; workloads %s>' % (', '.join(self.devices), ', '.join(self.workloads))
