"""import hc: workloads, pipelines and grid expressions from Python give what
hcrun gives, errors are exceptions per status, memory is shared where the
device allows it, and nothing leaks."""
import gc
import json
import os
import subprocess
import tracemalloc

import numpy as np
import pytest

# Every workload, small, with parameters that run in well under a second.
# Glue stages take their input from a workload's output file.
RUNS = {
    'simpson': 'n=33x33x33 func=sinprod',
    'jacobi': 'dim=2 n=33 tol=1e-6',
    'nbody': 'n=256 steps=3',
    'bpm': 'dim=2 n=63 steps=10',
    'multigrid': 'n=17 dtype=f64',
}


def kv(text):
    return dict(p.split('=', 1) for p in text.split())


def devices(ctx):
    return [d for d in ('cpu:0', 'opencl:0') if d in ctx.devices]


def test_registry_matches_hcrun_list(ctx, hcrun):
    listed = json.loads(subprocess.run([hcrun, '--list', '--json'], capture_output=True, check=True).stdout)
    ids = [d['id'] for b in listed['backends'] for d in b['devices']]
    assert ctx.devices == ids
    assert sorted(ctx.workloads) == sorted(w['name'] for w in listed['workloads'])
    assert 'cpu:0' in ctx.devices


@pytest.mark.parametrize('workload', sorted(RUNS))
def test_workload_outputs_equal_hcrun_output(ctx, hcrun, tmp_path, workload):
    for dev in devices(ctx):
        out = tmp_path / dev.replace(':', '_')
        subprocess.run([hcrun, '--device=' + dev, '--workload=' + workload, '--output=' + str(out)] +
                       RUNS[workload].split(), check=True, capture_output=True)
        r = ctx.run(workload, device=dev, **kv(RUNS[workload]))
        assert r.device == dev
        assert r.fields, workload
        for port, arr in r.outputs.items():
            want = np.load(out / (port + '.npy'))
            assert arr.dtype == want.dtype and arr.shape == want.shape, (workload, dev, port)
            # The same parameters on the same device: the same arithmetic.
            np.testing.assert_array_equal(arr, want, err_msg='%s %s %s' % (workload, dev, port))
        assert r.times.wall >= r.times.compute >= 0
        assert r.metrics


def test_glue_stage_on_numpy_input(ctx):
    x = np.random.default_rng(1).standard_normal((5, 7)) + 1j * np.random.default_rng(2).standard_normal((5, 7))
    for dev in devices(ctx):
        r = ctx.run('abs2', input=x, device=dev)
        np.testing.assert_allclose(r.outputs[list(r.outputs)[0]], np.abs(x) ** 2, rtol=1e-13)
        s = ctx.run('reduce', input=np.arange(10.0), op='sum', device=dev)
        assert list(s.outputs.values())[0] == 45.0


def test_simpson_on_an_array_as_in_the_docs(ctx):
    f = np.ones((129, 129, 129))
    r = ctx.run('simpson', input=f, h=0.01, device='cpu')
    assert r.metrics['integral'] == pytest.approx(1.28 ** 3, rel=1e-12)
    assert r.outputs['integral'].shape == ()


def test_parameters_validated_by_hc(hc, ctx):
    with pytest.raises(hc.ParamError) as e:
        ctx.run('simpson', n='abc', device='cpu')
    assert 'n=abc' in str(e.value) and e.value.status == 5 and e.value.name == 'HC_ERR_PARAM'
    with pytest.raises(hc.ParamError) as e:
        ctx.run('simpson', nosuch=1, device='cpu')
    assert 'nosuch' in str(e.value)
    # shapes and vectors from tuples
    r = ctx.run('simpson', n=(9, 9, 9), func='sinprod', device='cpu')
    assert r.params['n'] == '9x9x9'


def test_errors_are_classes_per_status(hc, ctx):
    assert issubclass(hc.ParamError, hc.HcError) and issubclass(hc.VerifyError, hc.HcError)
    assert hc.ParamError is not hc.NotFoundError
    # the exit code hcrun gives each status, from the status list itself
    assert (hc.ParamError.exit_code, hc.VerifyError.exit_code, hc.NoDeviceError.exit_code) == (2, 1, 3)
    assert hc.DeviceMemoryError.exit_code == 4
    with pytest.raises(hc.HcError) as e:
        ctx.run('no-such-workload')
    assert 'no-such-workload' in str(e.value)
    with pytest.raises(hc.HcError) as e:
        ctx.run('simpson', device='nosuchbackend:0')
    assert 'nosuchbackend' in str(e.value)
    with pytest.raises(hc.ParamError) as e:
        ctx.run('simpson', nosuchport=np.zeros(3), device='cpu')
    assert 'nosuchport' in str(e.value)


