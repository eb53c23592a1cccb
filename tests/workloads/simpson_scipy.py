#!/usr/bin/env python3
"""SciPy's answer for test_simpson: scipy.integrate.simpson applied axis by
axis (the last axis first) to each .npy file given.

usage: simpson_scipy.py FILE.npy HX[,HY[,HZ]] [FILE.npy H... ...]

Prints one line per file: the integral with 17 significant digits. Needs
SciPy >= 1.11, whose simpson() treats an odd number of intervals with
Cartwright's correction on the last one (older versions averaged two
rules); exits 3 with a message otherwise."""
import sys


def main(argv):
    try:
        import numpy as np
        import scipy
        from scipy.integrate import simpson
    except ImportError as e:
        print('simpson_scipy.py: %s (install: pip install "scipy>=1.11" numpy)' % e, file=sys.stderr)
        return 3
    major, minor = (int(p) for p in scipy.__version__.split('.')[:2])
    if (major, minor) < (1, 11):
        print('simpson_scipy.py: SciPy %s is older than 1.11 (its odd-interval rule differs)'
              % scipy.__version__, file=sys.stderr)
        return 3
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    for path, spacing in zip(argv[0::2], argv[1::2]):
        y = np.load(path).astype(np.float64)  # f32 samples too: SciPy in f64
        h = [float(v) for v in spacing.split(',')]
        if len(h) != y.ndim:
            print('simpson_scipy.py: %s is %d-D but %d spacings were given' % (path, y.ndim, len(h)),
                  file=sys.stderr)
            return 2
        for d in reversed(range(y.ndim)):
            y = simpson(y, dx=h[d], axis=-1)
        print(repr(float(y)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
