"""The halo exchange overlapping computation (core/partition's exchanges in
two halves, hc_part_halo_exchange_begin/end): jacobi 3-D over cuda:0 with
cuda:1, opencl:1 (the same GPU through OpenCL where that is opencl:1) or
cpu:0, those present, shares from the single devices' throughputs
measured in the same run, with HC_SPLIT_OVERLAP=off and with its default
(auto: GPU parts whose halo goes through host memory sweep the rows their
neighbours need first and the rest while the exchange runs; cpu parts and
peers, such as cuda:0 + cuda:1, do not). Per set: both compute times,
their ratio, cuda:0's exchange time (its halo and idle time in the
exchanges) over its compute time without the overlap, and the measured
overlap: the time the overlap saved over that exchange time (1: all of it
hidden). Skipped with a line where there is no CUDA device.
Figures: overlap_speedup (off over auto, target >= 1) and overlap_hidden.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, compute_s  # noqa: E402


def run(b):
    repeat = 3 if b.quick else 5
    ids = [d['id'] for d in b.devices()]
    if 'cuda:0' not in ids:
        b.peer('overlap: halo exchange with computation', 'skipped: no CUDA device')
        return
    n, iters = (257, 40) if b.quick else (513, 200)
    args = ['--workload=jacobi', 'dim=3', 'n=%d' % n, 'dtype=f32', 'iters=%d' % iters]
    rows = []
    for other in ['cuda:1', 'opencl:1', 'cpu:0']:
        if other not in ids:
            continue
        pair = ['cuda:0', other]
        try:
            w = ','.join('%.6g' % (1.0 / compute_s(b.hcrun(['--device=' + d] + args, 1))) for d in pair)
            runs = {mode: b.hcrun(['--device=' + ','.join(pair), '--split=' + w] + args, repeat,
                                  env={'HC_SPLIT_OVERLAP': mode}) for mode in ('off', 'auto')}
        except BenchError as e:
            b.log('overlap: %s: %s' % ('+'.join(pair), e))
            continue
        t_off, t_on = compute_s(runs['off']), compute_s(runs['auto'])
        first = runs['off']['split']['parts'][0]
        exchange = first['halo_s'] + first['idle_s']
        hidden = (t_off - t_on) / exchange if exchange > 0 else None
        rows.append(['+'.join(pair), w, t_off * 1e3, t_on * 1e3, t_off / t_on, exchange / t_off, hidden])
        b.figure(workload='jacobi', device='+'.join(pair), name='overlap_speedup', value=t_off / t_on, unit='',
                 target=1.0)
        if hidden is not None:
            b.figure(workload='jacobi', device='+'.join(pair), name='overlap_hidden', value=hidden, unit='')
    b.table('overlap: jacobi 3-D %d^3 f32, %d sweeps, the halo exchange overlapping the interior (compute time, best '
            'of %d)' % (n, iters, repeat),
            ['set', 'shares', 'off, ms', 'auto, ms', 'off / auto', 'exchange / compute (off)', 'hidden'], rows,
            notes=['off / auto: HC_SPLIT_OVERLAP=off over its default, auto (GPU parts with staged halos overlap; cpu '
                   'parts and peers do not); '
                   'exchange: cuda:0\'s halo and idle time in the exchanges without the overlap',
                   'hidden: (off - on) over that exchange time, the share of it the overlap saved'])
