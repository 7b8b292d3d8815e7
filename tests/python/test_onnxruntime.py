"""The reference nets' deploy definitions with random weights, exported to ONNX with a symbolic
batch axis and run by onnxruntime (where it is installed; Debian 12 has none, so CI skips this
file): its outputs must match crema's own forward on the CPU within 1e-4 of the largest output,
at batch 1 and 8. VGG-16 and ResNet-50 take minutes on a small machine: they run where
CREMA_ONNX_BIG_NETS=1."""
import os

import numpy as np
import pytest

import crema as caffe
from conftest import SOURCE_DIR

# crema first, then onnxruntime: the order in which onnxruntime 1.30 once crashed in its own
# import, binding symbols the module exported (python/src/module.map).
try:
    import onnxruntime  # noqa: F401
except ImportError:
    pass

NETS = ["lenet_fashion/lenet_deploy.prototxt", "cifar10_quick/deploy.prototxt",
        "caffenet/deploy.prototxt", "googlenet/deploy.prototxt"]
if os.environ.get("CREMA_ONNX_BIG_NETS") == "1":
    NETS += ["vgg16/deploy.prototxt", "resnet50/deploy.prototxt"]


def randomize(net, rng):
    """Uniform weights scaled by fan-in (activations stay near unit size through 50 layers);
    BatchNorm: means in [-1, 1], variances in [0.5, 1], the running-average weight 2."""
    for layer, params in net.params.items():
        batch_norm = net.layer_dict[layer].type == "BatchNorm"
        for i, p in enumerate(params):
            hi = 1.0
            if i == 0 and p.data.ndim >= 2:
                hi = float(np.sqrt(3.0 * p.data.shape[0] / p.data.size))
            lo = 0.5 if batch_norm and i == 1 else -hi
            p.data[...] = rng.uniform(lo, hi, p.data.shape)
            if batch_norm and i == 2:
                p.data[...] = 2.0


@pytest.mark.parametrize("model", NETS)
def test_onnxruntime_matches_crema(tmp_path, model):
    ort = pytest.importorskip("onnxruntime")
    caffe.set_mode_cpu()
    path = os.path.join(SOURCE_DIR, "models", model)
    net = caffe.Net(path, caffe.TEST)
    randomize(net, np.random.default_rng(7))
    weights = str(tmp_path / "random.caffemodel")
    net.save(weights)
    onnx_file = str(tmp_path / "net.onnx")
    caffe.export_onnx(path, weights, onnx_file, dynamic_batch=True)
    session = ort.InferenceSession(onnx_file, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for batch in (1, 8):
        net = caffe.Net(path, weights, caffe.TEST)
        rng = np.random.default_rng(batch)
        feeds = {}
        for name in net.inputs:
            shape = (batch,) + net.blobs[name].data.shape[1:]
            net.blobs[name].reshape(*shape)
            feeds[name] = rng.uniform(-1, 1, shape).astype(np.float32)
        net.reshape()
        ours = net.forward(**feeds)
        theirs = dict(zip(names, session.run(None, feeds)))
        assert sorted(ours) == sorted(theirs)
        for name, value in ours.items():
            scale = max(float(np.abs(value).max()), 1e-30)
            error = float(np.abs(theirs[name] - value).max()) / scale
            assert error <= 1e-4, f"{model} batch {batch} {name}: off by {error:.3g}"
