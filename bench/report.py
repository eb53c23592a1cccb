"""Markdown report of a bench/run result document."""


def _cell(v):
    if isinstance(v, float):
        return '%.4g' % v
    return str(v)


def write_markdown(doc, path):
    out = ['# hc benchmark report', '',
           'Host `%s`, %s%s.' % (doc['host'], doc['date'], ' (quick run)' if doc.get('quick') else ''), '']
    out.append('## Devices and ceilings measured in this run')
    out.append('')
    out.append('| device | name | read GB/s | copy GB/s | FP32 GFLOP/s | FP64 GFLOP/s | launch µs |')
    out.append('|---|---|---|---|---|---|---|')
    for d in doc['devices']:
        c = doc['ceilings'].get(d['id'], {})
        out.append('| %s | %s | %s | %s | %s | %s | %s |' % (
            d['id'], d['name'], _cell(c.get('read_gbs', '-')), _cell(c.get('copy_gbs', '-')),
            _cell(c.get('fp32_gflops', '-')), _cell(c.get('fp64_gflops', '-')), _cell(c.get('launch_us', '-'))))
    out.append('')
    for t in doc['tables']:
        out.append('## ' + t['title'])
        out.append('')
        out.append('| ' + ' | '.join(t['columns']) + ' |')
        out.append('|' + '---|' * len(t['columns']))
        for r in t['rows']:
            out.append('| ' + ' | '.join(_cell(v) for v in r) + ' |')
        for n in t['notes']:
            out.append('')
            out.append('> ' + n)
        out.append('')
    if doc.get('errors'):
        out.append('## Errors')
        out.extend('- ' + e for e in doc['errors'])
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')
