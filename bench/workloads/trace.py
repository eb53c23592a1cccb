"""Tracing overhead: a traced command's cost on the host with tracing off
and on (hc_trace_start), in the same run.

Table: per device of the run, ns per command.
  off       hc-bench-trace-overhead: hc_buffer_fill of 64 bytes, best of
            five batches, tracing off (one test of a pointer per command)
  on        the same with tracing on (an event per command: buffered per
            thread, spilled in binary when a buffer fills, the JSON written
            at stop, outside the timed batches)
  event     on - off: what one event costs; goal <= 1000 ns
  events/s  with tracing on
  timer     on a CUDA device, what the driver's own timer costs in the same
            run (hc-bench-cuda-overhead --event-record: a cuEventRecord
            after each 64-byte cuMemsetD32Async), which a traced CUDA
            command pays once
  hc's      event - timer: what hc adds to the driver's timer
"""
import json
import os
import subprocess

GOAL_NS = 1000.0


def _bench(b, dev, n):
    exe = os.path.join(b.build, 'bin', 'hc-bench-trace-overhead')
    out = subprocess.run([exe, dev, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if out.returncode != 0:
        raise RuntimeError('%s: %s' % (exe, out.stderr.decode()[-500:]))
    return json.loads(out.stdout)


def _driver_timer_ns(b, dev):
    """ns per CUDA event record on dev (None where it cannot be had)."""
    exe = os.path.join(b.build, 'bin', 'hc-bench-cuda-overhead')
    if not dev.startswith('cuda') or not os.path.exists(exe):
        return None
    out = subprocess.run([exe, '--device=' + dev, '--event-record'], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=600)
    return json.loads(out.stdout)['record_ns'] if out.returncode == 0 else None


def run(b):
    rows = []
    for d in b.devices():
        dev = d['id']
        # a device fill through OpenCL or CUDA is ~100x a cpu fill: fewer of them
        n = (20000 if dev.startswith('cpu') else 2000) * (1 if b.quick else 10)
        r = _bench(b, dev, n)
        timer = _driver_timer_ns(b, dev)
        rows.append([dev, r['commands'], r['off_ns'], r['on_ns'], r['event_ns'], r['events_per_s'],
                     '-' if timer is None else timer, '-' if timer is None else r['event_ns'] - timer,
                     'met' if r['event_ns'] <= GOAL_NS else 'missed'])
        b.figure(name='trace_event_ns', device=dev, value=r['event_ns'], unit='ns', target=GOAL_NS)
        if timer is not None:
            b.figure(name='trace_driver_timer_ns', device=dev, value=timer, unit='ns')
    b.table('tracing overhead (ns per traced command)',
            ['device', 'commands', 'off ns', 'on ns', 'event ns', 'events/s (on)', 'driver timer ns', "hc's ns",
             'goal <= %g ns' % GOAL_NS],
            rows, ['hc-bench-trace-overhead: hc_buffer_fill of 64 bytes, best of five batches each way; on OpenCL '
                   'the event includes reading the command\'s profiling times, on CUDA its end event\'s time; '
                   'driver timer: hc-bench-cuda-overhead --event-record in the same run'])
