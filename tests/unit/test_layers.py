"""The layers of core/ as the linker sees them: libhc-grid imports only
libhc's public API, the pipeline engine's and the partition layer's objects
import only the public API and what core/runtime/layer.h declares, and the runtime imports from neither
layer above it."""
import glob
import os
import re
import subprocess

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('HC_BUILD', os.path.join(TOP, 'build'))


def declared(paths):
    """Function names declared in the given headers."""
    names = set()
    for p in paths:
        text = open(p).read()
        names |= set(re.findall(r'\b(hc_\w+|hc__\w+)\s*\(', text))
    return names


def imports(objects):
    """hc symbols the objects (or a shared library) leave undefined."""
    out = subprocess.run(['nm', '-u'] + list(objects), check=True, capture_output=True, text=True).stdout
    return {m.group(1) for m in re.finditer(r'\bU (hc_\w+)', out)}


def defines(objects):
    out = subprocess.run(['nm', '--defined-only'] + list(objects), check=True, capture_output=True,
                         text=True).stdout
    return {m.group(1) for m in re.finditer(r' [TDBR] (hc_\w+)', out)}


PUBLIC = declared(glob.glob(os.path.join(TOP, 'include', 'hc', '*.h')))
LAYER = declared([os.path.join(TOP, 'core', 'runtime', 'layer.h')])


def objs(layer):
    if not os.path.isdir(os.path.join(BUILD, 'obj')):
        # A build tree copied without its objects (to run the tests on
        # another machine): the build that made it checked the layers.
        pytest.skip('no object files under %s' % BUILD)
    found = glob.glob(os.path.join(BUILD, 'obj', 'core', layer, '*.os'))
    assert found, 'no objects of core/%s under %s' % (layer, BUILD)
    return found


def test_grid_imports_only_public_api():
    lib = os.path.join(BUILD, 'lib', 'libhc-grid.so')
    got = imports([lib])
    assert got, 'libhc-grid imports nothing from libhc?'
    assert got <= PUBLIC, 'libhc-grid imports non-public symbols: %s' % sorted(got - PUBLIC)


def test_pipeline_imports_public_api_and_layer_header():
    own = defines(objs('pipeline'))
    got = imports(objs('pipeline')) - own
    allowed = PUBLIC | LAYER
    assert got <= allowed, 'core/pipeline imports %s' % sorted(got - allowed)
    assert 'hc__workload_ops' in got  # the test sees the layer header's one function in use


def test_partition_imports_public_api_and_layer_header():
    own = defines(objs('partition'))
    got = imports(objs('partition')) - own
    allowed = PUBLIC | LAYER
    assert got <= allowed, 'core/partition imports %s' % sorted(got - allowed)
    assert 'hc__job_set_part' in got


def test_runtime_uses_no_layer_above():
    above = defines(objs('pipeline')) | defines(objs('partition')) | \
        defines([os.path.join(BUILD, 'lib', 'libhc-grid.so')])
    got = imports(objs('runtime')) & above
    assert not got, 'core/runtime imports from the layers above it: %s' % sorted(got)


def test_grid_is_not_in_libhc():
    libhc = os.path.join(BUILD, 'lib', 'libhc.so')
    out = subprocess.run(['nm', '-D', '--defined-only', libhc], check=True, capture_output=True, text=True).stdout
    assert 'hc_grid_create' not in out
    assert 'hc_pipeline_create' in out