def test_pipeline(ctx):
    p = ctx.pipeline('jacobi dim=3 n=17 f=sin dtype=f64 tol=1e-10 iters=200000 @cpu | simpson @' + devices(ctx)[-1])
    res = p.run()
    assert [s.workload for s in res.stages] == ['jacobi', 'simpson']
    assert all(s.state == 'done' for s in res.stages)
    assert res.stages[1].metrics['integral'] == pytest.approx(0.2588492, abs=1e-6)
    assert res.stages[0].outputs['u'].shape == (17, 17, 17)
    if devices(ctx)[-1] != 'cpu:0':
        assert len(res.transfers) == 1 and res.transfers[0].bytes == 17 ** 3 * 8


def test_grid_expressions_match_numpy(hc, ctx):
    n = 17
    g = hc.Grid(ctx, (n, n, n), device='cpu')
    rng = np.random.default_rng(3)
    a, b = rng.random((n, n, n)), rng.random((n, n, n))
    f, gg, h = g.field(a), g.field(b), g.zeros()
    lap = g.laplacian()
    h[g.interior()] = lap(f + gg)
    s = a + b
    i = slice(1, -1)
    hh = 1.0 / (n - 1)
    ref = (s[2:, i, i] + s[:-2, i, i] + s[i, 2:, i] + s[i, :-2, i] + s[i, i, 2:] + s[i, i, :-2] - 6 * s[i, i, i]) / hh**2
    got = np.asarray(h)
    np.testing.assert_allclose(got[i, i, i], ref, rtol=1e-12, atol=1e-9)
    assert np.all(got[0] == 0) and np.all(got[-1] == 0)
    h[1:-1, 1:-1, 1:-1] = 2 * f - gg / 4
    np.testing.assert_allclose(np.asarray(h)[i, i, i], (2 * a - b / 4)[i, i, i], rtol=1e-14)
    assert g.sum(f) == pytest.approx(a.sum(), rel=1e-13)
    assert g.maxabs(f - gg) == pytest.approx(np.abs(a - b).max(), rel=1e-15)
    e = f + gg
    g.clear()
    with pytest.raises(ValueError):
        h[...] = e  # built before the clear
    h[...] = f + 1.0  # fields survive a clear
    np.testing.assert_allclose(np.asarray(h), a + 1.0, rtol=1e-15)
    h[g.interior()] = lap(f + gg)  # and operators do
    np.testing.assert_allclose(np.asarray(h)[i, i, i], ref, rtol=1e-12, atol=1e-9)
    g.close()


def test_host_memory_is_shared_not_copied(ctx):
    dev = 'cpu:0'
    f = ctx.empty((64, 64), 'f64', device=dev)
    view = f.numpy()
    view[:] = 2.0
    r = ctx.run('reduce', input=f, op='sum', device=dev)
    assert list(r.outputs.values())[0] == 2.0 * 64 * 64
    # the output is a view of the device's memory, and DLPack shares it too
    out = ctx.run('scale', input=f, factor=3.0, device=dev)
    port = list(out.fields)[0]
    a = out.outputs[port]
    b = np.from_dlpack(out.fields[port])
    assert np.shares_memory(a, b)
    a[0, 0] = 7.0
    assert b[0, 0] == 7.0 and np.asarray(out.fields[port])[0, 0] == 7.0


def test_no_leak_across_10000_runs(hc, ctx):
    lib = hc._lib.load()
    x = np.ones(16)
    for _ in range(50):  # warm caches
        ctx.run('reduce', input=x, op='sum', device='cpu')
    # Earlier tests' fields in reference cycles go at the next collection,
    # which may come inside the loop: collect them before counting.
    gc.collect()
    live = lib.hc_context_live_buffers(ctx._h)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(10000):
        r = ctx.run('reduce', input=x, op='sum', device='cpu')
        assert r.metrics
        del r
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, 'filename'))
    assert lib.hc_context_live_buffers(ctx._h) == live
    assert grown < 256 * 1024, 'Python heap grew by %d bytes over 10,000 runs' % grown


def test_cupy_handover_on_cuda(ctx):
    cupy = pytest.importorskip('cupy')
    if 'cuda:0' not in ctx.devices:
        pytest.skip('no CUDA device')
    x = cupy.arange(1000, dtype=cupy.float64)
    r = ctx.run('scale', input=x, factor=2.0, device='cuda:0')
    field = list(r.fields.values())[0]
    y = cupy.asarray(field)  # __cuda_array_interface__: no copy
    assert y.data.ptr == field.__cuda_array_interface__['data'][0]
    cupy.testing.assert_array_equal(y, 2 * x)
    z = cupy.from_dlpack(field)
    assert z.data.ptr == y.data.ptr


