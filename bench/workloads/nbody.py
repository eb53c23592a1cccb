"""nbody (seed 002): the paper's Table 2 on every device, large N against the
device's FP32 peak, and the cpu backend against a plain serial double loop.

Tables:
  1. the paper's layout: FPS (steps per second) and GFLOP/s (20 flops per
     interaction, N^2 interactions a step) at N = 2048, 4096, 8192, 16384;
     f32, explicit Euler (the paper's), Plummer-like sphere, B = (0,0,1).
  2. large N (2^18, 2^20; 2^15 stand-in in quick mode): interactions/s,
     GFLOP/s, and the work in the unit of the FP32 (FP64) ceiling: FMA-pipe
     issue slots per interaction as the device's field kernel issues them
     (SLOTS below), against hc-ceilings' FMA rate (GFLOP/s / 2 = lane slots
     per second) measured just before and after those runs, and against
     the device record's peak. Sizes whose step would take too long on a
     device (estimated from the previous size) are skipped with a note.
  3. the cpu backend against variant=serial-reference (a plain serial double
     loop over i and j, in C, one thread) in the same run.
  4. GPUs only (full run): the tile shape (wg, bpt) at N = 2^18.
  5. Peers (bench/peers.py): NumPy's broadcast all-pairs field at N = 1024,
     2048, 4096 beside the cpu backend; CuPy's at N = 2048 .. 16384 beside
     the cuda backend; interactions/s.
Chart: GFLOP/s against N per device (tables 1 and 2, 20 flops per
interaction), with the peers at the same count.
Figures: interactions/s at the largest N (target 2.0e12 for CUDA f32 at
N >= 2^18: the issue's H100 target), NVIDIA OpenCL / CUDA on the same GPU
(target 0.90), cpu backend / serial loop (target 10).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, metric  # noqa: E402

PAPER_N = [2048, 4096, 8192, 16384]
LARGE_N = [1 << 18, 1 << 20]
QUICK_LARGE_N = [1 << 15]
# The paper's Table 2 (NVIDIA Quadro FX 5600): N -> (OpenCL FPS, GFLOPS, CUDA FPS, GFLOPS).
PAPER_TABLE2 = {2048: (1147.7, 96.27, 1398, 117.27), 4096: (583.8, 195.89, 672.19, 225.55),
                8192: (148.3, 199.04, 172.44, 231.45), 16384: (37.3, 200.25, 43.39, 232.98)}
COMMON = ['init=plummer', 'integrator=euler', 'B=0,0,1', 'eps=0.01', 'dt=1e-4']
SWEEP = [(wg, bpt) for wg in (128, 256, 512) for bpt in (1, 2, 4)]
H100_TARGET_IPS = 2.0e12
CHART_TITLE = 'nbody: GFLOP/s against N (Euler; 20 flops per interaction)'

# Work per interaction in the unit of the FMA ceiling: vector instructions
# that occupy an FMA pipe's issue slot, per lane, as the field kernel's
# inner loop issues them (plugins/workloads/nbody). hc-ceilings measures
# FMA lanes per second (its GFLOP/s / 2), so slots x interactions/s can
# never exceed it. Counted: multiplies, FMAs/FNMAs, and the reciprocal-
# square-root estimate where the kernel uses one (vrsqrt14, MUFU.RSQ: one
# slot each). Not counted: subtracts and adds (AMD's Zen runs them on
# separate adder pipes beside the FMAs; on Intel they share the FMA ports,
# so there the count is low and the fraction an underestimate), integer
# ops of the bit-level first guess, and a divider's square root and
# divide (a unit of its own).
SLOTS = {
    # cpu backend, AVX-512 (host_avx512.c): d2 3 FMA; vrsqrt14 1; Newton
    # steps (f32 one, f64 two) of 3 each + the half-d2 multiply; q*inv and
    # inv*inv*q 3 multiplies; 3 accumulating FMAs.
    ('host', 'avx512f', 'f32'): (14, 'cpu backend, AVX-512: 3 FMA (|r|^2), vrsqrt14, 1 + 3 Newton (one step), '
                                     '3 multiplies, 3 FMA (accumulate)'),
    ('host', 'avx512f', 'f64'): (17, 'cpu backend, AVX-512: 3 FMA (|r|^2), vrsqrt14, 1 + 6 Newton (two steps), '
                                     '3 multiplies, 3 FMA (accumulate)'),
    # cpu backend elsewhere (host_kernels_tmpl.h, the x86-64-v3 clone or
    # the baseline build): the bit-level guess and Newton steps of 3 (f32
    # three steps, f64 four) + the half-x multiply; counted in the
    # x86-64-v3 clone's disassembly (the baseline issues a multiply and an
    # add per FMA: the same multiplies).
    ('host', None, 'f32'): (19, 'cpu backend, AVX2/SSE: 3 FMA (|r|^2), 1 + 9 Newton (three steps from the bit '
                                'guess), 3 multiplies, 3 FMA (accumulate)'),
    ('host', None, 'f64'): (22, 'cpu backend, AVX2/SSE: 3 FMA (|r|^2), 1 + 12 Newton (four steps from the bit '
                                'guess), 3 multiplies, 3 FMA (accumulate)'),
    # OpenCL on a CPU (kernels.hcl through PoCL's LLVM): native_rsqrt /
    # hc_rsqrt become a square root and a divide on the divider (not
    # counted); f64 adds its Newton step (4).
    ('opencl-cpu', None, 'f32'): (9, 'OpenCL on the CPU: 3 FMA (|r|^2), 3 multiplies, 3 FMA (accumulate); '
                                     'rsqrt as sqrt + divide on the divider, not counted'),
    ('opencl-cpu', None, 'f64'): (13, 'OpenCL on the CPU: 3 FMA (|r|^2), 4 Newton, 3 multiplies, 3 FMA '
                                      '(accumulate); rsqrt as sqrt + divide on the divider, not counted'),
    # GPUs (kernels.hcl): 12 FP32 instructions and one MUFU.RSQ per
    # interaction, each one issue slot of a warp; f64 adds one Newton step.
    ('gpu', None, 'f32'): (13, 'GPU: 12 FP32 instructions (3 subtracts included: a GPU\'s FMA lanes run them) '
                               'and one rsqrt'),
    ('gpu', None, 'f64'): (16, 'GPU: 12 FP64 instructions, one rsqrt, 3 of its Newton step'),
}


def slots(dev, dtype, isa):
    """(FMA-pipe slots per interaction, how they were counted) of the field
    kernel dev runs, isa: hc-ceilings' vector ISA of the host."""
    if 'host' in dev.get('languages', []):
        return SLOTS.get(('host', isa, dtype)) or SLOTS[('host', None, dtype)]
    if dev.get('type') == 'cpu':
        return SLOTS[('opencl-cpu', None, dtype)]
    return SLOTS[('gpu', None, dtype)]


