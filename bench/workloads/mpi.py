"""hc under MPI (docs/mpi.md): ranks against threads on the same cores,
weak scaling over ranks, and the cost of MPI around one GPU.

Tables:
  1. Ranks against threads: `mpirun -n C hcrun --device=cpu:0` (C ranks of
     one cpu thread each, the split over MPI) against one process whose cpu
     backend has C threads, on the same C cores (goal: >= 0.9 of the
     one-process throughput): jacobi 3-D, nbody and multigrid 3-D (every
     rank holds the whole hierarchy and updates its rows of the levels
     thick enough; the coarse ones run whole on every rank).
  2. Weak scaling: 1, 2, 4, 8, 16 ranks (at most the cores), each rank with
     the same slab (jacobi: n = (R*m) x m x m) or the same share of the pair
     interactions (nbody: n = b * sqrt(R)); efficiency = the one-rank time
     over the R-rank time (the work per rank is the same).
  3. One rank driving cuda:0 (`mpirun -n 1`) against plain hcrun on cuda:0
     (goal: overhead <= 2 %), and the GPU rank's halo exchange per sweep
     (through host memory and MPI) beside a cpu rank, which
     docs/scaling.md models at 8 and 64 GPUs. Skipped without a CUDA
     device.
The launcher leaves every rank all the cores (--bind-to none). In table 1
each rank runs its share of threads (docs/mpi.md), placed by the system,
and again pinned to its own cores (HC_MPI_PIN=1); table 2 sets
HC_CPU_THREADS=1.
"""
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, compute_s, part_fractions  # noqa: E402

MPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
           'OMPI_MCA_btl_vader_single_copy_mechanism': 'none'}


def _mpirun(b, ranks, args, repeat, env=None):
    cmd = [shutil.which('mpirun'), '-n', str(ranks), '--bind-to', 'none']
    if ranks > (os.cpu_count() or 1):
        cmd.append('--oversubscribe')
    cmd += [b.hcrun_path, '--json', '--repeat=%d' % repeat] + list(args)
    return b.run_json(cmd, env=dict(MPI_ENV, **(env or {})))


def _halo(doc):
    """(halo and waits, collectives) over the slowest rank's compute time."""
    f = part_fractions(doc)
    return (f['halo'] + f['idle'], f['collective']) if f else (None, None)


def _cases(quick):
    return [
        ('jacobi', ['--workload=jacobi', 'dim=3', 'n=%d' % (129 if quick else 385), 'dtype=f32',
                    'iters=%d' % (20 if quick else 100)], True),
        ('nbody', ['--workload=nbody', 'n=%d' % (1 << 13 if quick else 1 << 14), 'steps=%d' % (3 if quick else 5),
                   'dtype=f32'], True),
        ('multigrid', ['--workload=multigrid', 'dim=3', 'n=%d' % (65 if quick else 129), 'dtype=f32', 'tol=0',
                       'cycles=%d' % (3 if quick else 8)], True),
    ]


