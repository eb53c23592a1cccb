"""32 hcrun processes at once on one device, under memory pressure, sharing
one fresh kernel cache: each one succeeds or fails cleanly (exit 4,
HC_ERR_DEVICE_MEMORY with the sizes in its message), none hangs or dies by
a signal, and the cache is left consistent (no temporary files; a verified
run from it afterwards passes).

As a pytest test (tests/run.py runs it) it uses the cpu device, half of
the processes under an address-space limit too small for their grid. On a
GPU machine, run it with sizes that exhaust the GPU's memory together
(`bash tests/gpu/run_gpu.sh tests` does):

    python3 tests/reliability/test_concurrent_hcrun.py --device=cuda:0 --n=24000 --procs=32
"""
import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hcrun_path():
    return os.path.join(os.environ.get('HC_BUILD', os.path.join(TOP, 'build')), 'bin', 'hcrun')


def launch(device, n, cache, limit_bytes):
    def pressure():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    env = dict(os.environ, HC_CACHE_DIR=cache)
    env.pop('HC_CACHE', None)
    cmd = [hcrun_path(), '--device=' + device, '--workload=jacobi', 'dim=2', 'n=%d' % n, 'dtype=f64', 'iters=20',
           'check=10', '--json']
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=pressure)


def run_many(device, n, procs, limit_bytes, timeout):
    """Returns a list of problems (empty when every process behaved)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix='hc-concurrent-') as cache:
        ps = [launch(device, n, cache, limit_bytes if i % 2 else 0) for i in range(procs)]
        deadline = time.time() + timeout
        ok = failed_cleanly = 0
        for i, p in enumerate(ps):
            try:
                out, err = p.communicate(timeout=max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                problems.append('process %d hung (killed after %.0f s)' % (i, timeout))
                continue
            if p.returncode == 0:
                doc = json.loads(out)
                if doc.get('status') != 'ok':
                    problems.append('process %d: exit 0 with status %r' % (i, doc.get('status')))
                ok += 1
            elif p.returncode == 4:
                e = json.loads(out).get('error', {})
                msg = e.get('message', '')
                if e.get('status') != 'HC_ERR_DEVICE_MEMORY' or 'bytes' not in msg:
                    problems.append('process %d: exit 4 with %s: %s' % (i, e.get('status'), msg))
                failed_cleanly += 1
            else:
                problems.append('process %d: exit %d: %s' % (i, p.returncode, err.decode(errors='replace')[-300:]))
        leftovers = [f for f in glob.glob(os.path.join(cache, '**', '*'), recursive=True) if '.tmp' in f]
        if leftovers:
            problems.append('temporary files left in the kernel cache: %s' % leftovers[:3])
        # the cache the crowd wrote serves a verified run
        env = dict(os.environ, HC_CACHE_DIR=cache)
        v = subprocess.run([hcrun_path(), '--device=' + device, '--workload=jacobi', 'dim=2', 'n=65', 'dtype=f64',
                            'tol=1e-9', 'iters=100000', '--verify'], capture_output=True, env=env, timeout=timeout)
        if v.returncode != 0:
            problems.append('a verified run from the shared cache failed: %s' % v.stderr.decode(errors='replace'))
        print('%d processes: %d ok, %d out of device memory (clean), %d problems'
              % (procs, ok, failed_cleanly, len(problems)))
        if limit_bytes and not failed_cleanly:
            problems.append('no process ran out of memory: the limit made no pressure')
    return problems


def test_32_processes_under_memory_pressure():
    if os.environ.get('HC_SANITIZED'):
        # a sanitizer's runtime reserves its shadow memory at start: no
        # instrumented process starts under an address-space limit at all
        pytest.skip('address-space limits and sanitizer runtimes do not mix; the plain build runs this')
    # n=2049 f64: 32 MiB grids; 60 MiB of address space cannot hold a run
    problems = run_many('cpu', 2049, 32, 60 << 20, timeout=300)
    assert not problems, '\n'.join(problems)


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--n', type=int, default=2049, help='jacobi grid n x n (f64)')
    ap.add_argument('--procs', type=int, default=32)
    ap.add_argument('--limit-mib', type=int, default=0, help='address-space limit for every other process (0: none)')
    ap.add_argument('--timeout', type=float, default=600)
    a = ap.parse_args()
    probs = run_many(a.device, a.n, a.procs, a.limit_mib << 20, a.timeout)
    for p in probs:
        print(p)
    sys.exit(1 if probs else 0)
