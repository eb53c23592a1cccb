"""hc benchmark library: what every benchmark module in bench/workloads uses.

A module bench/workloads/<name>.py defines run(b) and uses the Bench object:
  b.quick                 True for a quick run (small sizes, few repeats)
  b.devices()             devices to benchmark (hcrun --list --json entries,
                          filtered by --device)
  b.hcrun(args, repeat)   runs build/bin/hcrun --json --repeat=N args and
                          returns the parsed JSON (raises BenchError on failure)
  b.ceilings(dev_id)      the device's ceilings measured in this run (cached):
                          read_gbs, copy_gbs, fp32_gflops, fp64_gflops,
                          launch_us — {} when build/bin/hc-ceilings is missing;
                          an OpenCL device of type CPU gets the host's (the
                          cpu backend's kernels on the same cores)
  with b.bracket(dev_id, keys, nbytes=None) as br:   ceilings measured just
                          before and just after the runs inside (ceiling,
                          workload, ceiling), so that a noisy shared machine
                          moves both alike; br.fraction(key, value, what) is
                          value's fraction of the higher of the two samples,
                          br.ceiling(key) that ceiling: placeholders resolved
                          when the block ends. A fraction above 1 becomes
                          "ceiling too low" in the tables and figures and a
                          failure of the run (b.failures, exit status 1)
  b.table(title, columns, rows, notes=[])   a table for the report
  b.figure(**fields)      one figure for the JSON (workload, device, name,
                          value, unit, ceiling, fraction, target, ...)
  b.point(...)            one measured point of a size sweep, drawn in the
                          report's charts (a figure with chart fields)
  b.peer(name, status)    what became of a peer (ran, or skipped and why)
  b.log(msg)              progress on stderr
Peers (SciPy, NumPy, CuPy, StarPU) are run by the modules themselves, in the
same run: Python ones through b.python(code) or b.peers_py(spec) (bench/peers.py)
with the interpreter of bench/run --python.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def compute_s(doc):
    """A run's compute time (an hcrun --json document)."""
    return doc['times']['compute_s']


def part_fractions(doc):
    """A split run's parts against the slowest one's compute time: a dict of
    the largest halo, idle and collective times over it; None when the run
    did not split."""
    parts = doc.get('split', {}).get('parts', [])
    if not parts:
        return None
    slow = max(p['compute_s'] for p in parts) or 1e-30
    return {k: max(p[k + '_s'] for p in parts) / slow for k in ('halo', 'idle', 'collective')}


class BenchError(RuntimeError):
    pass


TOO_LOW = 'ceiling too low'
# hc-ceilings' --only names of the ceilings a bracket samples.
CEILING_ONLY = {'read_gbs': 'read', 'copy_gbs': 'copy', 'fp32_gflops': 'fp32', 'fp64_gflops': 'fp64', 'link': 'link'}
CEILING_UNITS = {'read_gbs': 'GB/s', 'copy_gbs': 'GB/s', 'fp32_gflops': 'GFLOP/s', 'fp64_gflops': 'GFLOP/s'}


class Deferred:
    """A table cell or figure field known when its bracket closes; the JSON
    holds json()."""

    def json(self):
        raise NotImplementedError


class Ceiling(Deferred):
    """The bracket's ceiling for key, times scale (e.g. 0.5: FMA lane slots
    per second from GFLOP/s)."""

    def __init__(self, bracket, key, scale=1.0):
        self.bracket, self.key, self.scale = bracket, key, scale

    def json(self):
        c = self.bracket.ceiling_value(self.key)
        return c * self.scale if c else None


class Fraction(Deferred):
    """value / the bracket's ceiling for key; TOO_LOW (and a failure of the
    run) when above 1."""

    def __init__(self, bracket, key, value, what, scale=1.0, unit=None):
        self.bracket, self.key, self.value, self.what = bracket, key, value, what
        self.scale, self.unit = scale, unit or CEILING_UNITS[key]
        self.fraction = None
        self.failed = False

    def resolve(self):
        c = Ceiling(self.bracket, self.key, self.scale).json()
        self.fraction = self.value / c if c and self.value is not None else None
        if self.fraction is not None and self.fraction > 1.0:
            self.failed = True
            b = self.bracket
            what = self.what + ' ' if self.what else ''
            b.bench.fail('%s: %s on %s: %s%.4g %s is %.3f of the ceiling %.4g %s (%s x %g; samples %s, spread %.1f %%)'
                         % (TOO_LOW, b.module, b.dev_id, what, self.value, self.unit, self.fraction, c, self.unit,
                            self.key, self.scale, ', '.join('%.4g' % v for v in b.samples(self.key)),
                            100 * b.spread(self.key)))

    def json(self):
        return TOO_LOW if self.failed else self.fraction


