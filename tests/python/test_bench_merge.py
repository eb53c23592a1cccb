"""bench/merge.py: runs of one machine joined into one document, runs of
two hosts (or quick and full) refused, a merged document merged again,
and --replace, where a module run again replaces that module's sections,
figures and peers of the earlier runs."""
import json
import os
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'bench'))

import merge  # noqa: E402


def run_doc(date, module, value, host='gpu-host', quick=False):
    """A bench/run document of one module: a table, a figure and a peer."""
    return {'host': host, 'date': date, 'quick': quick, 'python': None,
            'devices': [{'id': 'cpu:0', 'name': 'a cpu', 'type': 'cpu'}], 'ceilings': {'cpu:0': {'copy_gbs': 100.0}}, 'ceiling_devices': {},
            'brackets': [], 'errors': [], 'failures': [],
            'tables': [{'workload': module, 'title': '%s: table' % module, 'columns': ['x'], 'rows': [[value]],
                        'notes': []}],
            'figures': [{'workload': 'jacobi', 'device': 'cpu:0', 'name': '%s_figure' % module, 'value': value}],
            'peers': [{'workload': module, 'peer': 'numpy', 'status': 'ran %s' % value}]}


def test_runs_are_joined_in_order():
    doc = merge.merge([run_doc('d1', 'split', 1), run_doc('d2', 'mpi', 2)])
    assert [t['workload'] for t in doc['tables']] == ['split', 'mpi']
    assert [f['value'] for f in doc['figures']] == [1, 2]
    assert doc['merged_from'] == ['d1', 'd2']
    assert doc['ceilings'] == {'cpu:0': {'copy_gbs': 100.0}}


@pytest.mark.parametrize('key, other', [('host', 'another-host'), ('quick', True),
                                        ('devices', [{'id': 'cpu:0', 'name': 'another cpu', 'type': 'cpu'}])])
def test_different_runs_are_refused(key, other):
    b = run_doc('d2', 'mpi', 2)
    b[key] = other
    with pytest.raises(ValueError, match='host|quick|device cpu:0'):
        merge.merge([run_doc('d1', 'split', 1), b])


def test_replace_keeps_only_the_later_run_of_a_module():
    first = merge.merge([run_doc('d1', 'split', 1), run_doc('d2', 'mpi', 2)])
    again = merge.merge([first, run_doc('d3', 'mpi', 3)], replace=True)
    assert [(t['workload'], t['rows']) for t in again['tables']] == [('split', [[1]]), ('mpi', [[3]])]
    assert [(f['name'], f['value']) for f in again['figures']] == [('split_figure', 1), ('mpi_figure', 3)]
    assert [p['status'] for p in again['peers']] == ['ran 1', 'ran 3']
    assert again['merged_from'] == ['d1', 'd2', 'd3']
    # without --replace both runs of the module stay
    both = merge.merge([first, run_doc('d3', 'mpi', 3)])
    assert [t['rows'] for t in both['tables']] == [[[1]], [[2]], [[3]]]


def test_replace_drops_the_earlier_failures_of_a_module():
    a, b = run_doc('d1', 'jacobi', 1), run_doc('d2', 'split', 2)
    a['failures'] = ['ceiling too low: jacobi on cpu:0: roofline = 16 GLUP/s is 1.1 of its ceiling']
    b['failures'] = ['ceiling too low: split: figure 3 is 1.2 of 2.5']
    first = merge.merge([a, b])
    again = merge.merge([first, run_doc('d3', 'jacobi', 3)], replace=True)
    assert again['failures'] == ['ceiling too low: split: figure 3 is 1.2 of 2.5']
    assert merge.merge([first, run_doc('d3', 'jacobi', 3)])['failures'] == first['failures']


def test_command_line(tmp_path):
    paths = []
    for i, (date, module) in enumerate([('d1', 'split'), ('d2', 'mpi')]):
        p = tmp_path / ('run%d.json' % i)
        p.write_text(json.dumps(run_doc(date, module, i)))
        paths.append(str(p))
    out = tmp_path / 'report.json'
    r = subprocess.run([sys.executable, os.path.join(TOP, 'bench', 'merge.py'), str(out)] + paths,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())['merged_from'] == ['d1', 'd2']
    assert os.path.exists(str(out)[:-5] + '.md')
    bad = tmp_path / 'bad.json'
    bad.write_text('{not json')
    r = subprocess.run([sys.executable, os.path.join(TOP, 'bench', 'merge.py'), str(out), str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and 'bad.json' in r.stderr
