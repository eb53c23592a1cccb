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
  b.log(msg)              progress on stderr
Peers (SciPy, NumPy, CuPy, raw launches) are run by the modules themselves,
in the same run, through b.python(code) when they are Python.
"""
import json
import os
import subprocess
import sys
import time


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
        self._devices = None
        self._ceilings = {}
        self.hcrun_path = os.path.join(self.build, 'bin', 'hcrun')

    def log(self, msg):
        sys.stderr.write('[bench] %s\n' % msg)
        sys.stderr.flush()

    def run_json(self, cmd, timeout=1800):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        try:
            doc = json.loads(p.stdout.decode())
        except ValueError:
            raise BenchError('%s: exit %d, no JSON: %s' % (' '.join(cmd), p.returncode,
                                                           p.stderr.decode()[-2000:]))
        if p.returncode not in (0, 1) or 'error' in doc:
            raise BenchError('%s: exit %d: %s' % (' '.join(cmd), p.returncode,
                                                  doc.get('error', {}).get('message', p.stderr.decode()[-2000:])))
        return doc

    def hcrun(self, args, repeat=3, timeout=1800):
        return self.run_json([self.hcrun_path, '--json', '--repeat=%d' % repeat] + list(args), timeout)

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

    def table(self, title, columns, rows, notes=()):
        self.tables.append({'title': title, 'columns': list(columns), 'rows': [list(r) for r in rows],
                            'notes': list(notes)})

    def figure(self, **fields):
        self.figures.append(fields)

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