class Sizer:
    """Chooses steps per run from the rate seen so far on a device, and skips
    sizes whose single step would exceed the limit."""

    def __init__(self, quick):
        self.budget = 0.5 if quick else 2.0     # seconds of stepping per run
        self.limit = 10.0 if quick else 120.0   # longest single step accepted
        self.rate = {}                          # (device, dtype) -> interactions/s

    def steps(self, dev, dtype, n):
        r = self.rate.get((dev, dtype))
        if not r:
            return 2, None
        per_step = float(n) * n / r
        if per_step > self.limit:
            return 0, per_step
        return max(1, min(1000, int(self.budget / per_step))), per_step

    def seen(self, dev, dtype, ips):
        if ips:
            self.rate[(dev, dtype)] = max(ips, self.rate.get((dev, dtype), 0))


def _run(b, dev, n, steps, repeat, dtype='f32', extra=()):
    doc = b.hcrun(['--device=' + dev['id'], '--workload=nbody', 'n=%d' % n, 'steps=%d' % steps,
                   'dtype=' + dtype] + COMMON + list(extra), repeat=repeat)
    return {'fps': metric(doc, 'steps_per_s'), 'gflops': metric(doc, 'gflops'),
            'ips': metric(doc, 'interactions_per_s'), 'peak_fraction': metric(doc, 'peak_fraction'),
            'compute_s': doc['times']['compute_s'], 'steps': steps}


