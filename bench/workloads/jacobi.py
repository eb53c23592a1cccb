"""jacobi (seed 001): the paper's grids on every device and variant, and
large grids against the bandwidth roofline measured in the same run.

Tables:
  1. the paper's Tables 1-3 layout, 2-D (n = 128 .. 1024 points per axis)
     and 3-D (32 .. 256): ms per 1000 sweeps and GLUP/s for each device and
     method (naive / tiled with the paper's blocks 8x8, 16x16, 8x8x8, our
     default blocks, and the cpu backend on one thread as the paper's
     serial code); f32, f = sin computed in the kernel. The paper does not
     state its iteration count, so its seconds compare through ratios:
     tiled vs naive speed-up, next to ours.
  2. the roofline: 3-D 256^3 and 512^3 (quick: 256^3) in f32 with f
     computed (8 B/update) and stored (12 B/update), and f64; GLUP/s,
     GB/s and the fraction of the device's copy bandwidth (read + write)
     measured by hc-ceilings in the same run.
  3. GPUs: marching-tile shapes at 512^3 f32 (the block that reaches the
     roofline).
  4. Peers, beside the same sweep of ours (f stored, like theirs): NumPy's
     slicing sweep (bench/peers.py) against the cpu backend, 2-D and 3-D on
     the paper's grids; CuPy's against the cuda backend at 256^3 and 512^3.
Charts: GLUP/s against the grid, 2-D and 3-D, per device and method, with
the peers.
Figures: 3-D 512^3 f32 / roofline per device (targets: GPU >= 0.80, the
cpu backend >= 0.70), and NVIDIA OpenCL against CUDA on the same GPU
(target >= 0.90 of CUDA's GLUP/s).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, metric  # noqa: E402

PAPER_2D = [128, 256, 512, 1024]
PAPER_3D = [32, 64, 128, 256]
# The paper's seconds (GTX 550 Ti, desktop), for the speed-up ratios.
PAPER_RATIO = {
    ('2d', '8x8'): {128: 0.30 / 0.18, 256: 1.21 / 0.79, 512: 4.85 / 3.12, 1024: 21.69 / 12.95},
    ('2d', '16x16'): {128: 0.37 / 0.08, 256: 1.48 / 0.33, 512: 6.04 / 1.28, 1024: 27.88 / 5.49},
    ('3d', '8x8x8'): {32: 0.28 / 0.03, 64: 2.87 / 0.25, 128: 27.8 / 2.14, 256: 296.87 / 20.59},
}
CHART_TITLE = 'jacobi %d-D: GLUP/s against the grid (f32; f = sin computed unless "f stored")'
MARCH_BLOCKS = ['8x32', '4x32', '16x32', '4x64', '8x64', '2x128', '4x128', '1x256']


def _is_host(dev):
    return 'host' in dev.get('languages', [])


def _sweeps(dev, interior, quick):
    """Sweeps for a run of a fraction of a second: ~2e10 point updates on a
    GPU, 1e9 on the cpu backend, 1e8 on other devices (OpenCL on a CPU);
    a tenth in quick mode; 5 .. 20000 sweeps."""
    work = 2e10 if dev.get('type') == 'gpu' else 1e9 if _is_host(dev) else 1e8
    if quick:
        work /= 10
    return int(max(5, min(20000 if not quick else 2000, work / interior)))


def _interior(n, dim):
    return (n - 2) ** dim


def _run(b, dev, n, dim, variant, block=None, dtype='f32', f_mode='computed', repeat=3, serial=False, spp=None):
    args = ['--device=' + dev['id'], '--workload=jacobi', 'n=%d' % n, 'dim=%d' % dim, 'variant=' + variant,
            'dtype=' + dtype, 'f_mode=' + f_mode, 'iters=%d' % _sweeps(dev, _interior(n, dim), b.quick)]
    if block:
        args.append('block=' + block)
    if spp:
        args.append('sweeps_per_pass=%d' % spp)
    old = os.environ.get('HC_CPU_THREADS')
    if serial:
        os.environ['HC_CPU_THREADS'] = '1'
    try:
        doc = b.hcrun(args, repeat=repeat)
    finally:
        if serial:
            if old is None:
                del os.environ['HC_CPU_THREADS']
            else:
                os.environ['HC_CPU_THREADS'] = old
    sweeps = metric(doc, 'sweeps', 0)
    t = doc['times']['device_s'] or doc['times']['compute_s']
    # A kernel that sweeps k times per pass over memory (temporal blocking)
    # moves the grid's bytes once for k sweeps: its traffic, not GLUP/s x
    # B/update, is what the copy bandwidth bounds.
    k = int(metric(doc, 'sweeps_per_pass', 1) or 1)
    return {'glups': metric(doc, 'glups', 0.0), 'gbs': metric(doc, 'bandwidth_gbs', 0.0) / k,
            'bpu': metric(doc, 'bytes_per_update', 0.0) / k, 'spp': k,
            'ms_per_1000': 1e6 * t / sweeps if sweeps else None, 'notes': doc.get('notes', [])}


def _methods(dev, dim):
    """(label, variant, block, serial) rows of the paper's tables."""
    if _is_host(dev):
        rows = [('naive (slabs)', 'naive', None, False), ('tiled (cache blocks)', 'tiled', None, False)]
        if dev['id'].startswith('cpu'):
            rows.append(('serial (1 thread)', 'tiled', None, True))
        return rows
    if dim == 2:
        return [('naive 8x8', 'naive', '8x8', False), ('tiled 8x8', 'tiled', '8x8', False),
                ('naive 16x16', 'naive', '16x16', False), ('tiled 16x16', 'tiled', '16x16', False),
                ('naive 8x32', 'naive', '8x32', False), ('tiled 8x32 (default)', 'tiled', None, False)]
    return [('naive 8x8x8', 'naive', '8x8x8', False), ('tiled 8x8x8', 'tiled', '8x8x8', False),
            ('tiled, marching (default block)', 'tiled', None, False)]


