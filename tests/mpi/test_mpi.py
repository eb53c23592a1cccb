"""hcrun under MPI (docs/mpi.md): the same command line on 1-4 ranks gives
the field one process gives, rank 0 reports a row per rank, and a failing
or killed rank ends every rank with one message and one exit code.

Every run is wrapped in a timeout: a hang fails the test instead of CI."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('HC_BUILD', os.path.join(TOP, 'build'))
HCRUN = os.path.join(BUILD, 'bin', 'hcrun')
TIMEOUT = 180

np = pytest.importorskip('numpy')

# HC_TEST_MPIRUN: another launcher (mpiexec.mpich for a build against MPICH)
MPIRUN = os.environ.get('HC_TEST_MPIRUN') or shutil.which('mpirun') or shutil.which('mpiexec')


def _is_hydra():
    """MPICH's launcher (Hydra): when a rank ends without MPI_Finalize it
    kills the others, and may report the signal of one it killed."""
    try:
        return 'HYDRA' in subprocess.run([MPIRUN, '--version'], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError, TypeError):
        return False


def _why_skipped():
    if os.environ.get('HC_SANITIZED'):
        return 'sanitizer build: MPI runs are checked in the plain build (Open MPI itself is not instrumented)'
    if not os.path.exists(os.path.join(BUILD, 'lib', 'libhc-mpi.so.0')):
        return 'hc was built without MPI (no libhc-mpi): apt-get install libopenmpi-dev openmpi-bin'
    if not MPIRUN:
        return 'no mpirun on PATH'
    return None


# A skip per test, not of the module: pytest exits 5 ("no tests") on a
# module that skips itself, which tests/run.py counts as a failure.
pytestmark = pytest.mark.skipif(_why_skipped() is not None, reason=_why_skipped() or '')


def mpi_env(**extra):
    env = dict(os.environ)
    env.pop('HC_MPI', None)
    env.setdefault('HC_CACHE_DIR', os.path.join(BUILD, 'test-cache'))
    # Open MPI: CI runs as root; containers forbid the single-copy (CMA)
    # path; ranks share 2 cores, so waiting ranks yield.
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_btl_vader_single_copy_mechanism='none', OMPI_MCA_mpi_yield_when_idle='1',
               OMPI_MCA_rmaps_base_oversubscribe='1')
    # multigrid: the test grids are small; split every level the slabs
    # allow, so that the exchanges run (by default levels this small run
    # whole on every rank)
    env['HC_MG_SPLIT_MIN_POINTS'] = '1'
    env.update(extra)
    return env


# The tests that say what a node without a GPU does hide the GPU backends'
# devices, so that they check the same on a host that has one.
NO_GPU = dict(HC_CUDA_DRIVER='libcuda-hidden-by-the-test.so', HC_OPENCL_PLATFORM='platform hidden by the test')


def mpirun(n, args, env=None, shell_prefix=None, timeout=TIMEOUT):
    """Runs `mpirun -n N hcrun ARGS`; shell_prefix is sh code run on each
    rank before hcrun (it sees the rank in ${OMPI_COMM_WORLD_RANK:-$PMI_RANK})."""
    cmd = [MPIRUN, '-n', str(n)]
    if shell_prefix:
        quoted = ' '.join("'%s'" % a.replace("'", "'\\''") for a in [HCRUN] + args)
        cmd += ['sh', '-c', shell_prefix + '; exec ' + quoted]
    else:
        cmd += [HCRUN] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or mpi_env())


def single(args, env=None):
    e = env or mpi_env()
    return subprocess.run([HCRUN] + args, capture_output=True, text=True, timeout=TIMEOUT, env=e)


# workload, parameters, output port, exact (bit for bit) or not
CASES = {
    'jacobi2d': (['--workload=jacobi', 'dim=2', 'n=67', 'iters=300', 'tol=0'], 'u', True),
    'jacobi3d': (['--workload=jacobi', 'dim=3', 'n=21', 'dtype=f64', 'iters=200', 'tol=0'], 'u', True),
    # six sweeps between exchanges, ending inside a pass
    'jacobi3d-deep': (['--workload=jacobi', 'dim=3', 'n=41', 'dtype=f64', 'iters=53', 'tol=0',
                       'sweeps_per_exchange=6'], 'u', True),
    'nbody': (['--workload=nbody', 'n=301', 'steps=4'], 'pos', True),
    'multigrid': (['--workload=multigrid', 'dim=2', 'n=33', 'tol=0', 'cycles=3', 'dtype=f64'], 'u', True),
}


@pytest.fixture(scope='module')
def references(tmp_path_factory):
    out = {}
    for name, (args, port, _) in CASES.items():
        d = tmp_path_factory.mktemp('ref-' + name)
        r = single(['--backend=cpu', '--output=%s' % d] + args)
        assert r.returncode == 0, r.stderr
        out[name] = np.load(os.path.join(d, port + '.npy'))
    return out


@pytest.mark.parametrize('ranks', [1, 2, 3, 4])
@pytest.mark.parametrize('case', sorted(CASES))
def test_same_field_as_one_process(case, ranks, references, tmp_path):
    args, port, exact = CASES[case]
    r = mpirun(ranks, ['--backend=cpu', '--output=%s' % tmp_path] + args)
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.load(os.path.join(tmp_path, port + '.npy'))
    want = references[case]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want), 'rank count %d: max difference %g' % (
        ranks, float(np.max(np.abs(got.astype(float) - want.astype(float)))))
    # rank 0 alone reports and writes: one report, each file once
    assert r.stdout.count('workload ') == 1
    wrote = [l.split()[1] for l in r.stdout.splitlines() if l.startswith('wrote ')]
    npy = [w for w in wrote if w.endswith('.npy')]
    assert sorted(wrote) == sorted(set(wrote)) and len(npy) == len([f for f in os.listdir(tmp_path) if f.endswith('.npy')])
    assert all(os.path.exists(w) for w in wrote)


@pytest.mark.parametrize('ranks, device', [(2, None), (3, None), (2, 'cpu:0,cpu:1')])
def test_multigrid_measures_which_levels_to_split(ranks, device, tmp_path):
    """HC_MG_SPLIT_MIN_POINTS unset: after the warm-up cycle the ranks (and
    a rank's parts) time each level's sweeps and exchanges and agree on the
    levels worth splitting; the note says what they measured, and u is one
    process's bit for bit whatever they chose."""
    args = ['--workload=multigrid', 'dim=2', 'n=129', 'tol=0', 'cycles=3', 'dtype=f64']
    one = tmp_path / 'one'
    r1 = single(['--backend=cpu', '--output=%s' % one] + args)
    assert r1.returncode == 0, r1.stderr
    env = mpi_env(HC_CPU_DEVICES='2')
    env.pop('HC_MG_SPLIT_MIN_POINTS')
    dev = ['--device=' + device, '--split=equal'] if device else ['--backend=cpu']
    r = mpirun(ranks, dev + ['--output=%s' % tmp_path] + args, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r'split: \d of the 7 levels by slabs, the coarser ones whole on every part \(measured, us per '
                     r'red half-sweep whole / slab with its share of an exchange, finest first: ', r.stdout), r.stdout
    assert np.array_equal(np.load(tmp_path / 'u.npy'), np.load(one / 'u.npy'))


@pytest.mark.parametrize('ranks', [2, 3])
@pytest.mark.parametrize('case', ['jacobi2d', 'jacobi3d'])
def test_overlapped_exchanges_give_the_same_field(case, ranks, references, tmp_path):
    """HC_SPLIT_OVERLAP=on (auto overlaps on GPUs only): each rank sweeps
    the rows its neighbours need, begins its MPI_Isend/MPI_Irecv, sweeps
    the rest and then waits; the field is one process's bit for bit."""
    args, port, _ = CASES[case]
    r = mpirun(ranks, ['--backend=cpu', '--output=%s' % tmp_path] + args, env=mpi_env(HC_SPLIT_OVERLAP='on'))
    assert r.returncode == 0, r.stdout + r.stderr
    assert np.array_equal(np.load(os.path.join(tmp_path, port + '.npy')), references[case])


@pytest.mark.parametrize('gather_max', [None, '1k'])
@pytest.mark.parametrize('ranks', [2, 3])
@pytest.mark.parametrize('workload', ['jacobi', 'multigrid'])
def test_rows_move_between_ranks_to_follow_their_speed(workload, ranks, gather_max, tmp_path):
    """Shares far from the ranks' speeds (the last rank given 80-90 % of
    the rows of alike ranks): rows move between neighbouring ranks while
    they run (hc_part_rebalance), the report says so, and u, gathered or
    written in place, is one process's bit for bit."""
    args = {'jacobi': ['--workload=jacobi', 'dim=3', 'n=81', 'dtype=f64', 'iters=160', 'tol=0'],
            'multigrid': ['--workload=multigrid', 'dim=3', 'n=129', 'dtype=f64', 'tol=0', 'cycles=8']}[workload]
    one = tmp_path / 'one'
    r1 = single(['--backend=cpu', '--output=%s' % one] + args)
    assert r1.returncode == 0, r1.stderr
    split = ','.join(['1'] * (ranks - 1) + [str(4 * ranks)])
    # always: a move at every comparison where the measured shares differ
    # (auto also asks it to pay for itself, which depends on the host)
    env = mpi_env(HC_SPLIT_REBALANCE='always', **({'HC_GATHER_MAX': gather_max} if gather_max else {}))
    r = mpirun(ranks, ['--backend=cpu', '--split=' + split, '--output=%s' % tmp_path] + args, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'rows moved between the parts' in r.stdout
    assert np.array_equal(np.load(tmp_path / 'u.npy'), np.load(one / 'u.npy'))
    rows = [l.split()[4] for l in r.stdout.splitlines() if l.strip().startswith('part ')]
    n = int(args[2].split('=')[1])
    assert len(rows) == ranks and rows[-1].split('..')[1] == str(n)


@pytest.mark.parametrize('ranks', [2, 4])
@pytest.mark.parametrize('case', ['jacobi3d', 'nbody'])
def test_outputs_too_large_to_gather_are_written_in_place(case, ranks, references, tmp_path):
    """Past HC_GATHER_MAX every rank writes its rows into one .npy with
    MPI-IO (rank 0 the header); the file reads back as one process's."""
    args, port, _ = CASES[case]
    ref_dir = tmp_path / 'one'
    r1 = single(['--backend=cpu', '--output=%s' % ref_dir] + args)
    assert r1.returncode == 0, r1.stderr
    out = tmp_path / 'ranks'
    r = mpirun(ranks, ['--backend=cpu', '--output=%s' % out] + args, env=mpi_env(HC_GATHER_MAX='1k'))
    assert r.returncode == 0, r.stdout + r.stderr
    assert np.array_equal(np.load(out / (port + '.npy')), references[case])
    assert sorted(os.listdir(out)) == sorted(os.listdir(ref_dir))  # sidecars too, no temporaries left
    for f in os.listdir(out):
        if f.endswith('.grid'):
            assert (out / f).read_text() == (ref_dir / f).read_text()


def test_unwritable_output_is_refused_before_the_run(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    r = mpirun(2, ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=17', '--output=%s' % blocker], timeout=60)
    assert r.returncode == 2
    assert r.stderr.count(str(blocker)) >= 1 and 'sweeps' not in r.stdout


def test_trace_has_a_process_track_per_rank(tmp_path):
    path = tmp_path / 'run.json'
    r = mpirun(3, ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=65', 'iters=20', '--trace=%s' % path])
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path) == ['run.json']  # the ranks' files were joined into it
    events = json.loads(path.read_text())['traceEvents']
    names = sorted(e['args']['name'] for e in events if e.get('name') == 'process_name')
    assert [n.split(' (')[0] for n in names] == ['hc rank 0', 'hc rank 1', 'hc rank 2']
    assert len({e['pid'] for e in events}) == 3
    kinds = {(e['pid'], e.get('cat')) for e in events if e.get('ph') == 'X'}
    for pid in {e['pid'] for e in events}:
        assert (pid, 'kernel') in kinds and (pid, 'collective') in kinds
    # the middle rank exchanges halos with both neighbours
    halos = [e for e in events if e.get('cat') == 'halo']
    assert halos and all(e['dur'] >= 0 for e in halos)


def metric(doc, name):
    return float(doc['metrics'][name]['value'] if isinstance(doc['metrics'][name], dict) else doc['metrics'][name])


@pytest.mark.parametrize('ranks', [2, 3])
def test_simpson_integral_within_bound(ranks):
    args = ['--backend=cpu', '--workload=simpson', 'n=65x65x65', 'dtype=f64', '--json']
    one = json.loads(single(args).stdout)
    r = mpirun(ranks, args)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    a, b = metric(one, 'integral'), metric(doc, 'integral')
    # slabs add their sums in another order: within 1e-15 relative
    assert abs(a - b) <= 1e-15 * abs(a) + 1e-300, (a, b)


def test_report_has_a_row_per_rank():
    r = mpirun(3, ['--backend=cpu', '--workload=jacobi', 'dim=3', 'n=33', 'iters=100', 'tol=0', '--json'])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # one document: rank 0 alone prints
    split = doc['split']
    assert 'MPI transport' in split['plan']
    parts = split['parts']
    assert len(parts) == 3
    assert [p['lo'] for p in parts] == [0, parts[0]['hi'], parts[1]['hi']] and parts[-1]['hi'] == 33
    for p in parts:
        assert p['device'].startswith('cpu:')
        assert p['compute_s'] > 0 and p['collectives'] > 0
        # a cpu device's rows go to MPI where they lie, without staging
        assert p['halo_bytes'] > 0 and p['halo_direct_bytes'] == p['halo_bytes']
    text = mpirun(2, ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=65', 'iters=50', 'tol=0'])
    assert text.returncode == 0, text.stderr
    assert 'on 2 MPI ranks' in text.stdout and text.stdout.count('  part ') == 2
    assert text.stdout.count(' B in place ') == 2, text.stdout


def test_rank_shares_from_the_history(tmp_path):
    """Over ranks the shares come from each rank's history by default:
    declared peaks until every rank's device has a figure (here from a run
    of it alone), then the figures; --split=equal keeps them equal."""
    env = mpi_env(HC_CACHE_DIR=str(tmp_path / 'cache'), HC_CPU_THREADS='1')
    args = ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=257', 'iters=60', '--json']
    plans = []
    for extra in ([], [], ['--split=equal']):
        if len(plans) == 1:
            # a figure for the ranks' device that does not depend on the
            # first split's waits: a run of it alone
            alone = single(args, env=dict(env, HC_MPI='off'))
            assert alone.returncode == 0, alone.stderr
        r = mpirun(2, args + extra, env=env)
        assert r.returncode == 0, r.stderr
        split = json.loads(r.stdout)['split']
        assert sum(p['hi'] - p['lo'] for p in split['parts']) == 257
        plans.append(split['plan'])
    assert "shares from the devices' peak rates: no history yet" in plans[0], plans[0]
    assert "shares from the parts' history" in plans[1], plans[1]
    assert 'equal shares, MPI transport' in plans[2], plans[2]


def test_ranks_take_rank_zeros_arguments(references, tmp_path):
    """Parameters come from rank 0: rank 1 started with another command
    line still runs rank 0's, so ranks cannot disagree."""
    args, port, _ = CASES['jacobi2d']
    r = mpirun(2, ['--backend=cpu', '--output=%s' % tmp_path] + args,
               shell_prefix='if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 1 ]; then exec %s --backend=cpu --workload=nbody n=9; fi'
               % HCRUN)
    assert r.returncode == 0, r.stderr
    assert 'on 2 MPI ranks' in r.stdout
    assert np.array_equal(np.load(os.path.join(tmp_path, port + '.npy')), references['jacobi2d'])


def faulty_dir(tmp_path):
    d = tmp_path / 'faulty'
    d.mkdir()
    so = d / 'backend-faulty.so'
    subprocess.run(['cc', '-std=c11', '-O1', '-shared', '-fPIC', '-fvisibility=hidden',
                    '-I' + os.path.join(TOP, 'include'), '-o', str(so),
                    os.path.join(TOP, 'tests', 'reliability', 'faulty_backend.c'),
                    '-L' + os.path.join(BUILD, 'lib'), '-lhc'], check=True, timeout=120)
    return str(d)


def run_with_rank_one_failing(ranks, device, tmp_path, **extra_env):
    """jacobi over `ranks` ranks on `device` whose faulty device fails its
    50th launch on rank 1 only: what every rank then exits with."""
    env = mpi_env(HC_PLUGIN_PATH=faulty_dir(tmp_path), **extra_env)
    r = mpirun(ranks, ['--device=' + device, '--workload=jacobi', 'dim=2', 'n=65', 'iters=3000', 'tol=0',
                       '--output=%s' % (tmp_path / 'out')], env=env,
               shell_prefix='if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 1 ]; then export HC_FAULTY_ARM=launch:50; fi',
               timeout=60)
    # HC_ERR_LAUNCH: a runtime error, on every rank (Hydra may report 9 for
    # a rank it killed once another had ended: docs/mpi.md)
    assert r.returncode == 4 or (r.returncode == 9 and _is_hydra()), r.stdout + r.stderr
    # rank 0 prints the failing rank's message, once, and writes nothing
    assert r.stderr.count('injected failure of launch call 50') == 1, r.stderr
    assert not os.path.exists(tmp_path / 'out' / 'u.npy')
    return r


def test_a_failing_rank_ends_every_rank(tmp_path):
    r = run_with_rank_one_failing(3, 'faulty:1', tmp_path)
    assert 'part 1 of 3' in r.stderr
    assert 'another part' not in r.stderr


def test_a_rank_that_cannot_start_ends_every_rank(tmp_path):
    r = mpirun(3, ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=65', 'iters=10'],
               shell_prefix='if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 2 ]; then export HC_CPU_THREADS=0; fi', timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count('rank 2: HC_CPU_THREADS=0') == 1, r.stderr


def test_a_killed_rank_ends_every_rank():
    r = mpirun(2, ['--backend=cpu', '--workload=jacobi', 'dim=3', 'n=129', 'iters=1000000', 'tol=0'],
               shell_prefix='if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 1 ]; then (sleep 2; kill -9 $$) & fi', timeout=60)
    assert r.returncode != 0


def test_workload_that_does_not_split_runs_on_rank_zero(tmp_path):
    r = mpirun(2, ['--backend=cpu', '--workload=bpm', 'n=200', 'steps=20', '--output=%s' % tmp_path])
    assert r.returncode == 0, r.stderr
    assert "ran on part 0 (cpu:0) alone" in r.stdout
    assert r.stdout.count('wrote ') >= 1


def test_pipeline_is_refused_with_a_reason():
    r = mpirun(2, ['--pipeline', 'jacobi dim=2 n=17 @cpu | simpson'], timeout=60)
    assert r.returncode == 2
    assert r.stderr.count('pipelines do not run across MPI ranks') == 1


def test_every_device_for_each_rank_is_refused_under_mpi():
    r = mpirun(2, ['--device=all', '--workload=jacobi', 'dim=2', 'n=17'], env=mpi_env(HC_CPU_DEVICES='2'), timeout=60)
    assert r.returncode == 2
    assert r.stderr.count('--device=all: under MPI each rank names the devices it drives') == 1, r.stderr


@pytest.mark.parametrize('spec, reason', [
    ('cpu:0,', 'an empty device name'),
    ('auto,,cpu:1', 'an empty device name'),
    ('cpu:0,' + 'x' * 80, 'a device name is too long'),
    ('auto,cpu:0', 'cpu:0 is listed twice'),  # auto is cpu:0 on a node without a GPU
])
def test_bad_rank_sets_are_refused_as_without_mpi(spec, reason):
    """A rank's set goes to the same checks as one process's: only a whole
    "auto" is replaced, so the message names the set as given."""
    r = mpirun(2, ['--device=' + spec, '--workload=jacobi', 'dim=2', 'n=17'],
               env=mpi_env(HC_CPU_DEVICES='2', **NO_GPU), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count(reason) == 1, r.stderr


@pytest.mark.parametrize('ranks, device', [(1, None), (2, None), (3, None), (2, 'cpu:0,cpu:1')])
def test_input_files_give_the_same_field(ranks, device, tmp_path):
    """jacobi f=FILE init=FILE (each part reads its rows of the files) and
    multigrid f=FILE (each part reads the whole): one process's field."""
    rng = np.random.default_rng(ranks)
    f, u0 = tmp_path / 'f.npy', tmp_path / 'u0.npy'
    np.save(f, rng.standard_normal((37, 29)))
    np.save(u0, rng.standard_normal((37, 29)).astype(np.float32))
    g = tmp_path / 'g.npy'
    np.save(g, rng.standard_normal((33, 33)).astype(np.float32))
    runs = [(['--workload=jacobi', 'f=%s' % f, 'init=%s' % u0, 'iters=60', 'tol=0'], 'u'),
            (['--workload=multigrid', 'f=%s' % g, 'cycles=3', 'tol=0'], 'u')]
    dev = ['--device=' + device, '--split=equal'] if device else ['--backend=cpu']
    for k, (args, port) in enumerate(runs):
        one, many = tmp_path / ('one%d' % k), tmp_path / ('many%d' % k)
        r = single(['--backend=cpu', '--output=%s' % one] + args)
        assert r.returncode == 0, r.stderr
        r = mpirun(ranks, dev + ['--output=%s' % many, '--json'] + args, env=mpi_env(**SET_ENV))
        assert r.returncode == 0, r.stdout + r.stderr
        if ranks * (2 if device else 1) > 1:
            assert len(json.loads(r.stdout)['split']['parts']) == ranks * (2 if device else 1)
        assert np.array_equal(np.load(many / (port + '.npy')), np.load(one / (port + '.npy'))), args[0]


# Ranks that drive a device set each (--device=B:i,B:j): the cpu backend
# shows the host as two devices here, so each rank splits its rows over
# two cpu parts, and every part of every rank is a part of the whole split.
# --split=equal: equal shares over the ranks, the declared peaks within a
# rank (auto shares follow the history, which may leave a device out).
SET_ENV = dict(HC_CPU_DEVICES='2', HC_CPU_THREADS='2')


@pytest.mark.parametrize('ranks', [1, 2, 3])
@pytest.mark.parametrize('case', sorted(CASES))
def test_ranks_driving_device_sets_give_the_same_field(case, ranks, references, tmp_path):
    args, port, _ = CASES[case]
    r = mpirun(ranks, ['--device=cpu:0,cpu:1', '--split=equal', '--output=%s' % tmp_path, '--json'] + args,
               env=mpi_env(**SET_ENV))
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.load(os.path.join(tmp_path, port + '.npy'))
    assert np.array_equal(got, references[case]), 'ranks %d: max difference %g' % (
        ranks, float(np.max(np.abs(got.astype(float) - references[case].astype(float)))))
    split = json.loads(r.stdout)['split']
    parts = split['parts']
    assert len(parts) == 2 * ranks, split['plan']
    assert [p['device'] for p in parts] == ['rank %d cpu:%d' % (k // 2, k % 2) for k in range(2 * ranks)]
    # the parts' rows follow one another and cover the whole; shares add up
    assert parts[0]['lo'] == 0 and all(a['hi'] == b['lo'] for a, b in zip(parts, parts[1:]))
    assert abs(sum(p['weight'] for p in parts) - 1) < 1e-9
    assert ('%d parts on the devices of %d process%s' % (2 * ranks, ranks, 'es' if ranks > 1 else '')) in split['plan']
    # cpu rows go in place, within a rank and between ranks
    assert all(p['halo_direct_bytes'] == p['halo_bytes'] for p in parts)


def test_rank_sets_reduce_in_part_order(tmp_path):
    """simpson over 2 ranks x 2 devices adds its 4 slabs' sums in part
    order, as one process's 4-part split does: the same bits. (A history
    of its own: the devices' equal peaks give equal shares.)"""
    args = ['--workload=simpson', 'n=65x65x65', 'dtype=f64', '--json']
    one = single(['--device=cpu:0,cpu:1,cpu:2,cpu:3', '--split=1,1,1,1'] + args,
                 env=mpi_env(HC_CPU_DEVICES='4', HC_CPU_THREADS='4'))
    assert one.returncode == 0, one.stderr
    r = mpirun(2, ['--device=cpu:0,cpu:1'] + args, env=mpi_env(HC_CACHE_DIR=str(tmp_path), **SET_ENV))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [p['hi'] - p['lo'] for p in doc['split']['parts']] == [8, 8, 8, 8]
    assert metric(doc, 'integral') == metric(json.loads(one.stdout), 'integral')


def test_rank_sets_write_outputs_too_large_to_gather_in_place(references, tmp_path):
    args, port, _ = CASES['jacobi3d']
    r = mpirun(2, ['--device=cpu:0,cpu:1', '--split=equal', '--output=%s' % tmp_path] + args,
               env=mpi_env(HC_GATHER_MAX='1k', **SET_ENV))
    assert r.returncode == 0, r.stdout + r.stderr
    assert np.array_equal(np.load(tmp_path / (port + '.npy')), references['jacobi3d'])


def test_auto_in_a_rank_set_is_the_ranks_device(references, tmp_path):
    """--device=auto,cpu:1: auto is the device a rank takes alone (here
    cpu:0: the node has no GPU)."""
    args, port, _ = CASES['jacobi2d']
    r = mpirun(2, ['--device=auto,cpu:1', '--split=equal', '--output=%s' % tmp_path, '--json'] + args,
               env=mpi_env(**SET_ENV, **NO_GPU))
    assert r.returncode == 0, r.stdout + r.stderr
    parts = json.loads(r.stdout)['split']['parts']
    assert [p['device'] for p in parts] == ['rank 0 cpu:0', 'rank 0 cpu:1', 'rank 1 cpu:0', 'rank 1 cpu:1']
    assert np.array_equal(np.load(tmp_path / (port + '.npy')), references['jacobi2d'])


def test_a_failing_device_of_a_rank_set_ends_every_rank(tmp_path):
    r = run_with_rank_one_failing(2, 'cpu:0,faulty:1', tmp_path, **SET_ENV)
    assert 'part 3 of 4' in r.stderr, r.stderr  # rank 1's second device


def test_hc_mpi_off_runs_each_rank_alone(tmp_path):
    r = mpirun(2, ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=17', 'iters=10', '--json'],
               env=mpi_env(HC_MPI='off'))
    assert r.returncode == 0, r.stderr
    # two independent processes: two reports, no split
    assert r.stdout.count('"hc_version"') == 2 and '"split"' not in r.stdout


def test_embedding_program_hands_its_communicator():
    """examples/embed_mpi.c: an MPI program that calls MPI_Init itself."""
    exe = os.path.join(BUILD, 'bin', 'hc-example-embed-mpi')
    r = subprocess.run([MPIRUN, '-n', '3', exe], capture_output=True, text=True, timeout=TIMEOUT, env=mpi_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'embed_mpi: 3 ranks, residual' in r.stdout and 'u of 129 x 129 on rank 0' in r.stdout
    assert r.stdout.count('embed_mpi:') == 1


PY_SCRIPT = r'''
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], 'python'))
import numpy as np, hc
hc.load_library(os.path.join(sys.argv[2], 'lib', 'libhc.so.0'))
ctx = hc.Context()                       # under mpirun: every run is split over the ranks
w = ctx._mpi[1]
r = ctx.run('jacobi', dim=2, n=67, iters=300, tol=0, device='cpu')
if w.rank == 0:
    np.save(sys.argv[3], r.outputs['u'])
    print('plan:', r.split['plan'], '| parts:', len(r.split['parts']))
r = ctx.run('jacobi', dim=2, n=67, iters=300, tol=0, device='auto,cpu:1', split='equal')   # each rank drives two devices
if w.rank == 0:
    np.save(sys.argv[3] + '.set.npy', r.outputs['u'])
    print('set parts:', [p['device'] for p in r.split['parts']])
try:                                     # every device for each rank: refused, each rank names its set
    ctx.run('jacobi', dim=2, n=67, device='all')
except hc.ParamError as e:
    print('rank %d: all refused: %s' % (w.rank, e))
try:                                     # a bad parameter on rank 1 only: every rank raises it
    ctx.run('jacobi', dim=2, n=65 if w.rank != 1 else -5)
except hc.ParamError as e:
    print('rank %d: %s' % (w.rank, e))
ctx.close()
'''


@pytest.mark.skipif(os.path.realpath(BUILD) != os.path.realpath(os.path.join(TOP, 'build')),
                    reason='the Python package loads the checkout\'s build/ when imported; this run tests another build')
def test_python_context_splits_over_ranks(references, tmp_path):
    """hc.Context under mpirun: ctx.run is one part per rank, rank 0 gets
    the whole field, each rank can drive a device set ("auto,cpu:1"), and
    an error on one rank is every rank's."""
    script = tmp_path / 'ranks.py'
    script.write_text(PY_SCRIPT)
    out = tmp_path / 'u.npy'
    r = subprocess.run([MPIRUN, '-n', '3', sys.executable, str(script), TOP, BUILD, str(out)],
                       capture_output=True, text=True, timeout=TIMEOUT, env=mpi_env(**SET_ENV, **NO_GPU))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'MPI transport | parts: 3' in r.stdout
    assert np.array_equal(np.load(out), references['jacobi2d'])
    assert "set parts: ['rank 0 cpu:0', 'rank 0 cpu:1', 'rank 1 cpu:0', 'rank 1 cpu:1', 'rank 2 cpu:0', " \
        "'rank 2 cpu:1']" in r.stdout, r.stdout
    assert np.array_equal(np.load(str(out) + '.set.npy'), references['jacobi2d'])
    for rank in range(3):
        assert 'rank %d: all refused: ' % rank in r.stdout and 'under MPI each rank names the devices' in r.stdout
    assert 'rank 1: parameter n=-5' in r.stdout
    for rank in (0, 2):  # the others name rank 1
        assert ('rank %d: rank 1: parameter n=-5' % rank) in r.stdout


CORES_SCRIPT = r"""
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], 'python'))
import hc
hc.load_library(os.path.join(sys.argv[2], 'lib', 'libhc.so.0'))
ctx = hc.Context()
print('rank %d cores %s threads %d' % (ctx._mpi[1].rank, ','.join(map(str, sorted(os.sched_getaffinity(0)))),
                                       ctx.device_info('cpu:0')['compute_units']), flush=True)
ctx.close()
"""


# Open MPI binds 2 ranks to a core each by default (MPICH's Hydra binds none)
UNBOUND = dict(OMPI_MCA_hwloc_base_binding_policy='none')


def rank_cores(tmp_path, ranks, **env):
    """{rank: (cores, cpu threads)} of hc.Context under mpirun."""
    script = tmp_path / 'cores.py'
    script.write_text(CORES_SCRIPT)
    e = mpi_env(**dict(UNBOUND, **env))
    for k in ('HC_CPU_THREADS', 'HC_MPI_PIN', 'HC_CPU_DEVICES'):
        if k not in env:
            e.pop(k, None)
    r = subprocess.run([MPIRUN, '-n', str(ranks), sys.executable, str(script), TOP, BUILD], capture_output=True,
                       text=True, timeout=TIMEOUT, env=e)
    assert r.returncode == 0, r.stdout + r.stderr
    # mpirun may join the ranks' lines: read the records, not the lines
    out = {int(rank): (set(map(int, cores.split(','))), int(threads))
           for rank, cores, threads in re.findall(r'rank (\d+) cores ([\d,]+) threads (\d+)', r.stdout)}
    assert sorted(out) == list(range(ranks)), r.stdout
    return out


@pytest.mark.skipif(os.path.realpath(BUILD) != os.path.realpath(os.path.join(TOP, 'build')),
                    reason='the Python package loads the checkout\'s build/ when imported; this run tests another build')
def test_ranks_left_the_same_cores_share_them(tmp_path):
    """Ranks that the launcher did not bind cut the node's cores into runs,
    one each: each rank's cpu backend has its run's threads, placed by the
    system. HC_MPI_PIN=1 pins each rank to its run: the runs are disjoint
    and cover the cores. A user's HC_CPU_THREADS is kept (and nothing
    pinned)."""
    cores = os.sched_getaffinity(0)
    if len(cores) < 2:
        pytest.skip('one core: nothing to share')
    got = rank_cores(tmp_path, 2)
    assert all(mine == cores and threads == len(cores) // 2 for mine, threads in got.values()), got
    got = rank_cores(tmp_path, 2, HC_MPI_PIN='1')
    assert got[0][0].isdisjoint(got[1][0]) and got[0][0] | got[1][0] == cores, got
    for mine, threads in got.values():
        assert threads == len(mine) and len(mine) in (len(cores) // 2, (len(cores) + 1) // 2), got
    got = rank_cores(tmp_path, 2, HC_CPU_THREADS='3', HC_MPI_PIN='1')
    assert all(mine == cores and threads == 3 for mine, threads in got.values()), got
    # more ranks than cores: one thread each, left where the launcher put them
    got = rank_cores(tmp_path, len(cores) + 1, HC_MPI_PIN='1')
    assert all(mine == cores and threads == 1 for mine, threads in got.values()), got


def test_a_rank_bound_by_its_launcher_keeps_its_cores(tmp_path):
    """A rank bound to a core of its own (taskset standing in for the
    launcher's --bind-to core) runs one cpu thread there, not one per core
    of the node; rank 0 says so at HC_LOG=info."""
    cores = sorted(os.sched_getaffinity(0))
    if not shutil.which('taskset') or len(cores) < 2:
        pytest.skip('needs taskset and two cores')
    prefix = 'r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}; exec taskset -c $(( r == 0 ? %d : %d )) "$0" "$@"' % (
        cores[0], cores[1])
    quoted = ' '.join("'%s'" % a for a in [HCRUN, '--json', '--device=cpu:0', '--workload=jacobi', 'dim=2', 'n=33',
                                            'iters=5'])
    r = subprocess.run([MPIRUN, '-n', '2', 'sh', '-c', prefix.replace('"$0" "$@"', quoted)], capture_output=True,
                       text=True, timeout=TIMEOUT, env=mpi_env(HC_LOG='2'))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)['device']['compute_units'] == 1
    assert 'hcrun: this rank runs on cores %d, which no other rank of its node shares' % cores[0] in r.stderr, \
        r.stderr


def test_rank_zero_says_how_ranks_share_the_cores():
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip('one core: nothing to share')
    r = mpirun(2, ['--json', '--device=cpu:0', '--workload=jacobi', 'dim=2', 'n=33', 'iters=5'],
               env=mpi_env(HC_LOG='2', **UNBOUND))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'hcrun: 2 ranks of this node share %d cores' % len(cores) in r.stderr, r.stderr
    assert 'cpu thread' in r.stderr and 'each, not pinned' in r.stderr
    assert json.loads(r.stdout)['device']['compute_units'] == len(cores) // 2


CUDA_CHECK = os.path.join(BUILD, 'lib', 'hc', 'hc-mpi-cuda-check')


def serial_dir(tmp_path):
    """The serial test backend, whose memory HC_TEST_SERIAL_MEMORY makes
    stand in for a GPU's: "cuda" (an MPI reads it) or "cuda-sealed" (reading
    it faults, as device memory does for an MPI that is not CUDA-aware)."""
    d = tmp_path / 'serial'
    d.mkdir()
    subprocess.run(['cc', '-std=c11', '-O1', '-shared', '-fPIC', '-fvisibility=hidden',
                    '-I' + os.path.join(TOP, 'include'), '-o', str(d / 'backend-serial.so'),
                    os.path.join(TOP, 'tests', 'plugins', 'serial_backend.c'),
                    '-L' + os.path.join(BUILD, 'lib'), '-lhc'], check=True, timeout=120)
    return str(d)


def cuda_memory_run(tmp_path, memory, **extra_env):
    """jacobi 2-D over 2 ranks on serial:0 with HC_MPI_CUDA_AWARE=1: the run,
    its report and its field."""
    env = mpi_env(HC_PLUGIN_PATH=serial_dir(tmp_path), HC_TEST_SERIAL_MEMORY=memory, HC_MPI_CUDA_AWARE='1',
                  **extra_env)
    r = mpirun(2, ['--device=serial:0', '--output=%s' % (tmp_path / 'out'), '--json'] + CASES['jacobi2d'][0], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, json.loads(r.stdout)['split'], np.load(tmp_path / 'out' / 'u.npy')


def test_cuda_memory_goes_to_mpi_in_place_when_the_check_passes(references, tmp_path):
    r, split, got = cuda_memory_run(tmp_path, 'cuda')
    assert np.array_equal(got, references['jacobi2d'])
    assert 'MPI, CUDA memory in place transport' in split['plan'], split['plan']
    for p in split['parts']:
        assert p['halo_bytes'] > 0 and p['halo_direct_bytes'] == p['halo_bytes']
    assert r.stderr.count('HC_MPI_CUDA_AWARE=1: ok: 1048576 bytes went from serial:0') == 1, r.stderr
    assert 'halos in CUDA memory go to MPI in place' in r.stderr


def test_cuda_memory_is_staged_when_the_check_crashes(references, tmp_path):
    r, split, got = cuda_memory_run(tmp_path, 'cuda-sealed')
    assert np.array_equal(got, references['jacobi2d'])
    assert 'MPI transport' in split['plan'] and 'in place' not in split['plan'], split['plan']
    for p in split['parts']:
        assert p['halo_bytes'] > 0 and p['halo_direct_bytes'] == 0
    assert r.stderr.count('HC_MPI_CUDA_AWARE=1: the transfer crashed the check (signal') == 1, r.stderr
    assert 'halos in CUDA memory are staged through host memory' in r.stderr


def test_cuda_memory_is_staged_when_the_check_cannot_run(references, tmp_path):
    r, split, got = cuda_memory_run(tmp_path, 'cuda', HC_MPI_CUDA_CHECK=str(tmp_path / 'no-such-check'))
    assert np.array_equal(got, references['jacobi2d'])
    assert all(p['halo_direct_bytes'] == 0 for p in split['parts'])
    assert r.stderr.count('hc-mpi-cuda-check not found') == 1, r.stderr


def test_cuda_check_by_hand(tmp_path):
    """hc-mpi-cuda-check run alone (MPI as a singleton): each verdict and its
    exit status (docs/mpi.md)."""
    env = {k: v for k, v in mpi_env(HC_PLUGIN_PATH=serial_dir(tmp_path), **NO_GPU).items()}

    def check(*args, **extra):
        return subprocess.run([CUDA_CHECK] + list(args), capture_output=True, text=True, timeout=60,
                              env=dict(env, **extra))
    ok = check(HC_TEST_SERIAL_MEMORY='cuda')
    assert ok.returncode == 0 and ok.stdout.startswith('ok: 1048576 bytes went from serial:0'), ok.stdout + ok.stderr
    assert check('--bytes=3', HC_TEST_SERIAL_MEMORY='cuda').stdout.startswith('ok: 3 bytes')
    sealed = check(HC_TEST_SERIAL_MEMORY='cuda-sealed')
    assert sealed.returncode < 0, sealed.stdout + sealed.stderr  # killed by the signal of its bad read
    none = check()
    assert none.returncode == 3 and none.stdout.startswith('none: no device whose memory is CUDA memory'), none.stdout
    named = check('--device=cpu:0')
    assert named.returncode == 3 and named.stdout.startswith('none: cpu:0: its memory is not CUDA memory')
    missing = check('--device=cuda:9')
    assert missing.returncode == 4 and "no device 'cuda:9'" in missing.stdout
    usage = check('--bytes=0')
    assert usage.returncode == 2 and 'usage: hc-mpi-cuda-check' in usage.stderr


def test_cuda_check_between_processes(tmp_path):
    """Under a launcher each rank sends to the next: the check between
    processes, as a user runs it by hand."""
    plugins = serial_dir(tmp_path)
    r = subprocess.run([MPIRUN, '-n', '2', CUDA_CHECK, '--bytes=4096'], capture_output=True, text=True, timeout=60,
                       env=mpi_env(HC_PLUGIN_PATH=plugins, HC_TEST_SERIAL_MEMORY='cuda', **NO_GPU))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok: 4096 bytes went from each of 2 processes' CUDA memory to the next's") == 1, r.stdout
    # no rank with CUDA memory: none sends, every rank exits 3
    none = subprocess.run([MPIRUN, '-n', '2', CUDA_CHECK], capture_output=True, text=True, timeout=60,
                          env=mpi_env(HC_PLUGIN_PATH=plugins, **NO_GPU))
    assert none.returncode == 3 and 'ok:' not in none.stdout, none.stdout + none.stderr


def test_a_bad_cuda_aware_setting_is_refused_once():
    r = mpirun(2, ['--backend=cpu', '--workload=jacobi', 'dim=2', 'n=17', 'iters=10'],
               env=mpi_env(HC_MPI_CUDA_AWARE='maybe'), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count('HC_MPI_CUDA_AWARE=maybe: give 1, on, yes, true or 0') == 1, r.stderr
