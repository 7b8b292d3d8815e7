"""The solvers with pycaffe's names: every type fits a linear regression fed from Python through
its Input layers; step, iter, net, test_nets, snapshot, restore and solve; Ctrl-C; bad solver
files."""
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import crema as caffe

TRUE_W = np.array([[0.5, -1.0, 2.0]], np.float32)
TRUE_B = 0.25

SOLVER = """
net: "{net}"
test_iter: 2
test_interval: 1000
base_lr: {lr}
lr_policy: "fixed"
max_iter: {max_iter}
display: 0
snapshot_prefix: "{prefix}"
random_seed: 1
{extra}
"""

TYPES = {
    "SGDSolver": ("SGD", 0.1, "momentum: 0.9"),
    "NesterovSolver": ("Nesterov", 0.1, "momentum: 0.9"),
    "AdaGradSolver": ("AdaGrad", 0.5, ""),
    "RMSPropSolver": ("RMSProp", 0.05, "rms_decay: 0.9"),
    "AdaDeltaSolver": ("AdaDelta", 1.0, "momentum: 0.9 delta: 1e-2"),
    "AdamSolver": ("Adam", 0.1, "momentum: 0.9 momentum2: 0.999"),
}


def solver_file(tmp_path, net, lr=0.1, max_iter=300, extra="", type_line=""):
    path = tmp_path / "solver.prototxt"
    path.write_text(SOLVER.format(net=net, lr=lr, max_iter=max_iter,
                                  prefix=tmp_path / "snap", extra=extra + "\n" + type_line))
    return str(path)


def feed(net, rng):
    x = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    net.blobs["x"].data[...] = x
    net.blobs["y"].data[...] = x @ TRUE_W.T + TRUE_B


@pytest.mark.parametrize("constructor", sorted(TYPES))
def test_every_solver_fits_a_regression(constructor, tmp_path, regression_net_file):
    type_name, lr, extra = TYPES[constructor]
    solver = getattr(caffe, constructor)(solver_file(tmp_path, regression_net_file, lr, 300, extra))
    assert solver.type == type_name
    rng = np.random.RandomState(0)
    losses = []
    for _ in range(300):
        feed(solver.net, rng)
        solver.step(1)
        losses.append(float(solver.net.blobs["loss"].data))
    assert solver.iter == 300
    assert np.mean(losses[-20:]) < 0.05 * np.mean(losses[:5])
    np.testing.assert_allclose(solver.net.params["fc"][0].data, TRUE_W, atol=0.1)
    np.testing.assert_allclose(solver.net.params["fc"][1].data, [TRUE_B], atol=0.1)


def test_step_snapshot_restore_and_test_nets(tmp_path, regression_net_file):
    path = solver_file(tmp_path, regression_net_file, extra="momentum: 0.9")
    solver = caffe.get_solver(path)
    assert solver.type == "SGD"
    rng = np.random.RandomState(0)
    for _ in range(10):
        feed(solver.net, rng)
        solver.step(1)
    state = solver.snapshot()
    assert state.endswith("snap_iter_10.solverstate") and os.path.exists(state)
    assert os.path.exists(str(tmp_path / "snap_iter_10.caffemodel"))
    weights = solver.net.params["fc"][0].data.copy()
    # The test net shares the train net's weights.
    (test_net,) = solver.test_nets
    np.testing.assert_array_equal(test_net.params["fc"][0].data, weights)
    feed(test_net, rng)
    loss = test_net.forward()["loss"]
    assert loss > 0
    scores = solver.test_all()
    assert list(scores[0]) == ["loss"]
    for _ in range(5):
        feed(solver.net, rng)
        solver.step(1)
    assert solver.iter == 15
    assert not np.array_equal(solver.net.params["fc"][0].data, weights)
    solver.restore(state)
    assert solver.iter == 10
    np.testing.assert_array_equal(solver.net.params["fc"][0].data, weights)
    # A second solver resumes from the state through solve(resume_file).
    again = caffe.SGDSolver(solver_file(tmp_path, regression_net_file, max_iter=12,
                                        extra="momentum: 0.9"))
    feed(again.net, rng)
    again.solve(state)
    assert again.iter == 12


def test_solve_refuses_to_overwrite_unless_asked(tmp_path, regression_net_file):
    path = solver_file(tmp_path, regression_net_file, max_iter=4, extra="snapshot: 2")
    solver = caffe.SGDSolver(path)
    feed(solver.net, np.random.RandomState(0))
    solver.solve()
    assert solver.iter == 4 and os.path.exists(str(tmp_path / "snap_iter_4.caffemodel"))
    second = caffe.SGDSolver(path)
    with pytest.raises(caffe.Error, match="snapshot"):
        second.solve()
    assert not second.overwrite_snapshots
    second.overwrite_snapshots = True
    assert second.overwrite_snapshots
    second.solve()
    assert second.iter == 4


def test_bad_solver_files_raise(tmp_path, regression_net_file):
    with pytest.raises(caffe.Error, match="missing_solver.prototxt"):
        caffe.SGDSolver(str(tmp_path / "missing_solver.prototxt"))
    with pytest.raises(caffe.Error, match="no_such.prototxt"):
        caffe.SGDSolver(solver_file(tmp_path, tmp_path / "no_such.prototxt"))
    with pytest.raises(caffe.Error, match="Bogus"):
        caffe.get_solver(solver_file(tmp_path, regression_net_file, type_line='type: "Bogus"'))
    solver = caffe.SGDSolver(solver_file(tmp_path, regression_net_file))
    with pytest.raises(caffe.Error, match="missing.solverstate"):
        solver.restore(str(tmp_path / "missing.solverstate"))
    assert "Adam" in caffe.solver_types()


def test_gpu_training_matches_cpu(tmp_path, regression_net_file):
    """On a machine with a GPU: the same steps, inputs written through the host copies, give
    the CPU's weights."""
    try:
        caffe.set_mode_gpu()
    except caffe.Error:
        pytest.skip("no GPU")
    try:
        weights = []
        for gpu in (True, False):
            if gpu:
                caffe.set_mode_gpu()
            else:
                caffe.set_mode_cpu()
            solver = caffe.SGDSolver(solver_file(tmp_path, regression_net_file,
                                                 extra="momentum: 0.9"))
            rng = np.random.RandomState(0)
            for _ in range(20):
                feed(solver.net, rng)
                solver.step(1)
            weights.append(solver.net.params["fc"][0].data.copy())
            assert float(solver.net.blobs["loss"].data) > 0
        # TF32 is the GPU's default math for InnerProduct: 10-bit mantissas.
        np.testing.assert_allclose(weights[0], weights[1], rtol=2e-2, atol=1e-3)
    finally:
        caffe.set_mode_cpu()


def test_ctrl_c_stops_step_with_keyboard_interrupt(tmp_path, regression_net_file):
    script = tmp_path / "long_step.py"
    script.write_text(
        "import crema\n"
        "solver = crema.SGDSolver(%r)\n"
        "print('stepping', flush=True)\n"
        "try:\n"
        "    solver.step(10 ** 9)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted after', solver.iter, flush=True)\n"
        % solver_file(tmp_path, regression_net_file, max_iter=10 ** 9))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "stepping"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    iterations = int(re.search(r"interrupted after (\d+)", out).group(1))
    assert 0 < iterations < 10 ** 9
