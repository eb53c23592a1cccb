"""The benchmark harness's ceilings (bench/benchlib.py, bench/report.py):
a ceiling bracketed around the runs it bounds, a figure above 1.0 of it
failing the run as "ceiling too low", and hc-ceilings' own options."""
import json
import os
import stat
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('HC_BUILD', os.path.join(TOP, 'build'))
sys.path.insert(0, os.path.join(TOP, 'bench'))

import benchlib  # noqa: E402
import report  # noqa: E402

# A stand-in hc-ceilings: read_gbs from a list, one value per call (a counter
# file beside it), so that the test knows each bracket's samples.
FAKE_CEILINGS = r'''#!%(python)s
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
values = %(values)r
with open(os.path.join(here, 'calls'), 'a+') as f:
    f.seek(0)
    n = len(f.read().split())
    f.write('%%s\n' %% ' '.join(sys.argv[1:]).replace(' ', '|'))
v = values[min(n, len(values) - 1)]
nbytes = [int(a[8:]) for a in sys.argv if a.startswith('--bytes=')] or [1 << 29]
print(json.dumps({'device': 'cpu:0', 'bytes': nbytes[0], 'llc_bytes': 1 << 25, 'threads': 2, 'isa': 'avx2+fma',
                  'read_gbs': v, 'copy_gbs': -1, 'fp32_gflops': 100.0, 'fp64_gflops': -1, 'launch_us': -1,
                  'launch_1item_us': -1}))
'''

FAKE_HCRUN = r'''#!%(python)s
import json
print(json.dumps({'backends': [{'devices': [{'id': 'cpu:0', 'name': 'CPU', 'type': 'cpu', 'languages': ['host']}]},
                               {'devices': [{'id': 'opencl:0', 'name': 'PoCL', 'type': 'cpu',
                                             'languages': ['opencl-c']}]}]}))
'''


def _script(path, text, **kw):
    with open(path, 'w') as f:
        f.write(text % dict(kw, python=sys.executable))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


@pytest.fixture
def bench(tmp_path):
    def make(values):
        os.makedirs(tmp_path / 'bin', exist_ok=True)
        _script(str(tmp_path / 'bin' / 'hc-ceilings'), FAKE_CEILINGS, values=values)
        _script(str(tmp_path / 'bin' / 'hcrun'), FAKE_HCRUN)
        b = benchlib.Bench(str(tmp_path))
        b.module = 'simpson'
        return b
    return make


def _calls(b):
    with open(os.path.join(b.build, 'bin', 'calls')) as f:
        return [line.strip().split('|') for line in f if line.strip()]


def test_bracket_samples_before_and_after_and_uses_the_higher(bench):
    b = bench([8.0, 10.0])
    with b.bracket('cpu:0', ['read_gbs'], label='large input') as br:
        assert len(_calls(b)) == 1  # the "before" sample ran before the block
        frac = br.fraction('read_gbs', 9.0, 'fused')
        ceil = br.ceiling('read_gbs')
    assert len(_calls(b)) == 2
    assert '--only=read' in _calls(b)[0]
    assert frac.json() == pytest.approx(0.9)  # of 10, the higher sample
    assert ceil.json() == 10.0
    assert not b.failures
    rec = b.brackets[0]
    assert rec['ceilings']['read_gbs']['samples'] == [8.0, 10.0]
    assert rec['ceilings']['read_gbs']['spread'] == pytest.approx(0.2)
    assert rec['label'] == 'large input'


def test_fraction_above_one_is_ceiling_too_low_and_a_failure(bench):
    b = bench([4.0, 5.0])
    with b.bracket('cpu:0', ['read_gbs']) as br:
        frac = br.fraction('read_gbs', 6.3, 'fused 512x512x512 f64')
        b.figure(name='fused_fraction_of_ceiling_f64', device='cpu:0', value=6.3, unit='GB/s',
                 ceiling=br.ceiling('read_gbs'), fraction=frac, target=0.85, fraction_target=0.85)
        b.table('t', ['GB/s', 'fraction'], [[6.3, frac]])
    b.settle_figures()
    assert frac.json() == benchlib.TOO_LOW
    assert len(b.failures) == 1 and b.failures[0].startswith('ceiling too low: simpson on cpu:0')
    assert '1.260' in b.failures[0]  # 6.3 / 5
    doc = benchlib.plain({'tables': b.tables, 'figures': b.figures, 'failures': b.failures})
    json.dumps(doc)  # every placeholder resolved to JSON
    assert doc['tables'][0]['rows'][0][1] == benchlib.TOO_LOW
    assert doc['figures'][0]['fraction'] == benchlib.TOO_LOW
    assert doc['figures'][0]['met'] is False and doc['figures'][0]['failed'] == benchlib.TOO_LOW


def test_met_follows_the_resolved_fraction(bench):
    b = bench([10.0, 9.0])
    with b.bracket('cpu:0', ['read_gbs']) as br:
        b.figure(name='f', device='cpu:0', value=9.0, fraction=br.fraction('read_gbs', 9.0), fraction_target=0.85,
                 target=0.85)
        b.figure(name='g', device='cpu:0', value=8.0, fraction=br.fraction('read_gbs', 8.0), fraction_target=0.85,
                 target=0.85)
    b.settle_figures()
    assert [f['met'] for f in b.figures] == [True, False]


def test_scaled_ceiling_in_slots(bench):
    b = bench([10.0])
    with b.bracket('cpu:0', ['fp32_gflops']) as br:
        ok = br.fraction('fp32_gflops', 40.0, 'slots', scale=0.5, unit='G slots/s')
        high = br.fraction('fp32_gflops', 60.0, 'slots', scale=0.5, unit='G slots/s')
    assert ok.json() == pytest.approx(0.8)  # 40 G slots/s of 100 GFLOP/s / 2
    assert high.json() == benchlib.TOO_LOW and len(b.failures) == 1