def _measure(b, sizer, dev, n, dtype, repeat, notes, extra=()):
    steps, est = sizer.steps(dev['id'], dtype, n)
    if not steps:
        notes.append('%s %s N = %d skipped: about %.0f s a step estimated from smaller N' % (dev['id'], dtype, n, est))
        return None
    try:
        r = _run(b, dev, n, steps, repeat, dtype, extra)
    except BenchError as e:
        b.log('nbody %s N=%d %s: %s' % (dev['id'], n, dtype, e))
        notes.append('%s %s N = %d failed: %s' % (dev['id'], dtype, n, str(e)[:200]))
        return None
    sizer.seen(dev['id'], dtype, r['ips'])
    return r


def _record_peak(dev, dtype):
    """The device record's FP32/FP64 peak in GFLOP/s, or None."""
    return dev.get('peak_fp64_gflops' if dtype == 'f64' else 'peak_fp32_gflops') or None


def run(b):
    devs = b.devices()
    quick = b.quick
    repeat = 2 if quick else 3
    sizer = Sizer(quick)
    notes = ['flops counted as in the paper: 20 per interaction, N^2 interactions a step (self included)',
             'paper (Quadro FX 5600, 2010): CUDA 43.39 FPS / 232.98 GFLOPS at N = 16384, its estimated peak; '
             'OpenCL 87 % of that']

    # 1. The paper's table.
    paper_n = PAPER_N[:2] if quick else PAPER_N
    rows = []
    paper_runs = {}  # (device, N) -> f32 result, for the peers
    for dev in devs:
        res = [_measure(b, sizer, dev, n, 'f32', repeat, notes) for n in paper_n]
        for n, r in zip(paper_n, res):
            paper_runs[(dev['id'], n)] = r
            b.point('nbody_gflops', CHART_TITLE, dev['id'], 'f32', n, 'N (bodies)', r and r['gflops'], 'GFLOP/s',
                    'higher', headline=True)
        rows.append([dev['id'], 'FPS'] + [r and r['fps'] for r in res])
        rows.append([dev['id'], 'GFLOP/s'] + [r and r['gflops'] for r in res])
    rows.append(['paper: Quadro FX 5600 CUDA', 'FPS'] + [PAPER_TABLE2[n][2] for n in paper_n])
    rows.append(['paper: Quadro FX 5600 CUDA', 'GFLOP/s'] + [PAPER_TABLE2[n][3] for n in paper_n])
    rows.append(['paper: Quadro FX 5600 OpenCL', 'FPS'] + [PAPER_TABLE2[n][0] for n in paper_n])
    rows.append(['paper: Quadro FX 5600 OpenCL', 'GFLOP/s'] + [PAPER_TABLE2[n][1] for n in paper_n])
    b.table('nbody: the paper\'s Table 2 (f32, Euler; best of %d)' % repeat,
            ['device', 'figure'] + ['N = %d' % n for n in paper_n], rows, notes=list(notes))

    # 2. Large N against the FMA ceiling, in FMA-pipe slots: the ceiling is
    # measured just before and just after each device's runs.
    large = QUICK_LARGE_N if quick else LARGE_N
    notes2 = []
    rows = []
    best = {}  # (device, dtype, n) -> interactions/s
    counted = {}  # how the slots were counted, for the notes
    for dev in devs:
        top = None  # (N, interactions/s, fraction, ceiling, slots) of the largest f32 N
        for dtype in ('f32', 'f64'):
            if dtype == 'f64' and (quick or not dev.get('fp64', True)):
                continue
            key = 'fp64_gflops' if dtype == 'f64' else 'fp32_gflops'
            peak = _record_peak(dev, dtype)
            with b.bracket(dev['id'], [key], label='nbody large N, %s' % dtype) as br:
                k, how = slots(dev, dtype, br.doc('isa'))
                counted[how] = k
                for n in large:
                    r = _measure(b, sizer, dev, n, dtype, 2, notes2)
                    if not r:
                        continue
                    best[(dev['id'], dtype, n)] = r['ips']
                    b.point('nbody_gflops', CHART_TITLE, dev['id'], dtype, n, 'N (bodies)', r['gflops'], 'GFLOP/s',
                            'higher', headline=dtype == 'f32')
                    gslots = r['ips'] * k / 1e9
                    frac = br.fraction(key, gslots, '%s N = %d, %d slots/interaction' % (dtype, n, k), scale=0.5,
                                       unit='G slots/s')
                    rows.append([dev['id'], dtype, n, r['steps'], r['fps'], r['ips'], r['gflops'], k, gslots,
                                 peak and peak / 2,
                                 b.static_fraction(gslots, peak and peak / 2, '%s %s N = %d slots/s of the record\'s '
                                                   'peak' % (dev['id'], dtype, n)),
                                 br.ceiling(key, 0.5), frac])
                    if dtype == 'f32':
                        top = (n, r['ips'], frac, br.ceiling(key, 0.5), k)
        if top:
            n, ips, frac, ceiling, k = top
            fig = dict(workload='nbody', device=dev['id'], name='interactions_per_s_f32', value=ips, unit='1/s',
                       size=n, gflops=20 * ips / 1e9, slots_per_interaction=k, gslots=ips * k / 1e9,
                       ceiling=ceiling, ceiling_kind='FMA lane slots/s in G (hc-ceilings FP32 GFLOP/s / 2)',
                       fraction=frac)
            if dev['id'].startswith('cuda') and n >= (1 << 18):
                fig.update(target=H100_TARGET_IPS, met=ips >= H100_TARGET_IPS,
                           target_note='the issue\'s H100 target (f32, N >= 2^18)')
            b.figure(**fig)
    b.table('nbody: large N against the FMA ceiling, in FMA-pipe issue slots (Euler, Plummer sphere)',
            ['device', 'dtype', 'N', 'steps', 'FPS', 'interactions/s', 'GFLOP/s (20/interaction)',
             'slots / interaction', 'G slots/s', 'record peak G slots/s', 'fraction of record peak',
             'ceiling G slots/s (hc-ceilings)', 'fraction of ceiling'],
            rows, notes=notes2 + [
                'unit: FMA-pipe issue slots, the unit the ceiling is measured in. hc-ceilings runs independent FMA '
                'chains with the widest vectors on every core (GPU: every SM); its GFLOP/s counts 2 flops per FMA '
                'lane, so GFLOP/s / 2 is the FMA lane slots per second, and the record peak likewise. The work '
                'is interactions/s x the slots the device\'s field kernel issues per interaction: multiplies, '
                'FMAs and an rsqrt estimate (one slot); subtracts and adds are not counted (separate adder pipes '
                'on AMD Zen; on Intel they share the FMA ports, so there the fraction is an underestimate), nor '
                'integer ops or a divider\'s sqrt/divide. GFLOP/s keeps the paper\'s 20 flops per interaction '
                'and is not compared with any ceiling',
                'the ceiling is the higher of two hc-ceilings samples taken just before and just after the '
                'device\'s runs (see "Ceilings around the runs they bound" for both and their spread); '
                '"ceiling too low": the work measured above it, so it is no ceiling and the run failed'] +
            ['%d slots: %s' % (k, how) for how, k in counted.items()])

    # NVIDIA OpenCL against CUDA on the same GPU.
    by_name = {}
    for dev in devs:
        by_name.setdefault(dev['name'], []).append(dev)
    for group in by_name.values():
        for c in (d for d in group if d['id'].startswith('cuda')):
            for o in (d for d in group if d['id'].startswith('opencl')):
                for n in large:
                    if (c['id'], 'f32', n) in best and (o['id'], 'f32', n) in best:
                        ratio = best[(o['id'], 'f32', n)] / best[(c['id'], 'f32', n)]
                        b.figure(workload='nbody', device=o['id'], name='opencl_vs_cuda_f32_n%d' % n, value=ratio,
                                 unit='', reference=c['id'], target=0.90, met=ratio >= 0.90)

    # 3. The cpu backend against the plain serial double loop.
    rows = []
    for dev in (d for d in devs if 'host' in d.get('languages', [])):
        for n in ([4096] if quick else [4096, 8192]):
            try:
                ser = _run(b, dev, n, 1, repeat, 'f32', ['variant=serial-reference'])
                til = _run(b, dev, n, max(1, sizer.steps(dev['id'], 'f32', n)[0]), repeat, 'f32')
            except BenchError as e:
                b.log('nbody serial %s: %s' % (dev['id'], e))
                continue
            speedup = til['ips'] / ser['ips']
            rows.append([dev['id'], n, ser['ips'], til['ips'], speedup])
            b.figure(workload='nbody', device=dev['id'], name='cpu_vs_serial_loop_n%d' % n, value=speedup, unit='x',
                     reference='variant=serial-reference (plain double loop, one thread)', target=10.0,
                     met=speedup >= 10.0)
    b.table('nbody: the cpu backend against a plain serial double loop (f32, same run)',
            ['device', 'N', 'serial loop interactions/s', 'cpu backend interactions/s', 'speed-up'], rows,
            notes=['serial loop: for i, for j, 1/sqrtf, one thread (variant=serial-reference); cpu backend: '
                   'L1-tiled SoA blocks, 16 lanes, vrsqrt14 + Newton on AVX-512 (bit guess + Newton elsewhere), '
                   'all cores'])

    _peers(b, sizer, paper_runs, repeat)

    # 4. Tile shapes on GPUs.
    if quick:
        return
    rows = []
    notes4 = []
    for dev in (d for d in devs if d.get('type') == 'gpu'):
        n = 1 << 18
        for wg, bpt in SWEEP:
            # a work-group the kernel cannot take on this device is a note, not a row
            r = _measure(b, sizer, dev, n, 'f32', 2, notes4, ['wg=%d' % wg, 'bpt=%d' % bpt])
            if r:
                rows.append([dev['id'], wg, bpt, r['ips'], r['gflops']])
    if rows:
        b.table('nbody: tile shape at N = 2^18 (f32): work-group size (= bodies per tile) x bodies per item',
                ['device', 'wg', 'bpt', 'interactions/s', 'GFLOP/s'], rows, notes=notes4)