def _ceiling(b, dev, notes):
    c = b.ceilings(dev['id'])
    if c.get('copy_gbs'):
        return c['copy_gbs'], 'copy (hc-ceilings)'
    if dev.get('peak_bandwidth_gbs'):
        notes.append('%s: roofline = the device record\'s peak bandwidth, not measured (hc-ceilings not built)'
                     % dev['id'])
        return dev['peak_bandwidth_gbs'], 'peak (device record)'
    notes.append('%s: no roofline known (hc-ceilings not built, no peak in the device record)' % dev['id'])
    return None, 'none'


def _paper_tables(b, devs, repeat):
    for dim, grids in ((2, PAPER_2D), (3, PAPER_3D)):
        if b.quick:
            grids = grids[:3]
        key = '%dd' % dim
        rows = []
        for dev in devs:
            results = {}
            for label, variant, block, serial in _methods(dev, dim):
                res = []
                for n in grids:
                    try:
                        res.append(_run(b, dev, n, dim, variant, block, repeat=repeat, serial=serial))
                    except BenchError as e:
                        b.log('jacobi %s %s n=%d: %s' % (dev['id'], label, n, e))
                        res.append(None)
                results[(variant, block)] = res
                for n, r in zip(grids, res):
                    b.point('jacobi_%dd' % dim, CHART_TITLE % dim, dev['id'], label, n, 'n', r and r['glups'],
                            'GLUP/s', 'higher', headline=variant == 'tiled' and not block and not serial)
                rows.append([dev['id'], label, 'ms / 1000 sweeps'] + [r and r['ms_per_1000'] for r in res])
                rows.append([dev['id'], label, 'GLUP/s'] + [r and r['glups'] for r in res])
            # tiled vs naive with the paper's blocks, next to the paper's ratio
            for (k, blk), paper in PAPER_RATIO.items():
                if k != key or _is_host(dev):
                    continue
                nv, tl = results.get(('naive', blk)), results.get(('tiled', blk))
                if nv and tl:
                    rows.append([dev['id'], 'tiled / naive speed-up %s' % blk, 'ours'] +
                                [(a and c and a['ms_per_1000'] / c['ms_per_1000']) for a, c in zip(nv, tl)])
                    rows.append([dev['id'], 'tiled / naive speed-up %s' % blk, 'paper (GTX 550 Ti)'] +
                                [paper.get(n) for n in grids])
        b.table('jacobi %d-D: the paper\'s grids (f32, f = sin computed; best of %d)' % (dim, repeat),
                ['device', 'method', 'quantity'] + ['%d^%d' % (n, dim) for n in grids], rows,
                notes=['n counts the points per axis including the boundary; a sweep updates (n-2)^%d points' % dim,
                       'the paper gives seconds for an unstated number of sweeps, so only its ratios compare'])