class Bracket:
    """with b.bracket(dev_id, keys) as br: ceilings sampled before and after
    the block; see the module's docstring."""

    def __init__(self, bench, dev_id, keys, nbytes=None, label=None):
        self.bench, self.dev_id, self.keys, self.nbytes = bench, dev_id, list(keys), nbytes
        self.ceiling_dev = bench.ceiling_device(dev_id)
        self.module = bench.module
        self.label = label
        self.runs = []       # hc-ceilings documents, before and after
        self.fractions = []
        self.closed = False

    def _sample(self):
        doc = self.bench.measure_ceilings(self.ceiling_dev, self.keys, self.nbytes)
        if doc:
            self.runs.append(doc)

    def __enter__(self):
        self._sample()
        return self

    def __exit__(self, *exc):
        self._sample()
        self.closed = True
        for f in self.fractions:
            f.resolve()
        self.bench.brackets.append(self.record())
        return False

    def samples(self, key):
        return [r[key] for r in self.runs if r.get(key) is not None and r[key] > 0]

    def ceiling_value(self, key):
        v = self.samples(key)
        return max(v) if v else None

    def spread(self, key):
        v = self.samples(key)
        return (max(v) - min(v)) / max(v) if v else 0.0

    def ceiling(self, key, scale=1.0):
        return Ceiling(self, key, scale)

    def doc(self, field):
        """A field of the first hc-ceilings document (isa, threads, bytes)."""
        return self.runs[0].get(field) if self.runs else None

    def fraction(self, key, value, what=None, scale=1.0, unit=None):
        """value (in unit) over the ceiling key x scale."""
        f = Fraction(self, key, value, what, scale, unit)
        self.fractions.append(f)
        if self.closed:
            f.resolve()
        return f

    def record(self):
        return {'workload': self.module, 'device': self.dev_id, 'ceiling_device': self.ceiling_dev,
                'label': self.label, 'bytes': self.runs[0].get('bytes') if self.runs else None,
                'llc_bytes': self.runs[0].get('llc_bytes') if self.runs else None,
                'ceilings': {k: {'samples': self.samples(k), 'ceiling': self.ceiling_value(k),
                                 'spread': self.spread(k)} for k in self.keys}}


