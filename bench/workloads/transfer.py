"""Transfers at link speed: a pipeline's hand-over between a device with its
own memory and the cpu device, against the link measured in the same run.

Table: per device of the run that has its own memory (not the cpu backend).
  link          hc-ceilings --only=link: hc_buffer_write / read of 64 MiB
                (16 MiB with --quick) from and into hc_host_alloc's memory
                (page-locked where the backend has it), best of the
                repetitions: the link's ceiling, each way
  pageable      the same from and into ordinary (malloc'd, touched) memory
  hand-over     the same ceilings run: hc_buffer_copy into a cpu buffer
                created just before (to the cpu) and from a written one;
                "new": with HC_HOST_CACHE=0 HC_HOST_PIN_AFTER=0, so that
                each is a new, pageable buffer; "kept": as hc runs by
                default, where a freed cpu buffer that was handed over is
                kept for the next of its size and page-locked for the
                device at its second hand-over (backends with
                host_register: cuda; on others only kept)
  pipeline      hcrun --pipeline with a 17 MB f64 field (jacobi dim=3
                n=129) handed over: `jacobi @DEV | simpson @cpu` (to the cpu)
                and `jacobi @cpu | simpson @DEV` (from the cpu); the
                pipeline report's transfer time (the copy, with whatever
                it had to set up first), best of 3 runs
Figures: each hand-over as a fraction of the link the same way; goal 0.8.
"""
GOAL = 0.8
PIPE = 'jacobi dim=3 n=129 dtype=f64 iters=10 @%s | simpson @%s'


def _pipeline_gbs(b, src, dst):
    """The best GB/s of the field's move from src to dst over 3 runs."""
    best = None
    for _ in range(3):
        doc = b.run_json([b.hcrun_path, '--json', '--pipeline=' + PIPE % (src, dst)])
        for t in doc.get('transfers', []):
            if t['from_device'] == src and t['to_device'] == dst and t['seconds'] > 0:
                gbs = t['bytes'] / t['seconds'] / 1e9
                best = gbs if best is None else max(best, gbs)
    return best


def _fraction(value, link):
    return value / link if value and link else None


def run(b):
    rows = []
    cpu = [d['id'] for d in b.all_devices() if d['id'].startswith('cpu')]
    if not cpu:
        b.log('transfer: no cpu device: nothing to hand over to')
        return
    for d in b.devices():
        dev = d['id']
        if dev.startswith('cpu'):
            continue
        c = b.measure_ceilings(dev, ['link'])
        new = b.measure_ceilings(dev, ['link'], env={'HC_HOST_CACHE': '0', 'HC_HOST_PIN_AFTER': '0'})
        h2d, d2h = c.get('h2d_gbs'), c.get('d2h_gbs')
        if not h2d or not d2h:
            b.log('transfer: %s: no link figures' % dev)
            continue
        to_cpu, from_cpu = _pipeline_gbs(b, dev, cpu[0]), _pipeline_gbs(b, cpu[0], dev)
        cases = [('handover_new_to_cpu', new.get('handover_to_cpu_gbs'), d2h),
                 ('handover_new_from_cpu', new.get('handover_from_cpu_gbs'), h2d),
                 ('handover_to_cpu', c.get('handover_to_cpu_gbs'), d2h),
                 ('handover_from_cpu', c.get('handover_from_cpu_gbs'), h2d),
                 ('pipeline_to_cpu', to_cpu, d2h), ('pipeline_from_cpu', from_cpu, h2d)]
        for name, value, link in cases:
            frac = _fraction(value, link)
            b.figure(name=name + '_fraction_of_link', device=dev, value=value, unit='GB/s', fraction=frac,
                     target=GOAL, met=frac is not None and frac >= GOAL)
        rows.append([dev, h2d, d2h, c.get('h2d_pageable_gbs'), c.get('d2h_pageable_gbs')] +
                    ['%.3g (%.2f)' % (v, v / l) if v else '-' for _, v, l in cases])
    b.table('transfers between a device and the cpu (GB/s; in brackets, the fraction of the link that way)',
            ['device', 'link to', 'link from', 'pageable to', 'pageable from', 'hand-over to cpu, new',
             'from cpu, new', 'hand-over to cpu, kept', 'from cpu, kept', 'pipeline to cpu', 'pipeline from cpu'],
            rows, ['link: hc-ceilings, page-locked host memory (hc_host_alloc); hand-over: hc_buffer_copy with a '
                   'cpu buffer of the same size created for each, best of the repetitions; new: every buffer new and pageable '
                   '(HC_HOST_CACHE=0 HC_HOST_PIN_AFTER=0); kept: hc\'s default, freed buffers kept for the next '
                   'and page-locked at their second hand-over where the backend can (cuda); pipeline: %s, the report\'s transfer time, best '
                   'of 3, each run a new process' % (PIPE % ('DEV', 'cpu')),
                   'goal: %.0f %% of the link each way' % (GOAL * 100)])
