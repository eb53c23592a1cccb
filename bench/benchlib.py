"""hc benchmark library: what every benchmark module in bench/workloads uses.

A module bench/workloads/<name>.py defines run(b) and uses the Bench object:
  b.quick                 True for a quick run (small sizes, few repeats)
  b.devices()             devices to benchmark (hcrun --list --json entries,
                          filtered by --device)
  b.hcrun(args, repeat)   runs build/bin/hcrun --json --repeat=N args and
                          returns the parsed JSON (raises BenchError on failure)
  b.ceilings(dev_id)      the device's ceilings measured in this run (cached):
                          read_gbs, copy_gbs, fp32_gflops, fp64_gflops,
                          launch_us — {} when build/bin/hc-ceilings is missing
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


class BenchError(RuntimeError):
    pass


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

    def devices(self):
        if self._devices is None:
            doc = self.run_json([self.hcrun_path, '--list', '--json'])
            devs = [d for b in doc['backends'] for d in b['devices']]
            if self.device_filter:
                devs = [d for d in devs if any(d['id'].startswith(f) for f in self.device_filter.split(','))]
            self._devices = devs
        return self._devices

    def ceilings(self, dev_id):
        if dev_id not in self._ceilings:
            exe = os.path.join(self.build, 'bin', 'hc-ceilings')
            c = {}
            if os.path.exists(exe):
                try:
                    c = self.run_json([exe, '--device=' + dev_id, '--json'] + (['--quick'] if self.quick else []))
                except BenchError as e:
                    self.log('ceilings on %s failed: %s' % (dev_id, e))
            self._ceilings[dev_id] = c
        return self._ceilings[dev_id]

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
