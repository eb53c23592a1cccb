"""simpson (seed 000): the paper's Table 1 on every device, large inputs
against the device's memory ceiling, and SciPy as the CPU peer.

Tables:
  1. the paper's layout: for each device and variant (algorithms 1, 2, 3 and
     the fused default) the total and device ms at N = 10^3, 10^5, 5*10^5,
     10^6 samples (f32, as the paper). total = upload of the samples +
     integration (the paper's "total time"), device = the device's own span.
  2. large inputs (>= 1 GiB; a 128 MiB stand-in in quick mode): every
     variant, GB/s of the samples read, and the fused variant's fraction of
     the ceiling measured just before and just after that input's runs (a
     CPU's read bandwidth, PoCL's too as it runs on the same cores; a GPU's
     device-to-device copy bandwidth). The read ceiling reads as many bytes
     as the input when the input is not well beyond the last-level cache
     (the report then says "in cache"), so that both stream from the same
     level of the memory hierarchy.
  3. SciPy's simpson() applied axis by axis on the same data, on the CPU
     (when the cpu backend is benchmarked), beside the cpu backend.
  4. CuPy's sum(weights * samples) on the large inputs (bench/peers.py),
     beside the cuda backend's fused variant (when a cuda device is
     benchmarked and CuPy imports).
Chart: total ms against N per device and variant (the paper's Table 1), with
SciPy beside the cpu backend.
Figures: fused / ceiling per device (targets: cpu backend >= 0.85 of the
read bandwidth, GPU >= 0.90 of the copy bandwidth), and NVIDIA OpenCL
against CUDA on the same GPU (target >= 0.90).
"""
import contextlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, metric  # noqa: E402

VARIANTS = ['precomputed', 'onthefly', 'devicereduce', 'fused']
PAPER = {'precomputed': 'algorithm 1', 'onthefly': 'algorithm 2', 'devicereduce': 'algorithm 3',
         'fused': 'fused (ours)'}
# The paper's sample counts, as 3-D shapes with exactly those counts.
PAPER_SIZES = [('10x10x10', 1000), ('40x50x50', 100000), ('50x100x100', 500000), ('100x100x100', 1000000)]
# >= 1 GiB of samples: 512^3 f64 is 1 GiB exactly, 647^3 f32 1.08 GB.
LARGE = [('512x512x512', 'f64'), ('647x647x647', 'f32')]
QUICK_LARGE = [('256x256x256', 'f64')]  # 128 MiB: a stand-in that still streams from memory
BOX = 'box=-2:2'
CHART_TITLE = 'simpson: total ms against N samples (f32, func=gauss)'

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))