def _peer(b, sizer, paper_runs, repeat, name, prefix, xp, sizes, pairs_per_block):
    """One array-library peer beside the backend of its device kind: rows of
    interactions/s at each N, ours from table 1 where measured there."""
    dev = b.peer_device(name, prefix, [xp])
    if not dev:
        return
    try:
        peer = b.peers_py({'what': 'nbody', 'xp': xp, 'n': sizes, 'eps': 0.01, 'pairs_per_block': pairs_per_block,
                           'budget': 0.3 if b.quick else 1.0})
    except BenchError as e:
        b.peer(name, 'failed: %s' % e)
        return
    b.peer(name, 'ran (N = %s)' % ', '.join(str(p['n']) for p in peer))
    rows = []
    for p in peer:
        n = p['n']
        ours = paper_runs.get((dev['id'], n)) or _measure(b, sizer, dev, n, 'f32', repeat, [])
        ips = ours and ours['ips']
        rows.append([n, p['interactions_per_s'], ips, ips and ips / p['interactions_per_s']])
        b.point('nbody_gflops', CHART_TITLE, dev['id'], name + ' (peer)', n, 'N (bodies)',
                20 * p['interactions_per_s'] / 1e9, 'GFLOP/s', 'higher', peer=True)
    b.table('nbody: %s against the %s backend (f32, interactions/s)' % (name, prefix),
            ['N', '%s interactions/s' % xp, '%s interactions/s' % dev['id'], '%s backend / %s' % (prefix, xp)], rows,
            notes=['%s: E_i = sum_j q_j d / (|d|^2 + eps^2)^(3/2) by broadcasting x, y, z over row blocks of %d pairs '
                   '(bench/peers.py), the field only; ours: a whole Euler step (field, Lorentz push), N^2 '
                   'interactions counted for both' % (xp, pairs_per_block)])


def _peers(b, sizer, paper_runs, repeat):
    _peer(b, sizer, paper_runs, repeat, 'NumPy broadcast field', 'cpu', 'numpy', [1024, 2048, 4096], 1 << 18)
    # 2^24 pairs a block: 64 MiB temporaries, a handful alive at once, on any GPU
    _peer(b, sizer, paper_runs, repeat, 'CuPy broadcast field', 'cuda', 'cupy', [2048, 4096, 8192, 16384], 1 << 24)