def _ranks_vs_threads(b, repeat):
    cores = os.cpu_count() or 1
    rows = []
    for name, args, splits in _cases(b.quick):
        try:
            one = compute_s(b.hcrun(['--device=cpu:0'] + args, repeat, env={'HC_MPI': 'off', 'HC_CPU_THREADS': str(cores)}))
        except BenchError as e:
            b.log('mpi: %s as one process: %s' % (name, e))
            continue
        if not splits:
            rows.append([name, cores, one * 1e3, None, None, None, None, None])
            continue
        try:
            doc = _mpirun(b, cores, ['--device=cpu:0'] + args, repeat)
        except BenchError as e:
            b.log('mpi: %s on %d ranks: %s' % (name, cores, e))
            continue
        t = compute_s(doc)
        wait, coll = _halo(doc)
        try:
            pinned = compute_s(_mpirun(b, cores, ['--device=cpu:0'] + args, repeat, env={'HC_MPI_PIN': '1'}))
        except BenchError as e:
            b.log('mpi: %s on %d ranks, pinned: %s' % (name, cores, e))
            pinned = None
        rows.append([name, cores, one * 1e3, t * 1e3, one / t, pinned * 1e3 if pinned else None, wait, coll])
        b.figure(workload=name, device='cpu:0', name='mpi_ranks_over_threads_%d' % cores, value=one / t, unit='',
                 target=0.9)
    b.table('mpi: %d ranks x 1 thread against 1 process x %d threads, same cores (compute time, best of %d)' %
            (cores, cores, repeat),
            ['workload', 'cores', 'threads, ms', 'ranks, ms', 'threads / ranks', 'ranks pinned, ms',
             'halo+wait / compute', 'collectives / compute'], rows,
            notes=['ranks: mpirun --bind-to none, so the ranks share the cores: one thread each '
                   '(hc_mpi_share_cores), placed by the system; pinned: HC_MPI_PIN=1, each rank on a core of its '
                   'own; the one process\'s threads are not pinned','multigrid: V(2,2) cycles with tol=0 (the same cycle count on both sides)',
                   'halo+wait and collectives: the slowest rank\'s time in exchanges and collectives over its compute',
                   'jacobi with the default sweeps per pass on both sides (two over memory on grids beyond '
                   'the last-level cache; the ranks decide on the whole grid, as the one process does)'])


def _weak(b, repeat):
    cores = os.cpu_count() or 1
    counts = [r for r in (1, 2, 4, 8, 16) if r <= cores]
    m = 65 if b.quick else 129
    base = 1 << 12 if b.quick else 1 << 13
    rows = []
    for name in ('jacobi', 'nbody'):
        t1 = None
        for r in counts:
            if name == 'jacobi':
                # one sweep per pass at every R: the whole grid grows with R,
                # and past the cache it would switch to two
                args = ['--workload=jacobi', 'n=%dx%dx%d' % (r * m, m, m), 'dtype=f32', 'iters=50', 'sweeps_per_pass=1']
            else:
                args = ['--workload=nbody', 'n=%d' % int(base * math.sqrt(r)), 'steps=3', 'dtype=f32']
            try:
                doc = _mpirun(b, r, ['--device=cpu:0'] + args, repeat, env={'HC_CPU_THREADS': '1'})
            except BenchError as e:
                b.log('mpi: weak %s on %d ranks: %s' % (name, r, e))
                continue
            t = compute_s(doc)
            t1 = t1 or t
            rows.append([name, r, args[1], t * 1e3, t1 / t])
            b.figure(workload=name, device='cpu:0', name='mpi_weak_efficiency_%d' % r, value=t1 / t, unit='')
    b.table('mpi: weak scaling, one cpu thread per rank (compute time, best of %d)' % repeat,
            ['workload', 'ranks', 'size', 'ms', 'efficiency'], rows,
            notes=['efficiency: the one-rank time over the R-rank time (the work per rank is the same)',
                   'HC_CPU_THREADS=1 on every rank, which leaves the ranks unpinned (a user\'s thread count '
                   'is kept as it is)',
                   'jacobi: every rank owns m rows of m x m; nbody: n grows as sqrt(R), so n^2/R pair '
                   'interactions per rank stay the same'])


