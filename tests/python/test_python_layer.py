"""Layers written in Python (type "Python", python_param), as Caffe's: forward and backward
through crema.Layer subclasses in nets made from Python, a solver training through a Python loss
layer, their errors, and `crema train` running such a net with the interpreter it embeds."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import BUILD_DIR, REGRESSION_NET

import crema as caffe

LAYERS = '''
import numpy as np
import crema


class Scale(crema.Layer):
    """top = factor * bottom, the factor given in param_str."""

    def setup(self, bottom, top):
        if len(bottom) != 1:
            raise Exception("Scale takes one bottom")
        self.factor = float(self.param_str)

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.factor * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        if propagate_down[0]:
            bottom[0].diff[...] = self.factor * top[0].diff


class EuclideanLoss(crema.Layer):
    """Half the mean squared distance between two bottoms, per example."""

    def setup(self, bottom, top):
        if len(bottom) != 2:
            raise Exception("EuclideanLoss takes two bottoms")

    def reshape(self, bottom, top):
        if bottom[0].count != bottom[1].count:
            raise Exception("the bottoms differ in size")
        self.diff = np.zeros(bottom[0].data.shape, np.float32)
        top[0].reshape(1)

    def forward(self, bottom, top):
        self.diff[...] = bottom[0].data - bottom[1].data
        top[0].data[...] = np.sum(self.diff ** 2) / bottom[0].num / 2.0

    def backward(self, top, propagate_down, bottom):
        for i, sign in ((0, 1), (1, -1)):
            if propagate_down[i]:
                bottom[i].diff[...] = sign * top[0].diff[0] * self.diff / bottom[i].num


class Broken(crema.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(1)

    def forward(self, bottom, top):
        raise ValueError("broken on purpose")
'''

SCALE_NET = """
layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "scale" type: "Python" bottom: "x" top: "y"
        python_param { module: "crema_test_layers" layer: "Scale" param_str: "3" } }