def test_trace_context_manager(hc, ctx, tmp_path):
    import json
    path = tmp_path / 'run.json'
    with ctx.trace(str(path)):
        r = ctx.run('simpson', device='cpu', n=(17, 17, 17))
        live = ctx.trace_usage('cpu')
    assert r.times.compute > 0
    doc = json.loads(path.read_text())
    names = {e['args']['name'] for e in doc['traceEvents'] if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert {'host', 'cpu:0 queue'} <= names
    kernels = [e for e in doc['traceEvents'] if e.get('cat') == 'kernel']
    assert kernels and all(e['name'].startswith('simpson/') for e in kernels)
    usage = ctx.trace_usage('cpu')  # the last trace's, after it stopped
    assert usage['events'] >= live['events'] > 0
    assert abs(sum(e['dur'] for e in doc['traceEvents'] if e['ph'] == 'X' and e['tid'] == kernels[0]['tid']) * 1e-6 -
               (usage['compute_s'] + usage['transfer_s'])) <= 0.01 * (usage['compute_s'] + usage['transfer_s'])
    with pytest.raises(hc.IoError):
        with ctx.trace(str(tmp_path / 'missing' / 'x.json')):
            pass


def test_device_set_splits_the_run(hc, monkeypatch):
    """device="cpu:0,cpu:1" splits the run as hcrun --device=... does: the
    field is bit for bit the one-device field, Result.split has the parts."""
    monkeypatch.setenv('HC_CPU_DEVICES', '2')
    monkeypatch.setenv('HC_SPLIT_REBALANCE', 'off')  # the parts keep the rows the shares give
    c = hc.Context()
    try:
        one = c.run('jacobi', device='cpu:0', dim=2, n=65, iters=100)
        two = c.run('jacobi', device='cpu:0,cpu:1', split=(0.3, 0.7), dim=2, n=65, iters=100)
        assert np.array_equal(one.outputs['u'], two.outputs['u'])
        assert two.device == 'cpu:0,cpu:1' and one.split is None
        assert 'in-process transport' in two.split['plan']
        assert [p['rows'] for p in two.split['parts']] == [(0, 20), (20, 65)]
        assert [p['device'] for p in two.split['parts']] == ['cpu:0', 'cpu:1']
        assert all(p['halo_bytes'] > 0 for p in two.split['parts'])
        # cpu:1 never ran these parameters alone: no best single device yet
        assert 'cpu:1 alone' in two.split['best_single']['why']
        # split="auto" (the default): shares from the history (equal until
        # there is one), the same field whichever devices ran
        for split in ('auto', None):
            auto = c.run('jacobi', device='cpu:0,cpu:1', split=split, dim=2, n=65, iters=100)
            assert np.array_equal(one.outputs['u'], auto.outputs['u'])
            assert 'history' in (auto.split['plan'] if auto.split else auto.notes)
        with pytest.raises(hc.ParamError, match='listed twice'):
            c.run('jacobi', device='cpu:0,cpu:0', dim=2, n=65)
        with pytest.raises(hc.ParamError, match='needs a device set'):
            c.run('jacobi', device='cpu:0', split=(1, 2), dim=2, n=65)
        with pytest.raises(hc.ParamError, match='weights'):
            c.run('jacobi', device='cpu:0,cpu:1', split=(1, 2, 3), dim=2, n=65)
        even = c.run('jacobi', device='cpu:0,cpu:1', split='equal', dim=2, n=65, iters=100)
        assert [p['rows'] for p in even.split['parts']] == [(0, 33), (33, 65)]
        # arrays as input fields: each part takes its rows of f and u0
        rng = np.random.default_rng(5)
        f, u0 = rng.standard_normal((41, 37)), rng.standard_normal((41, 37)).astype(np.float32)
        one = c.run('jacobi', device='cpu:0', f=f, u0=u0, iters=40, tol=0)
        two = c.run('jacobi', device='cpu:0,cpu:1', split=(0.6, 0.4), f=f, u0=u0, iters=40, tol=0)
        assert [p['rows'] for p in two.split['parts']] == [(0, 25), (25, 41)]
        assert np.array_equal(one.outputs['u'], two.outputs['u'])
        with pytest.raises(hc.ParamError, match='input field f: 40 rows along axis 0, but the split divides 41'):
            c.run('jacobi', device='cpu:0,cpu:1', f=f[:40], n='41x37', iters=5)
        # a pipeline stage on a set takes the previous stage's u as its f and
        # u0; its StageResult.split says how it split (None: it did not)
        chain = 'jacobi dim=2 n=41x37 iters=20 tol=0 @cpu:0 | jacobi iters=30 tol=0 u>u0 @'
        alone, split = c.pipeline(chain + 'cpu:0').run(), c.pipeline(chain + 'cpu:0,cpu:1').run()
        assert alone.stages[1].split is None and split.stages[0].split is None
        assert np.array_equal(np.asarray(alone.stages[1].outputs['u']), np.asarray(split.stages[1].outputs['u']))
        parts = split.stages[1].split['parts'] if split.stages[1].split else []
        assert [p['device'] for p in parts] in ([], ['cpu:0', 'cpu:1'])
        assert not parts or (parts[0]['rows'][0] == 0 and parts[-1]['rows'][1] == 41)
    finally:
        c.close()
