"""Kernel builds stay out of the timed region.

PoCL finishes a kernel's build when it first runs (a work-group function
per group size, compiled at the command's start). With cold caches that
used to land inside the workload's compute time: simpson reported 0.23 s
of compute against 4 ms of device time. hc now times the first launch of
each kernel per range and group on its own and reports the build on a line
of its own ("build", and times.build_s / first_launch_build_s in --json).
"""
import json
import os
import subprocess
import tempfile

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HCRUN = os.path.join(os.environ.get('HC_BUILD', os.path.join(TOP, 'build')), 'bin', 'hcrun')


def has_opencl():
    try:
        out = subprocess.run([HCRUN, '--list'], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return 'opencl:0' in out


pytestmark = pytest.mark.skipif(not has_opencl(), reason='no OpenCL device')


def cold_run(args, text=False):
    """Runs hcrun with empty kernel caches (hc's and PoCL's)."""
    with tempfile.TemporaryDirectory(prefix='hc-build-time-') as d:
        env = dict(os.environ, HC_CACHE_DIR=os.path.join(d, 'hc'), POCL_CACHE_DIR=os.path.join(d, 'pocl'),
                   XDG_CACHE_HOME=os.path.join(d, 'xdg'))
        env.pop('HC_CACHE', None)
        cmd = [HCRUN] + args + ([] if text else ['--json'])
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout if text else json.loads(p.stdout)


# The device's own time bounds what the timed region may add on top:
# launches, the host's share, a slow shared machine. A build inside the
# region is 0.1-0.3 s on PoCL.
# A CPU device (PoCL) builds at the first launches; a GPU's OpenCL driver
# at the program build (run_gpu.sh makes NVIDIA's platform opencl:0).
def assert_build_outside(doc):
    times = doc['times']
    assert times['build_s'] > 0, times
    if doc['device']['type'] == 'cpu':
        assert times['first_launch_build_s'] > 0, times
    assert times['first_launch_build_s'] <= times['build_s'], times
    assert times['compute_s'] <= 10 * times['device_s'] + 0.05, times


@pytest.mark.parametrize('args', [
    ['--workload=simpson'],
    ['--workload=jacobi', 'n=257', 'iters=200'],
])
def test_cold_build_is_not_compute(args):
    assert_build_outside(cold_run(['--device=opencl:0'] + args))


def test_build_line_in_report():
    out = cold_run(['--device=opencl:0', '--workload=simpson'], text=True)
    line = [l for l in out.splitlines() if l.startswith('build ')]
    assert line and 'not in the time above' in line[0], out


def test_split_run_reports_the_parts_build():
    # equal shares: both parts run (the planner may leave a device out)
    doc = cold_run(['--device=cpu:0,opencl:0', '--split=equal', '--workload=jacobi', 'n=257', 'iters=100'])
    assert doc['times']['build_s'] > 0, doc['times']


def test_host_kernels_build_nothing():
    doc = cold_run(['--device=cpu:0', '--workload=simpson'])
    assert doc['times']['build_s'] == 0, doc['times']
    assert doc['times']['first_launch_build_s'] == 0, doc['times']