def _roofline_sizes(b, dev):
    """Grids that stream from memory: 256^3 f32 is 134 MB in two arrays."""
    if not b.quick:
        return [256, 512]
    return [256] if dev.get('type') == 'gpu' or _is_host(dev) else [128]


def _roofline(b, devs, notes):
    cases = [('f32', 'computed'), ('f32', 'stored'), ('f64', 'computed')]
    rows = []
    best = {}
    last = {}
    for dev in devs:
        sizes = _roofline_sizes(b, dev)
        last[dev['id']] = sizes[-1]
        ceil, what = _ceiling(b, dev, notes)
        # (label, variant, sweeps_per_pass): on host devices the tiled
        # kernel's default sweeps twice per pass over memory on these grids,
        # and its one-sweep kernel runs beside it
        variants = [('tiled', 'tiled', None), ('naive', 'naive', None)]
        if _is_host(dev):
            variants.insert(1, ('tiled, 1 sweep per pass', 'tiled', 1))
        for n in sizes:
            for dtype, fm in cases:
                if dtype == 'f64' and not dev.get('fp64', True):
                    continue
                single = None
                for label, variant, spp in variants:
                    try:
                        r = _run(b, dev, n, 3, variant, None, dtype, fm, repeat=2 if b.quick else 3, spp=spp)
                    except BenchError as e:
                        b.log('jacobi %s %d^3 %s %s: %s' % (dev['id'], n, dtype, label, e))
                        continue
                    frac = r['gbs'] / ceil if ceil else None
                    rows.append([dev['id'], label, '%d^3' % n, dtype, fm, r['spp'], r['bpu'], r['glups'], r['gbs'],
                                 ceil, frac])
                    if spp == 1:
                        single = frac
                    if label == 'tiled' and dtype == 'f32' and fm == 'computed':
                        best[(dev['id'], n)] = r['glups']
                        main = (n, frac, r)
                if dtype == 'f32' and fm == 'computed' and n == sizes[-1] and (dev['id'], n) in best:
                    _, frac, r = main
                    target = 0.80 if dev.get('type') == 'gpu' else (0.70 if _is_host(dev) else None)
                    b.figure(workload='jacobi', device=dev['id'], name='roofline_fraction_3d_%d_f32' % n,
                             value=r['glups'], unit='GLUP/s', bandwidth_gbs=r['gbs'], ceiling=ceil,
                             ceiling_kind=what, fraction=frac, single_sweep_fraction=single, target=target,
                             fraction_target=target,
                             met=(frac is not None and target is not None and frac >= target))
        if _is_host(dev):
            notes.append('%s: the tiled host kernel sweeps twice per pass over memory (temporal blocking, '
                         'sweeps_per_pass=2) where the two arrays outgrow the L3: it moves half the bytes per '
                         'update (B/update and GB/s count what it moves), so its GLUP/s can pass the copy '
                         'bandwidth over the one-sweep bytes; "tiled, 1 sweep per pass" is the one-sweep kernel on '
                         'the same grid' % dev['id'])
    b.table('jacobi: 3-D roofline (bytes moved per update x GLUP/s against the copy bandwidth of this run)',
            ['device', 'variant', 'grid', 'dtype', 'f', 'sweeps per pass', 'B/update', 'GLUP/s', 'GB/s',
             'roofline GB/s', 'fraction'], rows, notes=notes)
    return best, last


def _march_blocks(b, devs):
    rows = []
    for dev in devs:
        if dev.get('type') != 'gpu':
            continue
        for blk in MARCH_BLOCKS:
            try:
                r = _run(b, dev, 512, 3, 'tiled', blk, repeat=3)
            except BenchError as e:
                b.log('jacobi %s block %s: %s' % (dev['id'], blk, e))
                continue
            rows.append([dev['id'], blk, r['glups'], r['gbs'], '; '.join(r['notes'])])
    if rows:
        b.table('jacobi: marching tiles at 512^3 f32 (GPUs)', ['device', 'block', 'GLUP/s', 'GB/s', 'notes'], rows)