force_backward: true
"""


@pytest.fixture
def layers_module(tmp_path, monkeypatch):
    (tmp_path / "crema_test_layers.py").write_text(LAYERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def net_file(folder, text, name="net.prototxt"):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_forward_and_backward_through_a_python_layer(layers_module):
    net = caffe.Net(net_file(layers_module, SCALE_NET), caffe.TEST)
    assert [l.type for l in net.layers] == ["Input", "Python"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(net.forward(x=x)["y"], 3 * x)
    grads = net.backward(y=np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(grads["x"], 3)
    # The layer follows its input's shape.
    net.blobs["x"].reshape(4, 3)
    net.reshape()
    assert net.forward(x=np.ones((4, 3)))["y"].shape == (4, 3)


def test_python_layer_on_a_gpu(layers_module):
    """On a machine with a GPU: the layer works on host copies, synchronized both ways."""
    try:
        caffe.set_mode_gpu()
    except caffe.Error:
        pytest.skip("no GPU")
    try:
        net = caffe.Net(net_file(layers_module, SCALE_NET), caffe.TEST)
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(net.forward(x=x)["y"], 3 * x)
        np.testing.assert_array_equal(net.backward(y=np.ones((2, 3)))["x"], 3)
    finally:
        caffe.set_mode_cpu()


def test_solver_trains_through_a_python_loss(layers_module):
    text = REGRESSION_NET.replace(
        'layer { name: "loss" type: "EuclideanLoss" bottom: "fc" bottom: "y" top: "loss" }',
        'layer { name: "loss" type: "Python" bottom: "fc" bottom: "y" top: "loss" loss_weight: 1 '
        'python_param { module: "crema_test_layers" layer: "EuclideanLoss" } }')
    net = net_file(layers_module, text)
    solver_path = layers_module / "solver.prototxt"
    solver_path.write_text('net: "%s"\nbase_lr: 0.1\nmomentum: 0.9\nlr_policy: "fixed"\n'
                           'max_iter: 1000\nsnapshot_prefix: "%s"\n'
                           % (net, layers_module / "snap"))
    solver = caffe.SGDSolver(str(solver_path))
    rng = np.random.RandomState(0)
    true_w = np.array([[0.5, -1.0, 2.0]], np.float32)
    losses = []
    for _ in range(200):
        x = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
        solver.net.blobs["x"].data[...] = x
        solver.net.blobs["y"].data[...] = x @ true_w.T + 0.25
        solver.step(1)
        losses.append(float(solver.net.blobs["loss"].data[0]))
    assert np.mean(losses[-10:]) < 0.01 * np.mean(losses[:5])
    np.testing.assert_allclose(solver.net.params["fc"][0].data, true_w, atol=0.05)


def test_python_layer_errors_raise(layers_module):
    missing = SCALE_NET.replace("crema_test_layers", "no_such_module")
    with pytest.raises(caffe.Error,
                       match=r"layer scale \(Python\).*No module named 'no_such_module'"):
        caffe.Net(net_file(layers_module, missing), caffe.TEST)
    bad_param = SCALE_NET.replace('param_str: "3"', 'param_str: "three"')
    with pytest.raises(caffe.Error, match=r"Scale.setup: ValueError"):
        caffe.Net(net_file(layers_module, bad_param), caffe.TEST)
    no_class = SCALE_NET.replace('layer: "Scale"', 'layer: "Nothing"')
    with pytest.raises(caffe.Error, match="Nothing"):
        caffe.Net(net_file(layers_module, no_class), caffe.TEST)
    unnamed = SCALE_NET.replace('module: "crema_test_layers" ', "")
    with pytest.raises(caffe.Error, match="needs module and layer"):
        caffe.Net(net_file(layers_module, unnamed), caffe.TEST)
    broken = caffe.Net(net_file(layers_module, SCALE_NET.replace("Scale", "Broken")), caffe.TEST)
    with pytest.raises(caffe.Error, match=r"Broken.forward: ValueError: broken on purpose"):
        broken.forward(x=np.ones((2, 3)))
    # The interpreter and the net go on.
    with pytest.raises(caffe.Error, match="broken on purpose"):
        broken.forward()


def test_crema_train_embeds_the_interpreter(layers_module):
    tool = os.path.join(BUILD_DIR, "crema")
    net = net_file(layers_module, """
        name: "python_loss"
        layer { name: "data" type: "DummyData" top: "x" top: "y"
                dummy_data_param { shape { dim: 16 dim: 4 } shape { dim: 16 dim: 1 }
                                   data_filler { type: "gaussian" }
                                   data_filler { type: "constant" value: 2 } } }
        layer { name: "fc" type: "InnerProduct" bottom: "x" top: "fc"
                inner_product_param { num_output: 1 weight_filler { type: "constant" } } }
        layer { name: "scale" type: "Python" bottom: "fc" top: "scaled"
                python_param { module: "crema_test_layers" layer: "Scale" param_str: "0.5" } }
        layer { name: "loss" type: "Python" bottom: "scaled" bottom: "y" top: "loss"
                loss_weight: 1
                python_param { module: "crema_test_layers" layer: "EuclideanLoss" } }
    """)
    (layers_module / "solver.prototxt").write_text(
        'net: "%s"\nbase_lr: 0.2\nlr_policy: "fixed"\nmax_iter: 60\ndisplay: 20\n'
        'snapshot_prefix: "%s"\nsolver_mode: CPU\n' % (net, layers_module / "snap"))
    # The layers' module comes from PYTHONPATH; the crema package from the build tree.
    env = dict(os.environ, PYTHONPATH=str(layers_module))
    run = subprocess.run([tool, "train", "--solver=solver.prototxt"], cwd=str(layers_module),
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    losses = [float(v)
              for v in re.findall(r"Iteration \d+[ ,].*loss = ([0-9.e+-]+)", run.stderr)]
    # The bias learns y / 0.5 = 4 through both Python layers: the loss falls from 2 to ~0.
    assert len(losses) >= 3 and losses[0] > 1.5 and losses[-1] < 0.01 * losses[0], run.stderr
    assert os.path.exists(str(layers_module / "snap_iter_60.caffemodel"))

    # A Python exception stops training with crema's one-line error and exit status 1.
    (layers_module / "crema_test_layers.py").write_text(
        LAYERS.replace("self.factor = float(self.param_str)", "raise KeyError('no factor')"))
    run = subprocess.run([tool, "train", "--solver=solver.prototxt", "--overwrite_snapshots"],
                         cwd=str(layers_module), env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1
    assert re.search(r"crema: error: .*layer scale \(Python\): .*Scale.setup: KeyError: "
                     r"'no factor'", run.stderr), run.stderr[-2000:]
