#!/usr/bin/env python3
"""Merges bench/run results of one machine into one document and report:
  bench/merge.py [--mixed] OUT.json RUN1.json RUN2.json ...

Why: a GPU session's device calls are limited in length (docs/gpu-run.md),
so a full run there is several `bench/run --only=...` calls, one module or
two each. Merging keeps one report per machine: devices and ceilings are
united (the first run that measured a device's ceilings wins; they are the
same hardware), brackets, tables, figures, peers, errors and failures are
concatenated in the order the runs are given. Runs of different hosts are refused, and so are
quick and full runs together unless --mixed says that is meant (the
report's header then says the runs were mixed)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def merge(docs, mixed=False):
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
           'merged_from': [d['date'] for d in docs], 'devices': [], 'ceilings': {}, 'ceiling_devices': {},
           'brackets': [], 'tables': [], 'figures': [], 'peers': [], 'errors': [], 'failures': []}
    seen = set()
    for d in docs:
        for dev in d.get('devices', []):
            if dev['id'] not in seen:
                seen.add(dev['id'])
                out['devices'].append(dev)
        for dev_id, c in d.get('ceilings', {}).items():
            if c and not out['ceilings'].get(dev_id):
                out['ceilings'][dev_id] = c
        for dev_id, c in d.get('ceiling_devices', {}).items():
            out['ceiling_devices'].setdefault(dev_id, c)
        for key in ('brackets', 'tables', 'figures', 'peers', 'errors', 'failures'):
            out[key].extend(d.get(key, []))
    return out


def main(argv):
    mixed = '--mixed' in argv
    argv = [a for a in argv if a != '--mixed']
    if len(argv) < 3:
        sys.stderr.write('usage: bench/merge.py [--mixed] OUT.json RUN.json [RUN.json ...]\n')
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
        doc = merge(docs, mixed)
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
