"""Python call overhead: what `import hc` adds to a run and to a pipeline on
top of the C API, measured side by side in one run.

Table: microseconds per call, on every cpu and OpenCL device of the run.
  C API     hc-bench-api-overhead: a small reduce run (job, one parameter, a
            16-element f64 input written from the host, run, output taken)
            and a two-stage pipeline (parsed, run, destroyed), best of five
            batches.
  Python    bench/python_overhead.py: ctx.run('reduce', input=x, op='sum')
            and ctx.pipeline(...).run() doing the same, in the peers'
            interpreter (NumPy needed).
  hcrun     one hcrun process for the same run, for scale (process start,
            plugin loading, context creation included).
Goal: Python - C API <= 20 us per run."""
import json
import os
import subprocess
import time

GOAL_US = 20.0


def _c_api(b, dev, mode, runs):
    exe = os.path.join(b.build, 'bin', 'hc-bench-api-overhead')
    out = subprocess.run([exe, dev, str(runs), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if out.returncode != 0:
        raise RuntimeError('%s: %s' % (exe, out.stderr.decode()[-500:]))
    return json.loads(out.stdout)['seconds_per_run']


def _hcrun_process(b, dev, n=10):
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run([b.hcrun_path, '--device=' + dev, '--workload=simpson', 'n=9x9x9', 'func=sinprod'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) / n


def run(b):
    if not b.python_has('numpy'):
        b.log('python overhead: skipped (%s cannot import numpy)' % b.python_exe)
        return
    runs = 2000 if b.quick else 10000
    rows, notes = [], []
    for d in b.devices():
        dev = d['id']
        if not (dev.startswith('cpu') or dev.startswith('opencl')):
            continue
        c_run, c_pipe = _c_api(b, dev, 'run', runs), _c_api(b, dev, 'pipeline', runs // 4)
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'python_overhead.py')
        p = subprocess.run([b.python_exe, script, b.build, dev, str(runs)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
        if p.returncode != 0:
            raise RuntimeError('python_overhead.py: %s' % p.stderr.decode()[-500:])
        py = json.loads(p.stdout)
        proc = _hcrun_process(b, dev)
        for what, c, pyv in (('run', c_run, py['run_s']), ('pipeline', c_pipe, py['pipeline_s'])):
            added = (pyv - c) * 1e6
            rows.append([dev, what, round(c * 1e6, 2), round(pyv * 1e6, 2), round(added, 2),
                         'met' if what != 'run' or added <= GOAL_US else 'missed'])
            b.figure(name='python_%s_added_us' % what, device=dev, value=added, unit='us',
                     target=GOAL_US if what == 'run' else None)
        rows.append([dev, 'hcrun process (simpson 9^3)', None, None, None, round(proc * 1e6, 1)])
    notes.append('added = Python - C API, per call; goal: <= %g us per run' % GOAL_US)
    b.table('Python call overhead (us per call)', ['device', 'call', 'C API', 'Python', 'added', 'goal / hcrun'],
            rows, notes)
