#!/usr/bin/env python3
"""The Python package's cost of one small run and one small pipeline, timed
as hc-bench-api-overhead times the same work through the C API:

    python_overhead.py BUILD DEVICE RUNS

Prints one JSON line {run_s, pipeline_s}: seconds per ctx.run('reduce',
input=x, op='sum') with a 16-element NumPy array, and per
ctx.pipeline(PIPELINE).run(); best of five batches, after a warm-up."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'python'))
PIPELINE = 'simpson n=9x9x9 func=sinprod @%s | scale factor=2'  # as in bench/api_overhead.c


def best_per_call(fn, runs):
    for _ in range(50):
        fn()
    best = float('inf')
    for _ in range(5):
        n = runs // 5 + 1
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main():
    build, device, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import numpy as np
    import hc
    hc.load_library(os.path.join(build, 'lib', 'libhc.so.0'))
    with hc.Context() as ctx:
        x = np.ones(16)
        run_s = best_per_call(lambda: ctx.run('reduce', input=x, op='sum', device=device), runs)
        pipe_s = best_per_call(lambda: ctx.pipeline(PIPELINE % device).run(), runs // 4)
    print(json.dumps({'device': device, 'run_s': run_s, 'pipeline_s': pipe_s}))


if __name__ == '__main__':
    main()
