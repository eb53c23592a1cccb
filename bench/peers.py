"""Array-library peers of hc's workloads: the same computation written the
way a NumPy or CuPy user would, timed in the same benchmark run.

    python bench/peers.py '{"what": "jacobi", "xp": "numpy", "dim": 3, "n": [32, 64], "budget": 0.3}'

prints one JSON list, one entry per size. The bench modules run it with the
interpreter of bench/run --python (which has NumPy, and CuPy on a GPU
machine); any exception exits non-zero and becomes a note in the report.
One code path serves NumPy and CuPy; only the clock differs (see _seconds).

  jacobi   one Jacobi sweep by slicing, f stored: u' = (sum of the 2*dim
           neighbours + h^2 f) / (2*dim) on the interior, in place into the
           other array (no temporaries), f32 -> seconds per sweep, GLUP/s
  nbody    the all-pairs field E_i = sum_j q_j (r_i - r_j) / (|r_i - r_j|^2
           + eps^2)^(3/2) by broadcasting (coordinates as separate arrays), in
           row blocks that bound the temporaries -> seconds per evaluation, interactions/s (N^2, self
           included, as hc counts them)
  simpson  sum(weights * samples): the composite Simpson rule as one weighted
           reduction over a materialised 3-D weight array (made before timing)
           -> seconds, GB/s of samples read, the integral
"""
import json
import sys
import time


def _xp(name):
    if name == 'cupy':
        import cupy
        return cupy
    import numpy
    return numpy


def _seconds(xp, fn, reps):
    """Time of reps calls of fn. NumPy: wall clock around the calls. CuPy:
    CUDA events on the stream around the calls, read after the stop event
    completes (the calls only enqueue kernels)."""
    if xp.__name__ == 'cupy':
        start, stop = xp.cuda.Event(), xp.cuda.Event()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        return xp.cuda.get_elapsed_time(start, stop) / 1e3
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return time.perf_counter() - t0


def best_per_call(xp, fn, budget):
    """Best of 3 trials of seconds per call, each trial about budget/3 s.
    The first call is a warm-up (CuPy compiles its kernels there) and sizes
    the trials."""
    _seconds(xp, fn, 1)
    once = _seconds(xp, fn, 1)
    reps = max(1, int(budget / 3 / max(once, 1e-7)))
    return min(_seconds(xp, fn, reps) / reps for _ in range(3))


def jacobi(xp, spec):
    out = []
    dim = spec['dim']
    for n in spec['n']:
        u = xp.zeros((n,) * dim, dtype=xp.float32)
        v = xp.zeros_like(u)
        h = 1.0 / (n - 1)
        hf = xp.full((n - 2,) * dim, h * h, dtype=xp.float32)  # h^2 f, f = 1: the cost does not depend on f
        inner = (slice(1, -1),) * dim
        shifted = []
        for axis in range(dim):
            for s in (slice(0, -2), slice(2, None)):
                idx = list(inner)
                idx[axis] = s
                shifted.append(tuple(idx))
        state = [u, v]

        def sweep():
            a, b = state
            t = b[inner]
            xp.add(a[shifted[0]], a[shifted[1]], out=t)
            for s in shifted[2:]:
                t += a[s]
            t += hf
            t *= xp.float32(1.0 / (2 * dim))
            state.reverse()

        s = best_per_call(xp, sweep, spec.get('budget', 0.3))
        out.append({'n': n, 'dim': dim, 'sweep_s': s, 'glups': (n - 2) ** dim / s / 1e9})
        del u, v, hf, state
    return out


def nbody(xp, spec):
    import numpy as np
    out = []
    eps2 = spec.get('eps', 0.01) ** 2
    for n in spec['n']:
        rng = np.random.default_rng(1)
        x, y, z = (xp.asarray(c) for c in rng.uniform(-1, 1, (3, n)).astype(np.float32))
        q = xp.asarray(rng.choice([-1.0, 1.0], n).astype(np.float32))
        field = xp.empty((3, n), dtype=xp.float32)
        rows = max(1, min(n, spec.get('pairs_per_block', 1 << 18) // n))

        def evaluate():
            for i in range(0, n, rows):
                dx = x[i:i + rows, None] - x[None, :]                    # (rows, n) pairs
                dy = y[i:i + rows, None] - y[None, :]
                dz = z[i:i + rows, None] - z[None, :]
                r2 = dx * dx + dy * dy + dz * dz + xp.float32(eps2)
                w = q[None, :] / (r2 * xp.sqrt(r2))
                for k, d in enumerate((dx, dy, dz)):
                    field[k, i:i + rows] = (d * w).sum(axis=1)

        s = best_per_call(xp, evaluate, spec.get('budget', 0.3))
        out.append({'n': n, 'eval_s': s, 'interactions_per_s': float(n) * n / s, 'rows_per_block': rows})
        del x, y, z, q, field
    return out


def _simpson_weights(np, n, h):
    """1-D composite Simpson weights as hc and SciPy >= 1.11 use them: an even
    count of samples (an odd count of intervals) takes Simpson on the first
    n-1 and Cartwright's correction h/12 (5 y[n-1] + 8 y[n-2] - y[n-3]) on
    the last interval."""
    m = n if n % 2 else n - 1
    w = np.zeros(n)
    w[:m] = 2.0
    w[1:m:2] = 4.0
    w[0] = w[m - 1] = 1.0
    w *= h / 3.0
    if m < n:
        w[n - 1] += 5 * h / 12
        w[n - 2] += 8 * h / 12
        w[n - 3] -= h / 12
    return w


def simpson(xp, spec):
    import numpy as np
    out = []
    for shape, dtype in spec['cases']:
        n = [int(s) for s in shape.split('x')]
        ax = [xp.linspace(-2.0, 2.0, k) for k in n]
        g = [xp.exp(-a * a) for a in ax]
        w = [xp.asarray(_simpson_weights(np, k, 4.0 / (k - 1))) for k in n]
        dt = xp.float64 if dtype == 'f64' else xp.float32
        y = (g[0][:, None, None] * g[1][None, :, None] * g[2][None, None, :]).astype(dt)
        wt = (w[0][:, None, None] * w[1][None, :, None] * w[2][None, None, :]).astype(dt)
        result = []

        def integrate():
            result[:] = [xp.sum(wt * y)]

        s = best_per_call(xp, integrate, spec.get('budget', 1.0))
        out.append({'shape': shape, 'dtype': dtype, 'seconds': s, 'gbs': y.nbytes / s / 1e9,
                    'value': float(result[0])})
        del y, wt
    return out


def main():
    spec = json.loads(sys.argv[1])
    xp = _xp(spec.get('xp', 'numpy'))
    fn = {'jacobi': jacobi, 'nbody': nbody, 'simpson': simpson}[spec['what']]
    print(json.dumps(fn(xp, spec)))


if __name__ == '__main__':
    main()
