"""The Python package under test is the checkout's python/hc over the build
tree that tests/run.py names (HC_BUILD)."""
import os
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('HC_BUILD', os.path.join(TOP, 'build'))
sys.path.insert(0, os.path.join(TOP, 'python'))



@pytest.fixture(scope='session')
def hc():
    if os.environ.get('HC_SANITIZED'):
        # An instrumented libhc needs its sanitizer runtime loaded first,
        # which a plain python3 does not do: the plain build runs these.
        pytest.skip('libhc is instrumented (sanitizer build): the plain build runs the Python tests')
    import hc as module
    module.load_library(os.path.join(BUILD, 'lib', 'libhc.so.0'))
    return module


@pytest.fixture(scope='session')
def ctx(hc):
    c = hc.Context()
    yield c
    c.close()


@pytest.fixture(scope='session')
def hcrun():
    return os.path.join(BUILD, 'bin', 'hcrun')
