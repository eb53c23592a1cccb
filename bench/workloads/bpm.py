"""bpm (seed 003): the paper's figure (time per z-step against the number
of transverse nodes, CPU against GPU) and the 3-D ADI step.

Tables:
  1. the paper's Fig. 2 as a table: seconds per z-step for n = 100 .. 3000
     transverse nodes (quick: 100, 500, 1000), the paper's case (lambda =
     1 um, Ly = 10 um, conductor walls, guide mode, hz = hy/pi), c64 as the
     paper's cuFloatComplex, on every device and both solvers (direct:
     Thomas on the cpu backend, the scan-parallel Thomas in one work-group
     elsewhere; richardson: the paper's one-parameter iteration). Each run
     makes a fixed number of steps at the paper's hz (Lz = steps * hz), so
     the iteration counts are the paper's. Beside it, the cpu/GPU ratio at
     n = 3000 with the paper's 22.5x (GeForce GTS 250 against a Core 2
     E7500; its CPU solver grew as N^2, a Thomas solve grows as N).
  2. 3-D: seconds per ADI step (x-lines + y-lines) at 512^2, 1024^2, 2048^2
     (quick: 256^2, 512^2), c64 and c128, uniform medium and conductors,
     with the algorithmic bandwidth (the field read and written by each
     half-step) and its fraction of the device's measured copy bandwidth
     (hc-ceilings) or, without it, of the device record's peak.
Charts: microseconds per z-step against n (2-D, per solver) and per ADI
step against n (3-D, per dtype), one panel per device.
Figures: the 2048^2 c64 ADI step per GPU (target <= 100 us on the H100),
NVIDIA OpenCL against CUDA on the same GPU (target: within 10 %), and the
cpu/GPU ratio at n = 3000 next to the paper's 22.5.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, metric  # noqa: E402

PAPER_N = [100, 200, 500, 1000, 1500, 2000, 3000]
PAPER_RATIO_3000 = 22.5
ADI_N = [512, 1024, 2048]


def _is_gpu(dev):
    return dev.get('type') == 'gpu'


def _per_step(doc):
    """Seconds per z-step of the best run (device time where measured)."""
    return metric(doc, 'time_per_step_s')


def _paper_run(b, dev, n, solver, repeat):
    """One run of the paper's case with the paper's hz and a step count
    that keeps it to a fraction of a second."""
    hy = 10.0 / (n + 1)
    hz = hy / math.pi
    if solver == 'direct':
        steps = 2000 if _is_gpu(dev) else max(50, int(2e6 / n))
    else:  # the iteration needs ~ (hz/hy^2)-dependent hundreds of sweeps a step
        steps = 20 if _is_gpu(dev) else max(3, int(2e4 / n))
    if b.quick:
        steps = max(3, steps // 10)
    args = ['--device=' + dev['id'], '--workload=bpm', 'n=%d' % n, 'dtype=c64', 'solver=' + solver,
            'hz=%.17g' % hz, 'Lz=%.17g' % (steps * hz), 'save_every=%d' % steps]
    doc = b.hcrun(args, repeat=repeat)
    return {'step_s': _per_step(doc), 'iters': metric(doc, 'iterations_mean'), 'notes': doc.get('notes', [])}


def _paper_table(b, devs, repeat):
    ns = [100, 500, 1000] if b.quick else PAPER_N
    rows, at3000 = [], {}
    for solver in ('direct', 'richardson'):
        for dev in devs:
            res = []
            for n in ns:
                try:
                    res.append(_paper_run(b, dev, n, solver, repeat))
                except BenchError as e:
                    b.log('bpm %s %s n=%d: %s' % (dev['id'], solver, n, e))
                    res.append(None)
            rows.append([dev['id'], solver, 'us / z-step'] + [r and r['step_s'] * 1e6 for r in res])
            for n, r in zip(ns, res):
                b.point('bpm_2d', 'bpm 2-D: µs per z-step against n (c64, the paper\'s case)', dev['id'], solver, n,
                        'n (transverse nodes)', r and r['step_s'] * 1e6, 'µs', 'lower', headline=solver == 'direct')
            if solver == 'richardson':
                rows.append([dev['id'], solver, 'iterations / step'] + [r and r['iters'] for r in res])
            if ns[-1] == 3000 and res[-1]:
                at3000[(dev['id'], solver)] = res[-1]['step_s']
    notes = ['c64, lambda = 1 um, Ly = 10 um, conductors, the guide mode, hz = hy/pi (the paper\'s case); '
             'a fixed number of steps per run at that hz',
             'the paper\'s Fig. 2: one z-step at N = 3000 was 22.5x faster on a GeForce GTS 250 than on a '
             'Core 2 E7500 (its CPU solver was the same iteration, growing as N^2)']
    cpus = [d for d in devs if d['id'].startswith('cpu')]
    for solver in ('direct', 'richardson'):
        for dev in devs:
            if not _is_gpu(dev) or not cpus or (dev['id'], solver) not in at3000 or \
                    (cpus[0]['id'], solver) not in at3000:
                continue
            ratio = at3000[(cpus[0]['id'], solver)] / at3000[(dev['id'], solver)]
            rows.append([dev['id'], solver, 'cpu/GPU ratio at 3000'] + [None] * (len(ns) - 1) + [ratio])
            rows.append([dev['id'], solver, 'paper\'s ratio at 3000'] + [None] * (len(ns) - 1) + [PAPER_RATIO_3000])
            b.figure(workload='bpm', device=dev['id'], name='cpu_over_gpu_2d_3000_%s' % solver, value=ratio, unit='',
                     reference=cpus[0]['id'], paper=PAPER_RATIO_3000)
    b.table('bpm 2-D: time per z-step, the paper\'s case (best of %d)' % repeat,
            ['device', 'solver', 'quantity'] + ['n=%d' % n for n in ns], rows, notes=notes)


def _ceiling(b, dev, notes):
    c = b.ceilings(dev['id'])
    if c.get('copy_gbs'):
        return c['copy_gbs'], 'copy (hc-ceilings)'
    if dev.get('peak_bandwidth_gbs'):
        notes.append('%s: bandwidth fraction of the device record\'s peak (hc-ceilings not available)' % dev['id'])
        return dev['peak_bandwidth_gbs'], 'peak (device record)'
    return None, 'none'


def _adi_table(b, devs, repeat):
    ns = [256, 512] if b.quick else ADI_N
    rows, notes, best = [], [], {}
    for dev in devs:
        ceil, what = _ceiling(b, dev, notes)
        for dtype in ('c64', 'c128'):
            if dtype == 'c128' and not dev.get('fp64'):
                continue
            for n in ns:
                nodes = n * n
                steps = 100 if _is_gpu(dev) else max(2, int(4e6 / nodes))
                if b.quick:
                    steps = max(2, steps // 5)
                args = ['--device=' + dev['id'], '--workload=bpm', 'dim=3', 'n=%d' % n, 'dtype=' + dtype,
                        'steps=%d' % steps, 'Lz=%g' % (steps * 0.01), 'save_every=%d' % steps]
                try:
                    doc = b.hcrun(args, repeat=repeat)
                except BenchError as e:
                    b.log('bpm 3-D %s %s n=%d: %s' % (dev['id'], dtype, n, e))
                    rows.append([dev['id'], dtype, '%d^2' % n, None, None, None])
                    continue
                step = metric(doc, 'adi_step_s')
                gbs = metric(doc, 'bandwidth_gbs')
                frac = gbs / ceil if (gbs and ceil) else None
                rows.append([dev['id'], dtype, '%d^2' % n, step * 1e6, gbs, frac])
                b.point('bpm_adi', 'bpm 3-D: µs per ADI step against n (n x n, uniform medium)', dev['id'], dtype, n,
                        'n (nodes per axis)', step * 1e6, 'µs', 'lower', headline=dtype == 'c64')
                best[(dev['id'], dtype, n)] = step
                if n == 2048 and dtype == 'c64' and _is_gpu(dev):
                    b.figure(workload='bpm', device=dev['id'], name='adi_step_2048_c64', value=step * 1e6, unit='us',
                             bandwidth_gbs=gbs, ceiling=ceil, ceiling_kind=what, fraction=frac, target=100.0,
                             met=step * 1e6 <= 100.0)
    notes.append('an ADI step is two launches (x-lines, y-lines); algorithmic traffic = the field read and '
                 'written by each half-step (uniform medium: the coefficients are one line, cached)')
    b.table('bpm 3-D: time per ADI step, uniform medium, conductors (best of %d)' % repeat,
            ['device', 'dtype', 'grid', 'us / ADI step', 'GB/s', 'fraction of ' + 'bandwidth'], rows, notes=notes)
    return best, ns[-1]


def run(b):
    devs = b.devices()
    repeat = 1 if b.quick else 3
    _paper_table(b, devs, repeat)
    best, n = _adi_table(b, devs, repeat)
    # NVIDIA OpenCL against CUDA on the same GPU: time ratio (target <= 1.10)
    by_name = {}
    for dev in devs:
        by_name.setdefault(dev['name'], []).append(dev)
    for group in by_name.values():
        for c in [d for d in group if d['id'].startswith('cuda')]:
            for o in [d for d in group if d['id'].startswith('opencl')]:
                key_c, key_o = (c['id'], 'c64', n), (o['id'], 'c64', n)
                if key_c in best and key_o in best:
                    ratio = best[key_o] / best[key_c]
                    b.figure(workload='bpm', device=o['id'], name='opencl_over_cuda_adi_%d_c64' % n, value=ratio,
                             unit='', reference=c['id'], target=1.10, met=ratio <= 1.10)