def _gpu(b, repeat):
    ids = [d['id'] for d in b.devices()]
    if 'cuda:0' not in ids:
        b.peer('mpi around cuda:0', 'skipped: no CUDA device')
        return
    rows = []
    cases = [('jacobi', ['--workload=jacobi', 'dim=3', 'n=513', 'iters=200', 'dtype=f32']),
             ('nbody', ['--workload=nbody', 'n=%d' % (1 << 18), 'steps=2', 'dtype=f32'])]
    for name, args in cases:
        try:
            plain = compute_s(b.hcrun(['--device=cuda:0'] + args, repeat, env={'HC_MPI': 'off'}))
            one = compute_s(_mpirun(b, 1, ['--device=cuda:0'] + args, repeat))
        except BenchError as e:
            b.log('mpi: %s on cuda:0: %s' % (name, e))
            continue
        rows.append([name, plain * 1e3, one * 1e3, one / plain - 1])
        b.figure(workload=name, device='cuda:0', name='mpi_one_rank_overhead', value=one / plain - 1, unit='',
                 target=None)
    b.table('mpi: one rank driving cuda:0 against plain hcrun (compute time, best of %d)' % repeat,
            ['workload', 'hcrun, ms', 'mpirun -n 1, ms', 'overhead'], rows,
            notes=['goal: overhead <= 2 %'])
    # The exchange a multi-GPU run pays per sweep, on the GPU's side: rank 0
    # on cuda:0, rank 1 on the cpu (its GPU hidden) with a sliver of the
    # rows, so that the GPU rank's halo time is its own staging (device to
    # host, host to device) and MPI's hand-over, its waits counted apart.
    halo_rows = []
    hide = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export CUDA_VISIBLE_DEVICES= HC_OPENCL_PLATFORM=Portable; fi; '
            'exec "$0" "$@"')
    for n in (4096, 16384):
        iters = 200
        args = ['--workload=jacobi', 'dim=2', 'n=%d' % n, 'iters=%d' % iters, 'dtype=f32', 'tol=0']
        try:
            single = b.hcrun(['--device=cuda:0'] + args, repeat, env={'HC_MPI': 'off'})
        except BenchError as e:
            b.log('mpi: jacobi 2-D n=%d on cuda:0: %s' % (n, e))
            continue
        sweep = compute_s(single) / iters
        for pinned in ('1', '0'):
            cmd = [shutil.which('mpirun'), '-n', '2', '--bind-to', 'none', 'sh', '-c', hide, b.hcrun_path,
                   '--json', '--repeat=%d' % repeat, '--split=0.998,0.002'] + args
            try:
                doc = b.run_json(cmd, env=dict(MPI_ENV, HC_HOST_PINNED=pinned))
            except BenchError as e:
                b.log('mpi: jacobi 2-D n=%d on cuda:0 + cpu ranks: %s' % (n, e))
                continue
            gpu = doc['split']['parts'][0]
            if not gpu['device'].startswith('cuda'):
                b.log('mpi: rank 0 ran on %s, not a GPU' % gpu['device'])
                continue
            halo = gpu['halo_s'] / iters
            kind = 'page-locked' if pinned == '1' else 'pageable'
            halo_rows.append([n, kind, sweep * 1e6, halo * 1e6, gpu['halo_bytes'] / iters, gpu['collectives'],
                              gpu['collective_s'] / max(gpu['collectives'], 1) * 1e6])
            b.figure(workload='jacobi', device='cuda:0', name='mpi_halo_staging_us_%d_%s' % (n, kind),
                     value=halo * 1e6, unit='us')
        b.figure(workload='jacobi', device='cuda:0', name='mpi_sweep_us_%d' % n, value=sweep * 1e6, unit='us')
    b.table('mpi: jacobi 2-D f32, the GPU rank\'s halo exchange per sweep (best of %d)' % repeat,
            ['n', 'staging memory', 'one-GPU sweep, us', 'halo staging per sweep, us', 'halo bytes per sweep',
             'collectives',
             'per collective, us'], rows=halo_rows,
            notes=['rank 0 on cuda:0, rank 1 on the cpu with 0.2 % of the rows; halo staging: the GPU rank\'s '
                   'device-to-host and host-to-device copies of its boundary row and MPI\'s '
                   'hand-over, without the waits for rank 1 (counted as idle)',
                   'per collective: includes the wait for the slower cpu rank',
                   'staging memory: hc_host_alloc\'s page-locked memory (the default) or, with HC_HOST_PINNED=0, '
                   'ordinary memory',
                   'the input of docs/scaling.md'])


def run(b):
    if not shutil.which('mpirun') or not os.path.exists(os.path.join(b.build, 'lib', 'libhc-mpi.so.0')):
        b.peer('mpi', 'skipped: no mpirun or hc built without MPI')
        return
    repeat = 3 if b.quick else 5
    _ranks_vs_threads(b, repeat)
    _weak(b, repeat)
    _gpu(b, repeat)
