"""Several GPUs of one host: strong scaling of the split workloads over 1,
2, 4 and 8 GPUs, with the parts as threads of one process (`--device=
cuda:0,cuda:1,...`) and as MPI ranks (`mpirun -n P hcrun`, one GPU per
rank), side by side in one run. jacobi's halos between threads move GPU to
GPU (the backend's peer copy); the "in-process, staged" rows stage them
through host memory instead (HC_SPLIT_PEER=0), as the MPI ranks do.

Table: per workload and GPU count, the compute time, the speedup over one
GPU, the efficiency (speedup / P), and the slowest part's halo exchange
and collective time per step. jacobi 2-D 16384² f32 (the multi-GPU Jacobi
anchor of docs/scaling.md) and nbody 2^18 f32. Skipped with a line where
the machine has fewer than two CUDA devices.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from benchlib import BenchError, compute_s  # noqa: E402

MPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
           'OMPI_MCA_btl_vader_single_copy_mechanism': 'none'}


def _cases(quick):
    sweeps = 100 if quick else 500
    steps = 1 if quick else 2
    return [('jacobi', ['--workload=jacobi', 'dim=2', 'n=16384', 'iters=%d' % sweeps, 'tol=0', 'dtype=f32'], sweeps),
            ('nbody', ['--workload=nbody', 'n=262144', 'steps=%d' % steps, 'dtype=f32'], steps)]


def _run(b, gpus, transport, args, repeat):
    env = {'HC_SPLIT_PEER': '0'} if transport == 'in-process, staged' else None
    if gpus == 1:
        return b.hcrun(['--device=cuda:0'] + args, repeat, env={'HC_MPI': 'off'})
    if transport == 'MPI':
        cmd = [shutil.which('mpirun'), '-n', str(gpus), '--bind-to', 'none', b.hcrun_path, '--json',
               '--repeat=%d' % repeat, '--device=auto', '--split=equal'] + args
        return b.run_json(cmd, env=MPI_ENV)
    # equal shares of equal GPUs: the scaling, not the planner's choice
    return b.hcrun(['--device=' + ','.join('cuda:%d' % i for i in range(gpus)), '--split=equal'] + args, repeat,
                   env=env)


def run(b):
    found = [d for d in b.all_devices() if d['id'].startswith('cuda:')]
    cuda = [d['id'] for d in found]
    if len(cuda) < 2:
        b.peer('multigpu', 'skipped: %d CUDA device(s) here' % len(cuda))
        return
    has_mpi = shutil.which('mpirun') and os.path.exists(os.path.join(b.build, 'lib', 'libhc-mpi.so.0'))
    repeat = 3
    rows = []
    for name, args, steps in _cases(b.quick):
        try:
            t1 = compute_s(_run(b, 1, None, args, repeat))
        except BenchError as e:
            b.log('multigpu: %s on one GPU: %s' % (name, e))
            continue
        rows.append([name, 1, '-', t1 * 1e3, 1.0, 1.0, None, None])
        for gpus in (2, 4, 8):
            if gpus > len(cuda):
                break
            staged = ['in-process, staged'] if name == 'jacobi' else []
            for transport in ['in-process'] + staged + (['MPI'] if has_mpi else []):
                try:
                    doc = _run(b, gpus, transport, args, repeat)
                except BenchError as e:
                    b.log('multigpu: %s on %d GPUs (%s): %s' % (name, gpus, transport, e))
                    continue
                t = compute_s(doc)
                parts = doc['split']['parts']
                halo = max(p['halo_s'] for p in parts) / steps
                coll = max(p['collective_s'] for p in parts) / steps
                rows.append([name, gpus, transport, t * 1e3, t1 / t, t1 / t / gpus, halo * 1e6, coll * 1e6])
                kind = {'MPI': 'mpi', 'in-process': 'inproc', 'in-process, staged': 'inproc_staged'}[transport]
                b.figure(workload=name, device='cuda:0-%d' % (gpus - 1), name='strong_efficiency_%d_%s' % (
                    gpus, kind), value=t1 / t / gpus, unit='')
    names = sorted({d.get('name', '?') for d in found})
    b.table('multigpu: strong scaling over %d GPUs of one host, %s (compute time, best of %d)' %
            (len(cuda), ' and '.join(names), repeat),
            ['workload', 'GPUs', 'parts as', 'ms', 'speedup', 'efficiency', 'halo per step, us',
             'collectives per step, us'], rows,
            notes=['jacobi 2-D 16384² f32 (a step is a sweep), nbody 2^18 f32 (a step all-gathers the positions); '
                   'equal shares; MPI: one rank per GPU, --device=auto; in-process: halos GPU to GPU (peer copy), '
                   'staged: through page-locked host memory (HC_SPLIT_PEER=0)',
                   'halo and collectives: the slowest part\'s, including its waits for the others in the collectives'])