def _peer_rows(b, dev, dim, peer, label):
    """Rows of ours (tiled, f stored: the peer's traffic) beside a peer's
    sweeps, and their chart points."""
    rows = []
    for p in peer:
        n = p['n']
        try:
            ours = _run(b, dev, n, dim, 'tiled', f_mode='stored', repeat=2 if b.quick else 3)['glups']
        except BenchError as e:
            b.log('jacobi %s %d^%d stored: %s' % (dev['id'], n, dim, e))
            ours = None
        rows.append(['%d^%d' % (n, dim), p['glups'], ours, ours and ours / p['glups']])
        chart, title = 'jacobi_%dd' % dim, CHART_TITLE % dim
        b.point(chart, title, dev['id'], 'tiled, f stored', n, 'n', ours, 'GLUP/s', 'higher')
        b.point(chart, title, dev['id'], label + ' (peer)', n, 'n', p['glups'], 'GLUP/s', 'higher', peer=True)
    return rows


def _numpy_peer(b):
    """NumPy's slicing sweep beside the cpu backend, on the paper's grids."""
    name = 'NumPy slicing Jacobi sweep'
    cpu = b.peer_device(name, 'cpu', ['numpy'])
    if not cpu:
        return
    rows = []
    try:
        for dim, grids in ((2, PAPER_2D), (3, PAPER_3D)):
            grids = grids[:3] if b.quick else grids
            peer = b.peers_py({'what': 'jacobi', 'xp': 'numpy', 'dim': dim, 'n': grids,
                               'budget': 0.3 if b.quick else 1.0})
            rows += _peer_rows(b, cpu, dim, peer, 'NumPy slicing, f stored')
    except BenchError as e:
        b.peer(name, 'failed: %s' % e)
    if rows:
        b.peer(name, 'ran (%d grids)' % len(rows))
        b.table('jacobi: NumPy slicing sweep against the cpu backend (f32, f stored, GLUP/s)',
                ['grid', 'NumPy GLUP/s', '%s GLUP/s (tiled)' % cpu['id'], 'cpu backend / NumPy'], rows,
                notes=['NumPy: u\'[inner] = (sum of the 2*dim shifted slices + h^2 f) / (2*dim), in place into the '
                       'other array (bench/peers.py), one thread; the cpu backend: variant=tiled f_mode=stored, '
                       'the same 12 bytes per update'])


def _cupy_peer(b):
    """CuPy's slicing sweep beside the cuda backend, 3-D f32."""
    name = 'CuPy slicing Jacobi sweep'
    cuda = b.peer_device(name, 'cuda', ['cupy'])
    if not cuda:
        return
    try:
        peer = b.peers_py({'what': 'jacobi', 'xp': 'cupy', 'dim': 3, 'n': [256, 512], 'budget': 1.0})
        rows = _peer_rows(b, cuda, 3, peer, 'CuPy slicing, f stored')
    except BenchError as e:
        b.peer(name, 'failed: %s' % e)
        return
    b.peer(name, 'ran (%d grids)' % len(rows))
    b.table('jacobi: CuPy slicing sweep against the cuda backend (3-D f32, f stored, GLUP/s)',
            ['grid', 'CuPy GLUP/s', '%s GLUP/s (tiled)' % cuda['id'], 'cuda backend / CuPy'], rows,
            notes=['CuPy: the NumPy code on cupy arrays (5 elementwise kernels a sweep), timed with CUDA events; '
                   'the cuda backend: variant=tiled f_mode=stored'])


def run(b):
    devs = b.devices()
    notes = []
    _paper_tables(b, devs, 1 if b.quick else 3)
    best, last = _roofline(b, devs, notes)
    if not b.quick:
        _march_blocks(b, devs)
    _numpy_peer(b)
    _cupy_peer(b)
    # NVIDIA OpenCL against CUDA on the same GPU.
    by_name = {}
    for dev in devs:
        by_name.setdefault(dev['name'], []).append(dev)
    for group in by_name.values():
        for c in [d for d in group if d['id'].startswith('cuda')]:
            for o in [d for d in group if d['id'].startswith('opencl')]:
                n = last.get(c['id'])
                if (c['id'], n) in best and (o['id'], n) in best:
                    ratio = best[(o['id'], n)] / best[(c['id'], n)]
                    b.figure(workload='jacobi', device=o['id'], name='opencl_vs_cuda_3d_%d_f32' % n, value=ratio,
                             unit='', reference=c['id'], target=0.90, met=ratio >= 0.90)
