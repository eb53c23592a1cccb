#!/usr/bin/env python3
"""Markdown report of a bench/run result document, with PNG charts beside it.

bench/run calls write_report(); to redraw a report from its JSON alone:
    python3 bench/report.py bench/results/HOST-DATE.json [--python PY]
This module needs only the standard library (bench/run may run under a
python3 without matplotlib): the charts are drawn by bench/charts.py in a
subprocess, with the first of the given interpreters that imports
matplotlib; without one the report says so in one line and keeps the tables.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _cell(v):
    if isinstance(v, float):
        return '%.4g' % v
    if v is None:
        return '-'
    return str(v)


def _table(out, columns, rows):
    out.append('| ' + ' | '.join(columns) + ' |')
    out.append('|' + '---|' * len(columns))
    for r in rows:
        out.append('| ' + ' | '.join(_cell(v).replace('|', '\\|') for v in r) + ' |')
    out.append('')


def draw_charts(json_path, base, pythons):
    """(charts, note): the charts bench/charts.py drew from json_path as
    base-<chart>.png, or [] and a one-line note saying why there are none."""
    tried = []
    for py in dict.fromkeys(p for p in pythons if p):
        try:
            p = subprocess.run([py, os.path.join(HERE, 'charts.py'), json_path, base], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append('%s (%s)' % (py, e))
            continue
        if p.returncode == 0:
            return json.loads(p.stdout.decode()), None
        if p.returncode != 3:  # 3: no matplotlib there; anything else is a failure worth showing
            tried.append('%s (failed: %s)' % (py, p.stderr.decode().strip().splitlines()[-1:]))
        else:
            tried.append('%s (no matplotlib)' % py)
    return [], 'Charts not drawn: no interpreter with matplotlib (tried %s); tables only.' % ', '.join(tried)


def _mode(quick):
    """The run's mode for the header: bench/merge.py --mixed joins quick
    and full runs and says so."""
    if quick == 'mixed':
        return ' (merged quick and full runs: see each table\'s sizes)'
    return ' (quick run)' if quick else ''


def write_markdown(doc, path, charts=(), charts_note=None):
    """The report: ceilings, fraction chart, figures against targets, peers,
    then per workload its charts and tables. charts: draw_charts()'s list."""
    out = ['# hc benchmark report', '',
           'Host `%s`, %s%s.' % (doc['host'], doc['date'], _mode(doc.get('quick'))), '']
    if doc.get('python'):
        out += ['Peers (NumPy, SciPy, CuPy) ran with `%s`.' % doc['python'], '']
    if charts_note:
        out += ['> ' + charts_note, '']
    if doc.get('failures'):
        out += ['## Failures: ceiling too low', '',
                'These figures measured above 1.0 of the ceiling they are compared with, so that ceiling is not '
                'one: their cells read "ceiling too low" and the run failed.', '']
        out.extend('- ' + f for f in doc['failures'])
        out.append('')
    out += ['## Devices and ceilings measured in this run', '']
    rows = []
    cdevs = doc.get('ceiling_devices', {})
    for d in doc['devices']:
        cdev = cdevs.get(d['id'], d['id'])
        c = doc['ceilings'].get(cdev, {})
        rows.append([d['id'], d['name'], d.get('type', '-'), cdev, c.get('isa'), c.get('threads')] +
                    [c.get(k) for k in ('read_gbs', 'copy_gbs', 'fp32_gflops', 'fp64_gflops', 'launch_us')])
    _table(out, ['device', 'name', 'type', 'ceilings of', 'vector ISA', 'threads', 'read GB/s', 'copy GB/s',
                 'FP32 GFLOP/s', 'FP64 GFLOP/s', 'launch µs'], rows)
    out += ['> An OpenCL device of type CPU (PoCL) runs on the host\'s cores: its ceilings are the host\'s, '
            'measured by hc-ceilings with the cpu backend\'s native kernels (every worker thread, the widest '
            'vector FMA the CPU has). FP32/FP64 GFLOP/s count 2 flops per FMA lane: half of it is the rate of '
            'FMA-pipe lane slots. "-": not measured in this run.', '']
    if doc.get('brackets'):
        out += ['## Ceilings around the runs they bound', '',
                'Each ceiling below was measured just before and just after the workload runs it bounds (ceiling, '
                'workload, ceiling), so that a noisy machine moves both alike. The fractions use the higher '
                'sample; spread = (highest - lowest) / highest.', '']
        rows = []
        for br in doc['brackets']:
            ws = br.get('bytes')
            llc = br.get('llc_bytes')
            for k, c in br['ceilings'].items():
                mem = k in ('read_gbs', 'copy_gbs')
                where = '-'
                if mem and ws:
                    where = '%.4g MiB%s' % (ws / 2.0 ** 20, ' (in cache: LLC %.4g MiB)' % (llc / 2.0 ** 20)
                                            if llc and ws <= llc else '')
                rows.append([br.get('workload'), br['device'], br.get('ceiling_device'), br.get('label') or '-', k,
                             where, ', '.join('%.4g' % v for v in c['samples']) or '-', c.get('ceiling'),
                             '%.1f %%' % (100 * c['spread']) if c['samples'] else '-'])
        _table(out, ['workload', 'device', 'ceilings of', 'runs', 'ceiling', 'working set', 'samples',
                     'ceiling used', 'spread'], rows)

    for c in charts:
        if c['workload'] is None:
            out += ['## ' + c['title'], '', '![%s](%s)' % (c['title'], c['file']), '']
    targets = [f for f in doc['figures'] if 'target' in f and not f.get('chart')]
    if targets:
        out += ['## Figures against their targets', '']
        _table(out, ['workload', 'device', 'figure', 'value', 'unit', 'fraction', 'target', 'met'],
               [[f.get('workload'), f.get('device'), f.get('name'), f.get('value'), f.get('unit'),
                 f.get('fraction'), f.get('target'), {True: 'yes', False: 'no'}.get(f.get('met'), '-')]
                for f in targets])
    if doc.get('peers'):
        out += ['## Peers in this run', '']
        _table(out, ['workload', 'peer', 'status'], [[p['workload'], p['peer'], p['status']] for p in doc['peers']])

    workloads = list(dict.fromkeys([t.get('workload') for t in doc['tables']] +
                                   [c['workload'] for c in charts if c['workload']]))
    for wl in workloads:
        out += ['## ' + (wl or 'other'), '']
        for c in charts:
            if c['workload'] == wl:
                out += ['![%s](%s)' % (c['title'], c['file']), '']
        for t in doc['tables']:
            if t.get('workload') != wl:
                continue
            out += ['### ' + t['title'], '']
            _table(out, t['columns'], t['rows'])
            for n in t['notes']:
                out += ['> ' + n, '']
    if doc.get('errors'):
        out.append('## Errors')
        out.extend('- ' + e for e in doc['errors'])
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')


def write_report(json_path, pythons):
    """Charts and Markdown beside json_path (same base name); returns the
    Markdown's path."""
    base = json_path[:-5] if json_path.endswith('.json') else json_path
    with open(json_path) as f:
        doc = json.load(f)
    charts, note = draw_charts(json_path, base, pythons)
    write_markdown(doc, base + '.md', charts, note)
    return base + '.md'


if __name__ == '__main__':
    import argparse
    ap = argparse.ArgumentParser(description='Redraws the Markdown report and charts of a bench/run JSON document.')
    ap.add_argument('json')
    ap.add_argument('--python', default=None, help='interpreter with matplotlib (default: the result\'s, .venv, this)')
    a = ap.parse_args()
    with open(a.json) as f:
        recorded = json.load(f).get('python')
    print(write_report(a.json, [a.python, recorded, os.path.join(HERE, '..', '.venv', 'bin', 'python'),
                                sys.executable]))