def _python_with_scipy(b):
    """An interpreter that imports NumPy and SciPy: bench/run --python, else
    the repository's .venv (the one the tests use)."""
    for exe in (b.python_exe, os.path.join(REPO, '.venv', 'bin', 'python')):
        if exe and os.path.exists(exe):
            r = subprocess.run([exe, '-c', 'import numpy, scipy.integrate'], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            if r.returncode == 0:
                return exe
    return None


def _peer(exe, code, timeout=1800):
    p = subprocess.run([exe, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        raise BenchError('peer failed: %s' % p.stderr.decode()[-2000:])
    return json.loads(p.stdout.decode())


# NumPy peers: the same gauss samples; SciPy's simpson() axis by axis; and a
# read-bandwidth loop over all cores (NumPy sums release the GIL) used as the
# CPU's ceiling when hc-ceilings is not built.
SCIPY_CODE = r'''
import json, time, numpy as np
from scipy.integrate import simpson
out = []
for shape, dtype, repeat in %(cases)r:
    n = [int(s) for s in shape.split('x')]
    ax = [np.linspace(-2.0, 2.0, k) for k in n]
    g = [np.exp(-a * a) for a in ax]
    y = (g[0][:, None, None] * g[1][None, :, None] * g[2][None, None, :]).astype(dtype)
    h = [4.0 / (k - 1) for k in n]
    best = 1e300
    for _ in range(repeat):
        t0 = time.perf_counter()
        v = simpson(simpson(simpson(y, dx=h[2], axis=-1), dx=h[1], axis=-1), dx=h[0], axis=-1)
        best = min(best, time.perf_counter() - t0)
    out.append({'shape': shape, 'dtype': dtype, 'seconds': best, 'value': float(v)})
print(json.dumps(out))
'''

READ_BW_CODE = r'''
import json, os, time, threading, numpy as np
n = %(bytes)d // 8
a = np.ones(n)
threads = os.cpu_count() or 1
parts = np.array_split(a, threads)
best = 0.0
for _ in range(%(repeat)d):
    ts = [threading.Thread(target=np.add.reduce, args=(p,)) for p in parts]
    t0 = time.perf_counter()
    for t in ts: t.start()
    for t in ts: t.join()
    best = max(best, a.nbytes / (time.perf_counter() - t0) / 1e9)
print(json.dumps({'read_gbs': best, 'threads': threads}))
'''


def _rows(rows):
    """Missing measurements as '-' in the report."""
    return [['-' if v is None else v for v in r] for r in rows]


def _run(b, dev, shape, dtype, variant, repeat):
    doc = b.hcrun(['--device=' + dev['id'], '--workload=simpson', 'func=gauss', BOX, 'n=' + shape,
                   'dtype=' + dtype, 'variant=' + variant], repeat=repeat)
    compute, device = doc['times']['compute_s'], doc['times']['device_s']
    transfer = metric(doc, 'transfer_s', 0.0)
    return {'total_ms': 1e3 * (transfer + compute), 'compute_ms': 1e3 * compute, 'device_ms': 1e3 * device,
            'gbs': metric(doc, 'bandwidth_gbs', 0.0), 'bytes': metric(doc, 'bytes', 0.0),
            'integral': metric(doc, 'integral')}


def _ceiling(b, dev, py, notes):
    """(GB/s, what) of the device's memory ceiling in this run."""
    c = b.ceilings(dev['id'])
    gpu = dev.get('type') == 'gpu'
    if gpu and c.get('copy_gbs'):
        return c['copy_gbs'], 'device-to-device copy (hc-ceilings)'
    if not gpu and c.get('read_gbs'):
        return c['read_gbs'], 'read loop (hc-ceilings)'
    if not gpu and py:
        r = _peer(py, READ_BW_CODE % {'bytes': (1 << 27) if b.quick else (1 << 30), 'repeat': 3 if b.quick else 5})
        notes.append('%s: ceiling = NumPy read loop on %d threads (hc-ceilings not built)' % (dev['id'], r['threads']))
        return r['read_gbs'], 'NumPy read loop'
    if dev.get('peak_bandwidth_gbs'):
        notes.append('%s: ceiling = the device record\'s peak bandwidth, not measured (hc-ceilings not built)'
                     % dev['id'])
        return dev['peak_bandwidth_gbs'], 'peak (device record)'
    notes.append('%s: no ceiling known' % dev['id'])
    return None, 'none'


def _in_cache_bytes(b, dev, nbytes):
    """nbytes when an input of that size is not well beyond dev's last-level
    cache (4x: hc-ceilings' default read size at least), so that its read
    ceiling must be measured at the same working set; else None."""
    if dev.get('type') == 'gpu':
        return None
    llc = b.ceilings(dev['id']).get('llc_bytes') or 0
    return int(nbytes) if nbytes and nbytes < 4 * llc else None


def run(b):
    devs = b.devices()
    repeat = 3 if b.quick else 10
    py = _python_with_scipy(b)
    notes = []

    # 1. The paper's table.
    rows = []
    for dev in devs:
        for v in VARIANTS:
            res = []
            for shape, _ in PAPER_SIZES:
                try:
                    res.append(_run(b, dev, shape, 'f32', v, repeat))
                except BenchError as e:
                    b.log('simpson %s %s %s: %s' % (dev['id'], v, shape, e))
                    res.append(None)
            rows.append([dev['id'], PAPER[v], 'total, ms'] + [r and r['total_ms'] for r in res])
            for (_, n), r in zip(PAPER_SIZES, res):
                b.point('simpson_time', CHART_TITLE, dev['id'], PAPER[v], n, 'N (samples)', r and r['total_ms'], 'ms',
                        'lower')
                # compared across devices without the upload (a host device has none): the integration alone
                b.point('simpson_compute', 'simpson: integration ms, upload excluded (f32, func=gauss)', dev['id'],
                        PAPER[v], n, 'N (samples)', r and r['compute_ms'], 'ms', 'lower', headline=v == 'fused',
                        plot=False)
            rows.append([dev['id'], PAPER[v], 'device, ms'] + [r and r['device_ms'] for r in res])
    b.table('simpson: the paper\'s Table 1 (f32, func=gauss; ms, best of %d)' % repeat,
            ['device', 'variant', 'time'] + ['N = %d' % n for _, n in PAPER_SIZES], _rows(rows),
            notes=['paper, N = 10^6 (OpenCL, 2011): GPU algorithm 2 5.892 ms total / 1.168 ms device; '
                   'CPU algorithm 1 40.549 / 25.434 ms',
                   'total = upload of the samples (transfer_s) + integration (compute_s); on the cpu backend the '
                   'samples are generated in place, so there is no upload'])

    # 2. Large inputs against the ceiling.
    large = QUICK_LARGE if b.quick else LARGE
    rows = []
    fused = {}
    fused_runs = {}
    measured = os.path.exists(os.path.join(b.build, 'bin', 'hc-ceilings'))
    for dev in devs:
        gpu = dev.get('type') == 'gpu'
        key = 'copy_gbs' if gpu else 'read_gbs'
        target = 0.90 if gpu else 0.85
        if not measured:
            ceil, what = _ceiling(b, dev, py, notes)
        for shape, dtype in large:
            if dtype == 'f64' and not dev.get('fp64', True):
                continue
            nbytes = 1
            for k in shape.split('x'):
                nbytes *= int(k)
            nbytes *= 8 if dtype == 'f64' else 4
            same = None if not measured else _in_cache_bytes(b, dev, nbytes)
            label = 'simpson %s %s%s' % (shape, dtype, ', read at the input\'s size' if same else '')
            with b.bracket(dev['id'], [key], nbytes=same, label=label) if measured else contextlib.nullcontext() \
                    as br:
                if br:
                    what = ('device-to-device copy (hc-ceilings)' if gpu else
                            'read loop over %s (hc-ceilings%s)' % ('the input\'s size' if same else
                                                                    '4x the LLC at least',
                                                                    ', host cores' if dev['id'] != br.ceiling_dev
                                                                    else ''))
                for v in VARIANTS:
                    try:
                        r = _run(b, dev, shape, dtype, v, 3 if v == 'fused' else 2)
                    except BenchError as e:
                        b.log('simpson %s %s %s: %s' % (dev['id'], v, shape, e))
                        continue
                    frac = None
                    if v == 'fused':
                        frac = (br.fraction(key, r['gbs'], '%s %s fused, GB/s of samples read' % (shape, dtype))
                                if br else b.static_fraction(r['gbs'], ceil, '%s %s %s fused GB/s'
                                                             % (dev['id'], shape, dtype)))
                    rows.append([dev['id'], v, dtype, shape, r['bytes'] / 1e9, r['total_ms'], r['compute_ms'],
                                 r['device_ms'], r['gbs'], br.ceiling(key) if br else ceil, frac])
                    if v == 'fused':
                        fused[(dev['id'], dtype)] = r['gbs']
                        fused_runs[(dev['id'], shape, dtype)] = r
                        b.point('simpson_large', 'simpson: GB/s of samples read, large inputs (fused)', dev['id'],
                                dtype, shape, 'shape', r['gbs'], 'GB/s', 'higher', headline=True, plot=False)
                        b.figure(workload='simpson', device=dev['id'], name='fused_fraction_of_ceiling_%s' % dtype,
                                 value=r['gbs'], unit='GB/s', ceiling=br.ceiling(key) if br else ceil,
                                 ceiling_kind=what, fraction=frac, target=target, fraction_target=target, size=shape,
                                 bytes=r['bytes'], in_cache=bool(same and same <= (b.ceilings(dev['id']).get(
                                     'llc_bytes') or 0)),
                                 met=isinstance(frac, float) and frac >= target)
    notes.append('fused / ceiling: GB/s of the samples read by the fused variant (bytes of the samples / compute '
                 'time) over the ceiling measured just before and just after that input\'s runs (the higher of the '
                 'two): on a CPU (PoCL too: the same cores) hc-ceilings\' read loop, vector loads on every core; '
                 'on a GPU its device-to-device copy (read + write). The read loop reads 4x the last-level cache at '
                 'least, unless the input is smaller than that: then it reads the input\'s size, and where that '
                 'fits the LLC both figures are in-cache bandwidth (see "Ceilings around the runs they bound"). '
                 '"ceiling too low": measured above the ceiling, so that ceiling is none and the run failed')
    b.table('simpson: %s inputs, GB/s of samples read against the device\'s ceiling'
            % ('128 MiB (quick)' if b.quick else '>= 1 GiB'),
            ['device', 'variant', 'dtype', 'shape', 'GB', 'total ms', 'compute ms', 'device ms', 'GB/s',
             'ceiling GB/s', 'fused / ceiling'], _rows(rows), notes=notes)

    # The fused kernel's work-groups on GPUs (default 20 per compute unit):
    # how many partial sums it takes to cover the memory latency.
    if not b.quick:
        rows = []
        for dev in devs:
            if dev.get('type') != 'gpu':
                continue
            cu = dev.get('compute_units') or 1
            for per_cu in (2, 5, 10, 20, 40, 80):
                shape, dtype = LARGE[1]
                try:
                    doc = b.hcrun(['--device=' + dev['id'], '--workload=simpson', 'func=gauss', BOX, 'n=' + shape,
                                   'dtype=' + dtype, 'groups=%d' % (cu * per_cu)], repeat=3)
                except BenchError as e:
                    b.log('simpson %s groups sweep: %s' % (dev['id'], e))
                    continue
                rows.append([dev['id'], dtype, shape, per_cu, cu * per_cu, 1e3 * doc['times']['device_s'],
                             metric(doc, 'bandwidth_gbs', 0.0)])
        if rows:
            b.table('simpson: fused work-groups per compute unit (GPUs)',
                    ['device', 'dtype', 'shape', 'groups / CU', 'groups', 'device ms', 'GB/s'], rows)

    # NVIDIA OpenCL against CUDA on the same GPU.
    by_name = {}
    for dev in devs:
        by_name.setdefault(dev['name'], []).append(dev)
    for name, group in by_name.items():
        cuda = [d for d in group if d['id'].startswith('cuda')]
        ocl = [d for d in group if d['id'].startswith('opencl')]
        for c in cuda:
            for o in ocl:
                for _, dtype in large:
                    if (c['id'], dtype) in fused and (o['id'], dtype) in fused:
                        ratio = fused[(o['id'], dtype)] / fused[(c['id'], dtype)]
                        b.figure(workload='simpson', device=o['id'], name='opencl_vs_cuda_fused_%s' % dtype,
                                 value=ratio, unit='', reference=c['id'], target=0.90, met=ratio >= 0.90)

    _scipy_peer(b, py, large, repeat)
    _cupy_peer(b, large, fused_runs)


def _scipy_peer(b, py, large, repeat):
    """3. SciPy on the CPU, same samples, beside the cpu backend."""
    name = 'SciPy simpson() axis by axis'
    cpu = [d for d in b.devices() if d['id'].startswith('cpu')]
    if not cpu:
        b.peer(name, 'skipped: no cpu device in this run')
        return
    if not py:
        b.peer(name, 'skipped: no Python with NumPy and SciPy (bench/run --python, or .venv)')
        return
    cases = [(s, 'float32', 5) for s, _ in PAPER_SIZES] + [(s, 'float64' if d == 'f64' else 'float32', 2)
                                                           for s, d in large]
    try:
        peer = _peer(py, SCIPY_CODE % {'cases': cases})
    except (BenchError, ValueError) as e:
        b.peer(name, 'failed: %s' % e)
        return
    b.peer(name, 'ran (%d cases, %s)' % (len(peer), py))
    rows = []
    for p in peer:
        dt = 'f64' if p['dtype'] == 'float64' else 'f32'
        try:
            ours = _run(b, cpu[0], p['shape'], dt, 'fused', repeat)
        except BenchError as e:
            b.log('simpson cpu %s: %s' % (p['shape'], e))
            ours = None
        rows.append([p['shape'], dt, 1e3 * p['seconds'], ours and ours['compute_ms'],
                     ours and p['seconds'] * 1e3 / ours['compute_ms'],
                     ours and abs(ours['integral'] - p['value']) / abs(p['value'])])
        n = dict((shape, count) for shape, count in PAPER_SIZES).get(p['shape'])
        if n and dt == 'f32':
            b.point('simpson_time', CHART_TITLE, cpu[0]['id'], 'SciPy simpson() axis by axis', n, 'N (samples)',
                    1e3 * p['seconds'], 'ms', 'lower', peer=True)
    b.table('simpson: SciPy simpson() axis by axis vs the cpu backend (fused), same samples',
            ['shape', 'dtype', 'SciPy ms', 'hc cpu ms', 'speed-up', 'relative difference'], _rows(rows),
            notes=['SciPy computes f32 input in f32; hc accumulates in f64, hence the f32 differences'])


def _cupy_peer(b, large, fused_runs):
    """4. CuPy's sum(weights * samples) on the large inputs, beside the cuda
    backend's fused variant measured in table 2."""
    name = 'CuPy sum(weights * samples)'
    cuda = b.peer_device(name, 'cuda', ['cupy'])
    if not cuda:
        return
    cases = [[shape, dtype] for shape, dtype in large if (cuda['id'], shape, dtype) in fused_runs]
    try:
        peer = b.peers_py({'what': 'simpson', 'xp': 'cupy', 'cases': cases, 'budget': 1.0})
    except BenchError as e:
        b.peer(name, 'failed: %s' % e)
        return
    b.peer(name, 'ran (%d cases)' % len(peer))
    rows = []
    for p in peer:
        ours = fused_runs[(cuda['id'], p['shape'], p['dtype'])]
        rows.append([p['shape'], p['dtype'], 1e3 * p['seconds'], p['gbs'], ours['device_ms'], ours['gbs'],
                     1e3 * p['seconds'] / ours['device_ms'],
                     abs(ours['integral'] - p['value']) / abs(ours['integral'])])
    b.table('simpson: CuPy sum(weights * samples) against the cuda backend (fused), large inputs',
            ['shape', 'dtype', 'CuPy ms', 'CuPy GB/s', '%s device ms' % cuda['id'], '%s GB/s' % cuda['id'],
             'cuda backend speed-up', 'relative difference'], rows,
            notes=['CuPy: one elementwise product with a materialised 3-D weight array, then cupy.sum (the product '
                   'is a temporary as large as the samples), timed with CUDA events; GB/s = bytes of the samples / '
                   'time, as in table 2; the weights are hc\'s (SciPy\'s rule for an even count of samples); '
                   'CuPy sums f32 in f32, hc in f64'])