def plain(o):
    """o with every Deferred replaced by its JSON value (for json.dump)."""
    if isinstance(o, Deferred):
        return o.json()
    if isinstance(o, dict):
        return {k: plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [plain(v) for v in o]
    return o


class Bench:
    def __init__(self, build, quick=False, device_filter=None, python=None):
        self.build = os.path.abspath(build)
        self.quick = quick
        self.device_filter = device_filter
        self.python_exe = python or sys.executable
        self.tables = []
        self.figures = []
        self.peers = []          # {'workload', 'peer', 'status'} rows of the report's peer table
        self.module = None       # the module running (bench/run sets it); tables and figures carry it
        self._imports = {}
        self._devices = None
        self._ceilings = {}
        self._all_devices = None
        self.brackets = []       # Bracket.record() of every bracket, in order
        self.failures = []       # "ceiling too low: ..." lines: the run fails
        self.hcrun_path = os.path.join(self.build, 'bin', 'hcrun')

    def log(self, msg):
        sys.stderr.write('[bench] %s\n' % msg)
        sys.stderr.flush()

    def run_json(self, cmd, timeout=1800, env=None):
        """cmd's JSON; env: variables added to this process's environment."""
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
        try:
            doc = json.loads(p.stdout.decode())
        except ValueError:
            raise BenchError('%s: exit %d, no JSON: %s' % (' '.join(cmd), p.returncode,
                                                           p.stderr.decode()[-2000:]))
        if p.returncode not in (0, 1) or 'error' in doc:
            raise BenchError('%s: exit %d: %s' % (' '.join(cmd), p.returncode,
                                                  doc.get('error', {}).get('message', p.stderr.decode()[-2000:])))
        return doc

    def hcrun(self, args, repeat=3, timeout=1800, env=None):
        return self.run_json([self.hcrun_path, '--json', '--repeat=%d' % repeat] + list(args), timeout, env)

    def fail(self, msg):
        self.log(msg)
        self.failures.append(msg)

    def all_devices(self):
        if self._all_devices is None:
            doc = self.run_json([self.hcrun_path, '--list', '--json'])
            self._all_devices = [d for b in doc['backends'] for d in b['devices']]
        return self._all_devices

    def ceiling_device(self, dev_id):
        """The device whose ceilings bound dev_id's figures: an OpenCL device
        of type CPU (PoCL) runs on the host's cores, whose ceilings the cpu
        backend's native kernels measure (PoCL's own compiled read loop
        reads a fraction of what its workloads read); else dev_id itself."""
        devs = self.all_devices()
        d = next((d for d in devs if d['id'] == dev_id), None)
        if d and not dev_id.startswith('cpu') and d.get('type') == 'cpu':
            host = next((h['id'] for h in devs if h['id'].startswith('cpu')), None)
            if host:
                return host
        return dev_id

    def measure_ceilings(self, dev_id, keys=None, nbytes=None, env=None):
        """One hc-ceilings run on dev_id ({} when it is missing or fails):
        keys (read_gbs, copy_gbs, fp32_gflops, fp64_gflops, link: every link
        figure) only, at nbytes of
        working set for read and copy when given; env: variables it runs
        with."""
        exe = os.path.join(self.build, 'bin', 'hc-ceilings')
        if not os.path.exists(exe):
            return {}
        cmd = [exe, '--device=' + dev_id, '--json'] + (['--quick'] if self.quick else [])
        if keys:
            cmd.append('--only=' + ','.join(CEILING_ONLY[k] for k in keys))
        if nbytes:
            cmd.append('--bytes=%d' % nbytes)
        try:
            doc = self.run_json(cmd, env=env)
        except BenchError as e:
            self.log('ceilings on %s failed: %s' % (dev_id, e))
            return {}
        return {k: (None if isinstance(v, (int, float)) and v < 0 else v) for k, v in doc.items()}

    def bracket(self, dev_id, keys, nbytes=None, label=None):
        return Bracket(self, dev_id, keys, nbytes, label)

    def static_fraction(self, value, ceiling, what):
        """value / a ceiling not measured in this run (a device record's
        peak): the fraction, or TOO_LOW and a failure when above 1."""
        if not ceiling or value is None:
            return None
        frac = value / ceiling
        if frac > 1.0:
            self.fail('%s: %s: %s %.4g is %.3f of %.4g' % (TOO_LOW, self.module, what, value, frac, ceiling))
            return TOO_LOW
        return frac

    def check_figures(self, module):
        """Figures of module with a numeric fraction of a ceiling above 1
        (modules that compute their own fractions): ceiling too low."""
        for f in self.figures:
            frac = f.get('fraction')
            if f.get('workload') != module or isinstance(frac, Deferred) or not isinstance(frac, (int, float)):
                continue
            if f.get('ceiling') and frac > 1.0:
                self.fail('%s: %s on %s: %s = %.4g %s is %.3f of its ceiling (%s %.4g)'
                          % (TOO_LOW, module, f.get('device'), f.get('name'), f.get('value'), f.get('unit', ''),
                             frac, f.get('ceiling_kind', ''), f['ceiling']))
                f['fraction'] = TOO_LOW
                f['failed'] = TOO_LOW
                if 'met' in f:
                    f['met'] = False

    def settle_figures(self):
        """Deferred fractions of figures: met against fraction_target, and a
        failed figure marked (before the JSON is written)."""
        for f in self.figures:
            frac = f.get('fraction')
            if isinstance(frac, Fraction):
                if frac.failed:
                    f['failed'] = TOO_LOW
                    f['met'] = False
                elif 'fraction_target' in f:
                    f['met'] = frac.fraction is not None and frac.fraction >= f['fraction_target']

    def devices(self):
        if self._devices is None:
            devs = list(self.all_devices())
            if self.device_filter:
                devs = [d for d in devs if any(d['id'].startswith(f) for f in self.device_filter.split(','))]
            self._devices = devs
        return self._devices

    def ceilings(self, dev_id):
        cdev = self.ceiling_device(dev_id)
        if cdev not in self._ceilings:
            self._ceilings[cdev] = self.measure_ceilings(cdev)
        return self._ceilings[cdev]

    def table(self, title, columns, rows, notes=(), workload=None):
        self.tables.append({'workload': workload or self.module, 'title': title, 'columns': list(columns),
                            'rows': [list(r) for r in rows], 'notes': list(notes)})

    def figure(self, **fields):
        fields.setdefault('workload', self.module)
        self.figures.append(fields)

    def point(self, chart, title, device, series, x, xlabel, value, unit, better, headline=False, peer=False,
              plot=True):
        """One measured point of a size sweep. bench/charts.py draws one PNG per
        chart (title), one panel per device, one line per series (dashed for a
        peer), from the JSON alone. better: 'higher' or 'lower' (a rate or a
        time). headline marks the device's main number at that size: the
        'cpu backend / PoCL' tables compare those. plot=False: compared, not
        drawn (a single size)."""
        if value is None:
            return
        self.figure(name=chart, chart=chart, chart_title=title, device=device, series=series, x=x, xlabel=xlabel,
                    value=value, unit=unit, better=better, headline=headline, peer=peer, plot=plot)

    def peer(self, name, status):
        """Records what became of a peer benchmark: 'ran ...' or 'skipped: why'."""
        self.log('%s: %s' % (name, status))
        self.peers.append({'workload': self.module, 'peer': name, 'status': status})

    def peer_device(self, name, prefix, modules):
        """The first benchmarked device whose id starts with prefix, when the
        peers' interpreter imports modules; else None, with the reason the
        peer is skipped recorded for the report."""
        devs = [d for d in self.devices() if d['id'].startswith(prefix)]
        if not devs:
            self.peer(name, 'skipped: no %s device in this run' % prefix)
            return None
        if not self.python_has(*modules):
            self.peer(name, 'skipped: %s cannot import %s' % (self.python_exe, ', '.join(modules)))
            return None
        return devs[0]

    def python_has(self, *modules):
        """True when the peers' interpreter (bench/run --python) imports all of
        modules (cached)."""
        key = tuple(modules)
        if key not in self._imports:
            try:
                r = subprocess.run([self.python_exe, '-c', 'import ' + ', '.join(modules)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=300)
                self._imports[key] = r.returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                self._imports[key] = False
        return self._imports[key]

    def peers_py(self, spec, timeout=1800):
        """Runs bench/peers.py (NumPy / CuPy peers) with the peers' interpreter;
        spec is its JSON argument. Raises BenchError on any failure, so that a
        peer's failure becomes a note."""
        try:
            p = subprocess.run([self.python_exe, os.path.join(HERE, 'peers.py'), json.dumps(spec)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BenchError('peer %s: %s' % (spec.get('what'), e))
        if p.returncode != 0:
            raise BenchError('peer %s failed: %s' % (spec.get('what'), p.stderr.decode()[-600:].strip()))
        try:
            return json.loads(p.stdout.decode())
        except ValueError:
            raise BenchError('peer %s printed no JSON' % spec.get('what'))

    def versus_pocl(self):
        """'cpu backend / PoCL' tables: for each workload, the headline points
        of the cpu backend and of every OpenCL device whose type is CPU, at the
        sizes both measured (the numbers the modules measured per device)."""
        devs = self.devices()
        cpus = [d['id'] for d in devs if d['id'].startswith('cpu')]
        pocls = [d['id'] for d in devs if d['id'].startswith('opencl') and d.get('type') == 'cpu']
        if not cpus or not pocls:
            return
        heads = [f for f in self.figures if f.get('headline') and not f.get('peer')]
        for wl in sorted({f['workload'] for f in heads}, key=[f['workload'] for f in heads].index):
            got = {(f['chart'], f['device'], f['x']): f for f in heads if f['workload'] == wl}
            rows = []
            for pocl in pocls:
                for (chart, dev, x), f in got.items():
                    g = got.get((chart, pocl, x))
                    if dev != cpus[0] or not g or not f['value'] or not g['value']:
                        continue
                    speedup = f['value'] / g['value'] if f['better'] == 'higher' else g['value'] / f['value']
                    case = f['series'] if f['series'] == g['series'] else '%s / %s' % (f['series'], g['series'])
                    rows.append([f['chart_title'], case, '%s = %s' % (f['xlabel'], x), f['unit'],
                                 f['value'], pocl, g['value'], speedup])
            if rows:
                self.table('%s: cpu backend / PoCL (same run)' % wl,
                           ['quantity', 'case', 'size', 'unit', 'cpu backend (%s)' % cpus[0], 'PoCL device', 'PoCL',
                            'cpu backend / PoCL'], rows,
                           notes=['PoCL runs the workload\'s OpenCL kernels on the same cores. cpu backend / PoCL is '
                                  'a speed-up (> 1: the cpu backend is faster): PoCL\'s time over the cpu backend\'s, '
                                  'or the cpu backend\'s rate over PoCL\'s'],
                           workload=wl)

    def python(self, code, timeout=1800):
        """Runs Python code (a peer benchmark) that prints one JSON document."""
        p = subprocess.run([self.python_exe, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        if p.returncode != 0:
            raise BenchError('peer failed: %s' % p.stderr.decode()[-2000:])
        return json.loads(p.stdout.decode())


def metric(doc, name, default=None):
    m = doc.get('metrics', {}).get(name)
    return m['value'] if m else default


def best_runs(doc):
    """(compute_s, device_s) of the best run in an hcrun --json document."""
    t = doc['times']
    return t['compute_s'], t['device_s']


def now():
    return time.time()
