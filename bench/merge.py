#!/usr/bin/env python3
"""Merges bench/run results of one machine into one document and report:
  bench/merge.py [--mixed] [--replace] OUT.json RUN1.json RUN2.json ...

Why: a GPU session's device calls are limited in length (docs/gpu-run.md),
so a full run there is several `bench/run --only=...` calls, one module or
two each. Merging keeps one report per machine: devices and ceilings are
united (the first run that measured a device's ceilings wins; they are the
same hardware), brackets, tables, figures, peers, errors and failures are
concatenated in the order the runs are given. Runs of different hosts are
refused (and so are runs whose device of one id has two names), and so are
quick and full runs together unless --mixed says that is meant (the
report's header then says the runs were mixed). --replace is for a
module run again after a change: a later run's sections (its tables'
modules) replace an earlier run's tables and failures of those sections, and a later
figure or peer replaces an earlier one of the same workload, device and
name; the rest is kept, in order. A merged document can be merged again:
its runs' dates stay in merged_from."""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _failure_section(text):
    """The module a failure names ("ceiling too low: jacobi on cpu:0: ...")."""
    m = re.match(r'[^:]+: ([\w-]+)[: ]', text)
    return m and m.group(1)


def _replaced(earlier, later):
    """earlier's tables, figures, peers and failures less those later's
    replace."""
    sections = {t.get('workload') for t in later.get('tables', [])}
    fig_key = lambda f: (f.get('workload'), f.get('device'), f.get('name'))  # noqa: E731
    peer_key = lambda p: (p.get('workload'), p.get('peer'))  # noqa: E731
    figs = {fig_key(f) for f in later.get('figures', [])}
    peers = {peer_key(p) for p in later.get('peers', [])}
    earlier['tables'] = [t for t in earlier['tables'] if t.get('workload') not in sections]
    earlier['figures'] = [f for f in earlier['figures'] if fig_key(f) not in figs]
    earlier['peers'] = [p for p in earlier['peers'] if peer_key(p) not in peers]
    earlier['failures'] = [f for f in earlier['failures'] if _failure_section(f) not in sections]


def merge(docs, mixed=False, replace=False):
    if not docs:
        raise ValueError('nothing to merge')
    first = docs[0]
    for d in docs[1:]:
        for key in ('host',) if mixed else ('host', 'quick'):
            if d.get(key) != first.get(key):
                raise ValueError('runs differ in %s: %r and %r' % (key, first.get(key), d.get(key)))
    modes = {bool(d.get('quick')) for d in docs}
    out = {'host': first['host'], 'date': first['date'], 'quick': 'mixed' if len(modes) > 1 else first['quick'],
           'python': first.get('python'),
           'merged_from': [m for d in docs for m in (d.get('merged_from') or [d['date']])], 'devices': [],
           'ceilings': {}, 'ceiling_devices': {},
           'brackets': [], 'tables': [], 'figures': [], 'peers': [], 'errors': [], 'failures': []}
    seen = {}
    for d in docs:
        for dev in d.get('devices', []):
            if dev['id'] not in seen:
                seen[dev['id']] = dev.get('name')
                out['devices'].append(dev)
            elif seen[dev['id']] != dev.get('name'):
                # one host name may stand for several machines (a pool of
                # like hosts): their devices tell them apart
                raise ValueError('runs differ in device %s: %r and %r' % (dev['id'], seen[dev['id']],
                                                                        dev.get('name')))
        for dev_id, c in d.get('ceilings', {}).items():
            if c and not out['ceilings'].get(dev_id):
                out['ceilings'][dev_id] = c
        for dev_id, c in d.get('ceiling_devices', {}).items():
            out['ceiling_devices'].setdefault(dev_id, c)
        if replace:
            _replaced(out, d)
        for key in ('brackets', 'tables', 'figures', 'peers', 'errors', 'failures'):
            out[key].extend(d.get(key, []))
    return out


def main(argv):
    mixed, replace = '--mixed' in argv, '--replace' in argv
    argv = [a for a in argv if a not in ('--mixed', '--replace')]
    if len(argv) < 3:
        sys.stderr.write('usage: bench/merge.py [--mixed] [--replace] OUT.json RUN.json [RUN.json ...]\n')
        return 2
    docs = []
    for path in argv[2:]:
        try:
            with open(path) as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            sys.stderr.write('bench/merge.py: %s: %s\n' % (path, e))
            return 2
    try:
        doc = merge(docs, mixed, replace)
    except (ValueError, KeyError) as e:
        sys.stderr.write('bench/merge.py: %s\n' % e)
        return 2
    tmp = argv[1] + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, argv[1])
    import report
    venv = os.path.join(HERE, '..', '.venv', 'bin', 'python')
    print(report.write_report(argv[1], [venv, doc.get('python'), sys.executable]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
