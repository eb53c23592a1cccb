"""Split runs (core/partition): the overhead of the partition layer and what
several devices give together.

Tables:
  1. cpu parts against one cpu device over the same cores: the cpu backend
     shown as 1-4 devices (HC_CPU_DEVICES=k, HC_CPU_THREADS = all cores, so
     the k devices share the same threads as the one, and each device's
     rows are in proportion to its threads), jacobi 3-D and
     simpson 3-D at sizes well beyond the caches, nbody with 2^14
     bodies (its parts all-gather the positions every step: collectives,
     not halo), and multigrid 3-D (V-cycles, every part updating its rows
     of the levels whose split pays, exchanging two rows a side). Time of the split run, its ratio to the one-device run
     (target >= 0.95: the layer's overhead <= 5 %), halo exchange time as a
     fraction of the slowest part's compute time, and the parts' idle time
     (waiting in exchanges).
  2. On a machine with a GPU: cuda:0 + cpu:0 against each alone (goal: >= 0.9
     of the sum of the single-device throughputs, never below the best
     single device), and cuda:0 + opencl:1 (the same GPU through two APIs)
     against cuda:0 (goal: within 5 %), with weights from the single-device
     throughputs measured in the same run (--split), and cuda:0 + cpu:0
     with --split=auto after one calibrating run (goal: >= 0.95 of the
     best single device); nbody there has 2^18 bodies; and cuda:0 + cpu:0
     with every cpu thread working (HC_SPLIT_DRIVER_CORES=0) against the
     default, which leaves a core to the thread that drives cuda:0.
     Skipped with a line where there is no CUDA device.
  3. Rows that move (hc_part_rebalance): jacobi (500 sweeps: a move must
     win back its cost within the run) and multigrid over 4 cpu parts
     planned with a share five times too large for the last part
     (--split=1,1,1,5), with HC_SPLIT_REBALANCE=auto (rows follow the
     parts' measured speed) and off (the planned rows), against equal
     shares: how much of the wrong plan's loss the moves win back.
  4. jacobi's sweeps between exchanges (sweeps_per_exchange = 2, 4, 8, 16:
     as many ghost rows a side, fewer and larger exchanges for more rows
     swept again): the pairs of table 2 at the same weights, and 4 cpu
     parts, each against the single device of table 2 (or one cpu device).
Figures: the cpu ratio per part count and workload; the GPU fractions.
The overlap of halo exchanges with computation has its own module
(overlap.py).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, compute_s, part_fractions  # noqa: E402


def _cases(quick, gpu=False):
    jn, sn = (129, 257) if quick else (385, 513)
    # nbody: 2^18 bodies where a GPU is in the set, a size one cpu device
    # steps in well under a second otherwise (its work grows as n^2).
    nn, steps = (1 << 18, 1 if quick else 2) if gpu else (1 << 13 if quick else 1 << 14, 3 if quick else 5)
    return [
        # default sweeps per pass: the parts choose as one device does
        ('jacobi', ['--workload=jacobi', 'dim=3', 'n=%d' % jn, 'dtype=f32', 'iters=%d' % (20 if quick else 100)]),
        ('simpson', ['--workload=simpson', 'func=sinprod', 'n=%dx%dx%d' % (sn, sn, sn), 'dtype=f64']),
        ('nbody', ['--workload=nbody', 'n=%d' % nn, 'steps=%d' % steps, 'dtype=f32']),
        # every part holds the whole hierarchy and updates its rows of it
        ('multigrid', ['--workload=multigrid', 'dim=3', 'n=%d' % (257 if gpu and not quick else 129 if not quick
                                                                  else 65), 'dtype=f32', 'tol=0',
                       'cycles=%d' % (3 if quick else 8)]),
    ]


def _halo(doc):
    """(halo fraction of the slowest part's compute time, idle s of the most idle part)."""
    f = part_fractions(doc)
    if not f:
        return None, None
    return f['halo'], max(p['idle_s'] for p in doc['split']['parts'])


def _cpu_parts(b, repeat):
    cores = os.cpu_count() or 1
    rows = []
    for name, args in _cases(b.quick):
        try:
            one = b.hcrun(['--device=cpu:0'] + args, repeat, env={'HC_CPU_DEVICES': '1', 'HC_CPU_THREADS': str(cores)})
        except BenchError as e:
            b.log('split: %s on one cpu device: %s' % (name, e))
            continue
        t1 = compute_s(one)
        rows.append([name, 1, t1 * 1e3, 1.0, None, None])
        for k in range(2, 5):
            if k > cores:
                break
            spec = ','.join('cpu:%d' % i for i in range(k))
            # shares as the devices' threads (the cpu backend gives the first
            # cores mod k one more; equal where k divides the cores): the
            # layer's overhead, not the planner's choice, and not a part
            # with fewer threads given as many rows
            shares = ','.join(str(cores // k + (1 if i < cores % k else 0)) for i in range(k))
            try:
                doc = b.hcrun(['--device=' + spec, '--split=' + shares] + args, repeat,
                              env={'HC_CPU_DEVICES': str(k), 'HC_CPU_THREADS': str(cores)})
            except BenchError as e:
                b.log('split: %s on %s: %s' % (name, spec, e))
                continue
            tk = compute_s(doc)
            halo, idle = _halo(doc)
            rows.append([name, k, tk * 1e3, t1 / tk, halo, idle and idle * 1e3])
            b.figure(workload=name, device=spec, name='split_over_one_cpu_%d' % k, value=t1 / tk, unit='',
                     target=0.95)
    b.table('split: cpu parts against one cpu device over the same %d cores (compute time, best of %d)' %
            (cores, repeat), ['workload', 'parts', 'ms', 'one device / split', 'halo / compute', 'idle, ms'], rows,
            notes=['parts are threads of one process; each cpu device has its share of the cores, its workers pinned '
                   'to them (HC_CPU_PIN) where the host has as many cores as threads, and rows in proportion to its '
                   'threads (--split=6,5,5 for 3 devices over 16 cores)',
                   'halo / compute: the slowest part\'s halo exchange time over its compute time',
                   'multigrid: the parts split the levels measured to be worth it after the warm-up cycle, the '
                   'coarser ones run whole on every part (docs/partition.md)'])


def _gpu(b, repeat):
    """Table 2; returns jacobi's single-device times (table 4's baselines)."""
    ids = [d['id'] for d in b.devices()]
    if 'cuda:0' not in ids:
        b.peer('cuda:0 + cpu:0 split', 'skipped: no CUDA device')
        return {}
    rows = []
    jacobi_singles = {}
    for name, args in _cases(b.quick, gpu=True):
        singles = {}
        if name == 'jacobi':
            jacobi_singles = singles
        for dev in ['cuda:0', 'cpu:0', 'opencl:1']:
            if dev not in ids:
                continue
            try:
                singles[dev] = compute_s(b.hcrun(['--device=' + dev] + args, repeat))
            except BenchError as e:
                b.log('split: %s on %s: %s' % (name, dev, e))
        for pair in [('cuda:0', 'cpu:0'), ('cuda:0', 'opencl:1')]:
            if not all(d in singles for d in pair):
                continue
            # Weights from the single-device throughputs of this run.
            w = ','.join('%.6g' % (1.0 / singles[d]) for d in pair)
            try:
                doc = b.hcrun(['--device=' + ','.join(pair), '--split=' + w] + args, repeat)
            except BenchError as e:
                b.log('split: %s on %s: %s' % (name, pair, e))
                continue
            t = compute_s(doc)
            best = min(singles[d] for d in pair)
            summed = 1.0 / sum(1.0 / singles[d] for d in pair)
            halo, _ = _halo(doc)
            rows.append([name, '+'.join(pair), t * 1e3, best * 1e3, summed / t, best / t, halo])
            b.figure(workload=name, device='+'.join(pair), name='split_of_sum', value=summed / t, unit='',
                     target=0.9 if pair[1] == 'cpu:0' else None)
            b.figure(workload=name, device='+'.join(pair), name='split_over_best', value=best / t, unit='',
                     target=1.0 if pair[1] == 'cpu:0' else 0.95)
            if pair[1] != 'cpu:0':
                continue
            # The same shares with every cpu thread working (by default
            # the cpu part leaves a core to the thread that drives cuda:0).
            try:
                doc = b.hcrun(['--device=' + ','.join(pair), '--split=' + w] + args, repeat,
                              env={'HC_SPLIT_DRIVER_CORES': '0'})
                t0 = compute_s(doc)
                rows.append([name, '+'.join(pair) + ', all cpu threads', t0 * 1e3, best * 1e3, summed / t0, best / t0,
                             'HC_SPLIT_DRIVER_CORES=0: %.3g x the default\'s time' % (t0 / t)])
                b.figure(workload=name, device='+'.join(pair), name='split_all_threads_over_default', value=t0 / t,
                         unit='')
            except BenchError as e:
                b.log('split: %s on %s with every cpu thread: %s' % (name, pair, e))
            # --split=auto: one run to calibrate (equal shares, recorded),
            # then the planned runs; the plan says whether a device was
            # left out.
            try:
                b.hcrun(['--device=' + ','.join(pair), '--split=auto'] + args, 1)
                doc = b.hcrun(['--device=' + ','.join(pair), '--split=auto'] + args, repeat)
            except BenchError as e:
                b.log('split: %s on %s with --split=auto: %s' % (name, pair, e))
                continue
            ta = compute_s(doc)
            alone = [n for n in doc.get('notes', []) if ' alone: ' in n]
            plan = (doc.get('split') or {}).get('plan') or (alone[0] if alone else '')
            rows.append([name, '+'.join(pair) + ' auto', ta * 1e3, best * 1e3, summed / ta, best / ta,
                         plan])
            b.figure(workload=name, device='+'.join(pair), name='split_auto_over_best', value=best / ta, unit='',
                     target=0.95)
    b.table('split: devices together against each alone (compute time, best of %d)' % repeat,
            ['workload', 'set', 'ms', 'best single, ms', 'of the sum', 'over the best', 'halo / compute'], rows,
            notes=['of the sum: the time the summed single-device throughputs would give, over the split time',
                   'weights: the single devices\' throughputs measured just before (--split); "auto" rows: '
                   '--split=auto after one calibrating run, with the plan (or the note) in the last column',
                   '"all cpu threads" rows: the same weights with HC_SPLIT_DRIVER_CORES=0 (by default the cpu part '
                   'runs on one thread fewer, leaving a core to the thread that drives cuda:0)'])
    return jacobi_singles


def _moving_rows(b, repeat):
    cores = os.cpu_count() or 1
    if cores < 4:
        b.peer('split: rows that move', 'skipped: fewer than 4 cores')
        return
    rows = []
    env = {'HC_CPU_DEVICES': '4', 'HC_CPU_THREADS': str(cores)}
    spec = '--device=cpu:0,cpu:1,cpu:2,cpu:3'
    for name, args in _cases(b.quick):
        if name not in ('jacobi', 'multigrid'):
            continue
        if name == 'jacobi':  # long enough for a move of its slabs to pay
            args = [a for a in args if not a.startswith('iters=')] + ['iters=%d' % (100 if b.quick else 500)]
        try:
            n = min(repeat, 3)
            equal = compute_s(b.hcrun([spec, '--split=equal'] + args, n, env=dict(env, HC_SPLIT_REBALANCE='off')))
            t = {}
            for mode in ('off', 'auto'):
                doc = b.hcrun([spec, '--split=1,1,1,5'] + args, n, env=dict(env, HC_SPLIT_REBALANCE=mode))
                t[mode] = compute_s(doc)
            moved = [n for n in doc.get('notes', []) if 'rows moved' in n]
            ends = [p['hi'] - p['lo'] for p in (doc.get('split') or {}).get('parts', [])]
        except BenchError as e:
            b.log('split: %s with rows that move: %s' % (name, e))
            continue
        won = (t['off'] - t['auto']) / (t['off'] - equal) if t['off'] > equal else None
        rows.append([name, equal * 1e3, t['off'] * 1e3, t['auto'] * 1e3, won,
                     '/'.join(str(r) for r in ends) + ('; ' + moved[0].split(': ')[1].split(' (')[0] if moved else
                                                      '; no move')])
        b.figure(workload=name, device='4 cpu parts', name='rebalance_over_equal', value=equal / t['auto'], unit='')
    b.table('split: rows that move, 4 cpu parts planned 1:1:1:5 (compute time, best of %d)' % min(repeat, 3),
            ['workload', 'equal shares, ms', '1:1:1:5 fixed, ms', '1:1:1:5 moving, ms', 'loss won back',
             'rows at the end; moves'], rows,
            notes=['fixed: HC_SPLIT_REBALANCE=off; moving: auto (every part on the cpu backend)',
                   'loss won back: (fixed - moving) / (fixed - equal shares)'])


DEPTHS = (2, 4, 8, 16)


def _exchange_depth(b, repeat, singles):
    """jacobi with more sweeps between exchanges, per set; singles: table
    2's jacobi times per device (the pairs' weights and baselines)."""
    args = dict(_cases(b.quick))['jacobi']
    cores = os.cpu_count() or 1
    sets = []
    if cores >= 4:
        sets.append(('4 cpu parts', '--device=cpu:0,cpu:1,cpu:2,cpu:3', '--split=equal', 'cpu:0',
                     {'HC_CPU_DEVICES': '4', 'HC_CPU_THREADS': str(cores)}, {'HC_CPU_THREADS': str(cores)}))
    for pair in [('cuda:0', 'cpu:0'), ('cuda:0', 'opencl:1')]:
        if all(d in singles for d in pair):
            w = ','.join('%.6g' % (1.0 / singles[d]) for d in pair)
            sets.append(('+'.join(pair), '--device=' + ','.join(pair), '--split=' + w, 'cuda:0', {}, {}))
    rows = []
    for label, spec, split, alone, env, alone_env in sets:
        try:
            one = singles.get(alone) or compute_s(b.hcrun(['--device=' + alone] + args, repeat, env=alone_env))
            times = [compute_s(b.hcrun([spec, split] + args + ['sweeps_per_exchange=%d' % k], repeat, env=env))
                     for k in DEPTHS]
        except BenchError as e:
            b.log('split: jacobi sweeps between exchanges on %s: %s' % (label, e))
            continue
        rows.append([label, alone, one * 1e3] + ['%.4g (%.3f)' % (t * 1e3, one / t) for t in times])
        for k, t in zip(DEPTHS, times):
            b.figure(workload='jacobi', device=label, name='split_over_single_exchange_every_%d' % k,
                     value=one / t, unit='')
    b.table('split: jacobi, sweeps between halo exchanges (compute time in ms, best of %d; in brackets the '
            'single device over the split)' % repeat,
            ['set', 'single device', 'single, ms'] + ['%d sweeps' % k for k in DEPTHS], rows,
            notes=['sweeps_per_exchange=k: k ghost rows a side, exchanged every k sweeps; each part sweeps k/2 '
                   'more rows a sweep on average at each side with a neighbour', 'jacobi: %s' % ' '.join(args[1:]),
                   'pairs: weights from the single devices\' throughputs measured just before; cpu parts: '
                   'equal shares, against one cpu device with every thread'])


def run(b):
    repeat = 3 if b.quick else 5
    _cpu_parts(b, repeat)
    _moving_rows(b, repeat)
    _exchange_depth(b, repeat, _gpu(b, repeat))
