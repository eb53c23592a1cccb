"""launch overhead: hc's empty-kernel launch on the cpu backend beside
StarPU's task overhead, in the same run.

Table: microseconds per launch / per task.
  hc     hc-ceilings' launch_us (an empty kernel over 65536 items, so every
         worker thread runs a part; many launches, then one finish; per
         launch) and launch_1item_us (a 1-item range, run inline by the
         calling thread) on the cpu device.
  StarPU tasks_overhead from Debian's starpu-examples: a chain of empty
         tasks (each depends on the previous one by a tag) submitted, then
         waited for; per task: submit, execution and their sum. Run with
         one CPU worker and with one per core (STARPU_NCPU), CUDA and
         OpenCL workers off, and STARPU_HOME in a temporary directory (its
         sampling files stay out of $HOME).
Both amortise an in-order stream of empty work over many launches; hc's
wide launch splits each over every worker, StarPU runs each task on one.
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile

NAME = 'StarPU tasks_overhead'


def _tasks_overhead():
    """The tasks_overhead binary of starpu-examples, or None."""
    found = shutil.which('tasks_overhead')
    if found:
        return found
    try:  # where dpkg put it (Debian: /usr/lib/<triplet>/starpu/examples)
        files = subprocess.run(['dpkg', '-L', 'starpu-examples'], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL).stdout.decode().split()
        found = [f for f in files if f.endswith('/tasks_overhead')]
    except OSError:
        found = []
    found = found or glob.glob('/usr/lib/*/starpu/examples/tasks_overhead') + \
        glob.glob('/usr/lib/starpu/examples/tasks_overhead')
    return found[0] if found else None


def _starpu(exe, ncpu, ntasks, home):
    """Per-task microseconds {submit, execution, total} of one run."""
    env = dict(os.environ, STARPU_NCPU=str(ncpu), STARPU_NCUDA='0', STARPU_NOPENCL='0', STARPU_HOME=home,
               STARPU_SILENT='1')
    p = subprocess.run([exe, '-i', str(ntasks)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                       timeout=300)
    text = p.stdout.decode(errors='replace')
    got = {}
    for key, label in (('submit', 'Per task submit'), ('execution', 'Per task execution'), ('total', 'Per task')):
        m = re.search(r'^%s:\s*([0-9.eE+-]+)\s*usecs' % label, text, re.M)
        if m:
            got[key] = float(m.group(1))
    if p.returncode != 0 or 'total' not in got:
        raise RuntimeError('%s exit %d: %s' % (exe, p.returncode, text[-300:].strip()))
    return got


def run(b):
    cpu = [d for d in b.devices() if d['id'].startswith('cpu')]
    if not cpu:
        b.peer(NAME, 'skipped: no cpu device in this run (hc\'s side of the comparison)')
        return
    cpu = cpu[0]
    c = b.ceilings(cpu['id'])
    cores = cpu.get('compute_units') or os.cpu_count() or 1
    rows = [['hc cpu backend', 'empty kernel, 65536 items over every worker (launch_us)', cores, None, None,
             c.get('launch_us')],
            ['hc cpu backend', 'empty kernel, 1 item, run inline (launch_1item_us)', cores, None, None,
             c.get('launch_1item_us')]]
    notes = ['hc: hc-ceilings on %s, many launches then one finish, per launch (best of 3)' % cpu['id'],
             'StarPU: tasks_overhead -i N, a chain of empty tasks (tag dependencies) submitted then waited for, per '
             'task; best of 3 runs by total']
    exe = _tasks_overhead()
    if not exe:
        b.peer(NAME, 'skipped: not installed (Debian: apt-get install starpu-examples)')
        notes.append('StarPU: not installed here (Debian package starpu-examples), no StarPU rows')
    else:
        ntasks = 5000 if b.quick else 50000
        try:
            with tempfile.TemporaryDirectory(prefix='hc-bench-starpu-') as home:
                for ncpu in sorted({1, cores}):
                    best = min((_starpu(exe, ncpu, ntasks, home) for _ in range(3)), key=lambda r: r['total'])
                    rows.append(['StarPU', 'tasks_overhead -i %d (empty tasks in a chain)' % ntasks, ncpu,
                                 best.get('submit'), best.get('execution'), best['total']])
            b.peer(NAME, 'ran (%s)' % exe)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            b.peer(NAME, 'failed: %s' % e)
            notes.append('StarPU failed: %s' % str(e)[:300])
    b.table('launch overhead: hc cpu backend and StarPU (µs per launch or task)',
            ['runtime', 'what is timed', 'workers', 'submit µs', 'execution µs', 'µs per launch / task'],
            [['-' if v is None else v for v in r] for r in rows], notes=notes)
