#!/usr/bin/env python3
"""Runs every hc test program and prints the totals.

Each program under BUILD/bin/tests is a CUnit program; the conformance
program runs once per backend in CONFORMANCE_BACKENDS. Every
tests/<group>/test_*.py is a pytest file, run with the checkout's .venv
(HC_BUILD names the build directory, HC_SANITIZED is set in sanitizer
builds). The last line is
'hc tests: N passed, N failed' and the exit status is non-zero when any
program failed (or crashed)."""
import argparse
import os
import re
import subprocess
import sys
import time

CONFORMANCE_BACKENDS = ['cpu', 'opencl', 'cuda', 'serial']


def run(cmd, env):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.decode(errors='replace')
    return p.returncode, out, time.time() - t0


def cunit_counts(out):
    m = re.search(r'^\s*tests\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)', out, re.M)
    if not m:
        return 0, 0
    run_, passed, failed = int(m.group(2)), int(m.group(3)), int(m.group(4))
    return passed, failed


def pytest_counts(out):
    tail = out.strip().splitlines()[-1:] or ['']
    passed = re.search(r'(\d+) passed', tail[0])
    failed = re.search(r'(\d+) (failed|error)', tail[0])
    return (int(passed.group(1)) if passed else 0), (int(failed.group(1)) if failed else 0)


def python_tests(top):
    found = []
    for group in sorted(os.listdir(os.path.join(top, 'tests'))):
        gdir = os.path.join(top, 'tests', group)
        if os.path.isdir(gdir):
            found += [os.path.join(gdir, f) for f in sorted(os.listdir(gdir))
                      if f.startswith('test_') and f.endswith('.py')]
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', required=True)
    ap.add_argument('--filter', default='')
    ap.add_argument('--valgrind', action='store_true', help='run each program under valgrind memcheck')
    ap.add_argument('--sanitized', action='store_true', help='the build is instrumented (ASan, TSan)')
    a = ap.parse_args()
    tdir = os.path.join(a.build, 'bin', 'tests')
    progs = sorted(p for p in os.listdir(tdir) if p.startswith('test_')) if os.path.isdir(tdir) else []
    env = dict(os.environ)
    env.setdefault('HC_CACHE_DIR', os.path.join(a.build, 'test-cache'))
    jobs = []
    for p in progs:
        path = os.path.join(tdir, p)
        if p == 'test_conformance':
            for b in CONFORMANCE_BACKENDS:
                jobs.append(('%s[%s]' % (p, b), [path, '--backend=' + b]))
        else:
            jobs.append((p, [path]))
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    python = os.path.join(top, '.venv', 'bin', 'python')
    if not os.path.exists(python):
        python = sys.executable
    has_pytest = subprocess.run([python, '-c', 'import pytest'], capture_output=True).returncode == 0
    if not has_pytest:
        print('skipped: the Python tests (%s cannot import pytest)' % python)
    elif not a.valgrind:
        for f in python_tests(top):
            jobs.append((os.path.basename(f), [python, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', f]))
    env['HC_BUILD'] = os.path.abspath(a.build)
    if a.sanitized:
        env['HC_SANITIZED'] = '1'
    if a.filter:
        jobs = [j for j in jobs if a.filter in j[0]]
    total_p = total_f = 0
    bad = []
    for name, cmd in jobs:
        if a.valgrind:
            cmd = ['valgrind', '--error-exitcode=99', '--leak-check=full', '--errors-for-leak-kinds=definite',
                   '--quiet', '--suppressions=' + os.path.join(os.path.dirname(__file__), 'valgrind.supp')] + cmd
        jenv = env
        if name.endswith('[serial]'):
            # the test backend lives outside the plugin directory
            jenv = dict(env, HC_PLUGIN_PATH=os.path.join(a.build, 'test-plugins'))
        rc, out, dt = run(cmd, jenv)
        p, f = pytest_counts(out) if name.endswith('.py') else cunit_counts(out)
        total_p += p
        total_f += f
        skipped = [l for l in out.splitlines() if l.startswith('skipped:')]
        status = 'ok' if rc == 0 else 'FAILED (exit %d)' % rc
        print('%-40s %-18s %4d passed %3d failed  %6.1fs' % (name, status, p, f, dt))
        for s in skipped:
            print('    ' + s)
        if rc != 0:
            bad.append(name)
            print('---- output of %s ----' % name)
            print(out[-20000:])
            print('---- end of %s ----' % name)
            if f == 0:
                total_f += 1  # a crash or a non-zero exit counts as a failure
    print('hc tests: %d passed, %d failed' % (total_p, total_f))
    if bad:
        print('failed programs: ' + ', '.join(bad))
    return 1 if bad or not jobs else 0


if __name__ == '__main__':
    sys.exit(main())