def test_numeric_figure_fraction_above_one_fails(bench):
    b = bench([10.0])
    b.figure(name='roofline', device='cpu:0', value=12.0, unit='GB/s', ceiling=10.0, fraction=1.2, target=0.8,
             met=True)
    b.figure(name='other', device='cpu:0', value=7.0, unit='GB/s', ceiling=10.0, fraction=0.7)
    b.check_figures('simpson')
    assert b.figures[0]['fraction'] == benchlib.TOO_LOW and b.figures[0]['met'] is False
    assert b.figures[1]['fraction'] == 0.7
    assert len(b.failures) == 1


def test_record_peak_above_one_fails(bench):
    b = bench([10.0])
    assert b.static_fraction(5.0, 10.0, 'x') == 0.5
    assert b.static_fraction(12.0, 10.0, 'x') == benchlib.TOO_LOW
    assert b.static_fraction(12.0, None, 'x') is None
    assert len(b.failures) == 1


def test_opencl_cpu_device_shares_the_hosts_ceilings(bench):
    b = bench([10.0])
    assert b.ceiling_device('opencl:0') == 'cpu:0'
    assert b.ceiling_device('cpu:0') == 'cpu:0'
    with b.bracket('opencl:0', ['read_gbs']):
        pass
    assert all('--device=cpu:0' in c for c in _calls(b))


def test_report_lists_failures_and_spread(bench, tmp_path):
    b = bench([4.0, 5.0])
    with b.bracket('cpu:0', ['read_gbs'], nbytes=1 << 24, label='small input') as br:
        b.table('simpson: large', ['GB/s', 'fused / ceiling'], [[6.0, br.fraction('read_gbs', 6.0)]])
    doc = benchlib.plain({'host': 'h', 'date': 'd', 'quick': True, 'devices': b.devices(), 'ceilings': {},
                          'ceiling_devices': {'cpu:0': 'cpu:0', 'opencl:0': 'cpu:0'}, 'brackets': b.brackets,
                          'tables': b.tables, 'figures': b.figures, 'peers': [], 'errors': [],
                          'failures': b.failures})
    path = str(tmp_path / 'r.md')
    report.write_markdown(doc, path)
    text = open(path).read()
    assert '## Failures: ceiling too low' in text
    assert '| 6 | ceiling too low |' in text
    assert '4, 5' in text and '20.0 %' in text  # both samples and their spread
    assert 'in cache' in text  # 16 MiB read at the input's size, within the 32 MiB LLC


def _ceilings(*args, env=None):
    exe = os.path.join(BUILD, 'bin', 'hc-ceilings')
    if not os.path.exists(exe):
        pytest.skip('hc-ceilings not built')
    return subprocess.run([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600,
                          env=dict(os.environ, **(env or {})))


def test_hc_ceilings_options():
    p = _ceilings('--device=cpu', '--json', '--quick', '--only=fp32,read', '--bytes=1048576',
                  env={'HC_CPU_THREADS': '1'})
    assert p.returncode == 0, p.stderr.decode()
    doc = json.loads(p.stdout.decode())
    assert doc['threads'] == 1 and doc['bytes'] == 1048576
    assert doc['read_gbs'] > 0 and doc['fp32_gflops'] > 0
    assert doc['copy_gbs'] == -1 and doc['fp64_gflops'] == -1 and doc['launch_us'] == -1
    assert doc['isa'] in ('avx512f', 'avx2+fma', 'sse2', 'portable')
    # the link: not for a device that shares host memory; for another
    # (PoCL here) every rate, pinned, pageable and the hand-overs
    p = _ceilings('--device=cpu', '--json', '--quick', '--only=link')
    doc = json.loads(p.stdout.decode())
    assert doc['h2d_gbs'] == -1 and doc['handover_to_cpu_gbs'] == -1
    p = _ceilings('--device=opencl:0', '--json', '--quick', '--only=link')
    if p.returncode == 0:
        doc = json.loads(p.stdout.decode())
        for k in ('h2d_gbs', 'd2h_gbs', 'h2d_pageable_gbs', 'd2h_pageable_gbs', 'handover_to_cpu_gbs',
                  'handover_from_cpu_gbs'):
            assert doc[k] > 0, k
        assert doc['read_gbs'] == -1
    else:
        assert p.returncode == 3, p.stderr.decode()  # no OpenCL device
    for bad in ('--only=foo', '--only=', '--bytes=12x', '--bytes=10'):
        p = _ceilings('--device=cpu', bad)
        assert p.returncode == 2 and bad.split('=')[0] in p.stderr.decode()


def test_fraction_chart_skips_ceiling_too_low(tmp_path):
    doc = {'figures': [{'workload': 'simpson', 'device': 'cpu:0', 'name': 'a', 'fraction': benchlib.TOO_LOW},
                       {'workload': 'simpson', 'device': 'cpu:0', 'name': 'b', 'fraction': 0.5,
                        'fraction_target': 0.85}]}
    path = tmp_path / 'r.json'
    path.write_text(json.dumps(doc))
    p = subprocess.run([sys.executable, os.path.join(TOP, 'bench', 'charts.py'), str(path), str(tmp_path / 'r')],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode == 3:
        pytest.skip('no matplotlib')
    assert p.returncode == 0, p.stderr.decode()
    assert [c['title'] for c in json.loads(p.stdout.decode())] == ['Fraction of the ceiling']
