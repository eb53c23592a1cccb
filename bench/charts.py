"""Charts of a bench/run result document, drawn from the JSON alone:

    python bench/charts.py RESULT.json BASE

writes BASE-<chart>.png for every chart of the figures recorded by b.point
(one panel per device, one line per series, peers dashed) and
BASE-fractions.png (every figure with a numeric fraction field, against
its target), and prints a JSON list of {file, workload, title}. It needs
matplotlib (Agg); without it, it exits with status 3 and says so on stderr.
bench/report.py runs it with the peers' interpreter, so that the report
itself needs only the standard library.
"""
import json
import os
import sys

try:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter
except ImportError as e:
    sys.stderr.write('matplotlib is not importable by %s: %s\n' % (sys.executable, e))
    sys.exit(3)

PANELS_PER_ROW = 3


def _spans_decades(values, ratio):
    v = [x for x in values if x and x > 0]
    return len(v) > 1 and max(v) / min(v) >= ratio


def _size_label(v, _pos=None):
    """Sizes as numbers (2048, 500k, 1.05M), not powers of ten."""
    if v < 1e5:
        return '%d' % v
    return '%.3gk' % (v / 1e3) if v < 1e6 else '%.3gM' % (v / 1e6)


def _unique(seq):
    return list(dict.fromkeys(seq))


def _line_chart(points, path):
    """One panel per device, one line per series (dashed for peers); log
    axes where the values span a decade or more."""
    first = points[0]
    devices = _unique(p['device'] for p in points)
    cols = min(len(devices), PANELS_PER_ROW)
    rows = (len(devices) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), sharey=True, squeeze=False)
    xlog = _spans_decades([p['x'] for p in points], 10)
    ylog = _spans_decades([p['value'] for p in points], 10)
    for ax, dev in zip(axes.flat, devices):
        mine = [p for p in points if p['device'] == dev]
        for series in _unique(p['series'] for p in mine):
            pts = sorted((p['x'], p['value'], p.get('peer')) for p in mine if p['series'] == series)
            ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], marker='o', markersize=4,
                    linestyle='--' if pts[0][2] else '-', label=series)
        ax.set_title(dev, fontsize=10)
        ax.set_xlabel(first['xlabel'])
        if xlog:
            ax.set_xscale('log')
            ax.set_xticks(sorted({p['x'] for p in points}))
            ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.tick_params(axis='x', labelrotation=45, labelsize=8)
        if ylog:
            ax.set_yscale('log')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel(first['unit'])
    for ax in list(axes.flat)[len(devices):]:
        ax.set_visible(False)
    fig.suptitle(first['chart_title'], fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _fraction_chart(figs, path):
    """Horizontal bars: each figure's fraction of its ceiling, its target as
    a red tick, and 1.0 (the ceiling) as a line."""
    labels = ['%s %s\n%s' % (f['workload'], f['name'], f['device']) for f in figs]
    y = list(range(len(figs)))
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.5 * len(figs)))
    ax.barh(y, [f['fraction'] for f in figs], color='tab:blue')
    labelled = False
    for i, f in enumerate(figs):
        if f.get('fraction_target') is not None:
            ax.plot([f['fraction_target']] * 2, [i - 0.4, i + 0.4], color='tab:red', linewidth=2,
                    label=None if labelled else 'target')
            labelled = True
        ax.text(f['fraction'], i, ' %.2f' % f['fraction'], va='center', fontsize=8)
    ax.axvline(1.0, color='black', linewidth=0.8)
    ax.set_xlim(0, 1.15 * max([1.0] + [f['fraction'] for f in figs]))  # room for the value labels
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel('fraction of the ceiling measured in this run')
    ax.set_title('Fraction of the ceiling (value / ceiling)', fontsize=11)
    if labelled:
        ax.legend(fontsize=8, loc='lower right')
    ax.grid(True, axis='x', alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw(doc, base):
    made = []
    points = [f for f in doc['figures'] if f.get('chart') and f.get('plot', True) and f.get('value') is not None]
    for chart in _unique(p['chart'] for p in points):
        mine = [p for p in points if p['chart'] == chart]
        path = '%s-%s.png' % (base, chart)
        _line_chart(mine, path)
        made.append({'file': os.path.basename(path), 'workload': mine[0]['workload'], 'title': mine[0]['chart_title']})
    # a fraction that is "ceiling too low" is no number: the report lists it under Failures
    fracs = [f for f in doc['figures'] if isinstance(f.get('fraction'), (int, float))]
    if fracs:
        path = base + '-fractions.png'
        _fraction_chart(fracs, path)
        made.append({'file': os.path.basename(path), 'workload': None, 'title': 'Fraction of the ceiling'})
    return made


if __name__ == '__main__':
    with open(sys.argv[1]) as f:
        print(json.dumps(draw(json.load(f), sys.argv[2])))
