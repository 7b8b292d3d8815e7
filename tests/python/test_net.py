"""crema.Net with pycaffe's names: construction, blobs and params as numpy views of the net's
memory, forward and backward with their keyword arguments, weights in and out, reshaping, the
device mode, and the errors of bad calls (raised, never a crash)."""
import numpy as np
import pytest

import crema as caffe


def random_input(net, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, net.blobs["data"].shape).astype(np.float32)


def reference_forward(net, x):
    """The small net's forward in numpy, from its parameters as Python sees them."""
    w, b = net.params["conv"][0].data, net.params["conv"][1].data
    conv = np.zeros((x.shape[0], 5, 2, 2), np.float32)
    for i in range(2):
        for j in range(2):
            patch = x[:, :, i:i + 3, j:j + 3].reshape(x.shape[0], -1)
            conv[:, :, i, j] = patch @ w.reshape(5, -1).T + b
    relu = np.maximum(conv, 0)
    ip = relu.reshape(x.shape[0], -1) @ net.params["ip"][0].data.T + net.params["ip"][1].data
    e = np.exp(ip - ip.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_names_phases_and_both_constructors(small_net_file, tmp_path):
    net = caffe.Net(small_net_file, caffe.TEST)
    assert net.phase == caffe.TEST and net.name == "small"
    assert list(net.blobs) == ["data", "conv", "ip", "prob"]
    assert list(net.params) == ["conv", "ip"]
    assert net.inputs == ["data"] and net.outputs == ["prob"]
    assert [l.type for l in net.layers] == ["Input", "Convolution", "ReLU", "InnerProduct",
                                            "Softmax"]
    assert list(net.layer_dict) == ["data", "conv", "relu", "ip", "prob"]
    assert [b.shape for b in net.layer_dict["conv"].blobs] == [(5, 3, 3, 3), (5,)]
    assert net.top_names["relu"] == ["conv"] and net.bottom_names["ip"] == ["conv"]
    blob = net.blobs["conv"]
    assert (blob.num, blob.channels, blob.height, blob.width, blob.count) == (2, 5, 2, 2, 40)
    assert net.params["conv"][1].data.tolist() == pytest.approx([0.1] * 5)
    weights = str(tmp_path / "small.caffemodel")
    net.save(weights)
    # Net(file, weights, phase) and Net(file, phase, weights=...) load the same weights.
    for other in (caffe.Net(small_net_file, weights, caffe.TEST),
                  caffe.Net(small_net_file, caffe.TEST, weights=weights)):
        np.testing.assert_array_equal(other.params["conv"][0].data, net.params["conv"][0].data)
    assert caffe.Net(small_net_file, caffe.TRAIN).phase == caffe.TRAIN


def test_forward_matches_numpy_and_returns_outputs(small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    x = random_input(net)
    out = net.forward(data=x)
    assert list(out) == ["prob"]
    np.testing.assert_allclose(out["prob"], reference_forward(net, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["prob"].sum(axis=1), 1, rtol=1e-6)


def test_numpy_views_alias_blob_memory(small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    x = random_input(net)
    data = net.blobs["data"].data
    data[...] = x  # written through the view, no forward(data=...)
    prob = net.forward()["prob"]
    np.testing.assert_allclose(prob, reference_forward(net, x), rtol=1e-5, atol=1e-6)
    # An array taken before forward sees what forward wrote: it is the blob's memory.
    held = net.blobs["prob"].data
    net.blobs["data"].data[...] = 2 * x
    net.forward()
    np.testing.assert_allclose(held, reference_forward(net, 2 * x), rtol=1e-5, atol=1e-6)
    # Parameters too: zeroing the weights through the view leaves the uniform softmax.
    net.params["ip"][0].data[...] = 0
    net.params["ip"][1].data[...] = 0
    np.testing.assert_allclose(net.forward()["prob"], 0.25, rtol=1e-6)
    assert np.shares_memory(net.blobs["conv"].data, net.blobs["conv"].data)


def test_forward_start_end_and_blobs(small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    x = random_input(net)
    out = net.forward(data=x, end="relu")
    assert list(out) == ["conv"]
    assert (out["conv"] >= 0).all()
    before = net.blobs["prob"].data.copy()
    out = net.forward(start="ip", blobs=["ip"])
    assert set(out) == {"prob", "ip"}
    assert not np.array_equal(before, out["prob"])
    np.testing.assert_allclose(out["prob"], reference_forward(net, x), rtol=1e-5, atol=1e-6)


def test_backward_gives_input_and_parameter_gradients(small_net_file):
    # Seeded weights: the numeric derivative below steps 1e-2 along one input, which must cross
    # no ReLU kink (with the fillers' random weights it did in one run of six).
    caffe.set_random_seed(3)
    net = caffe.Net(small_net_file, caffe.TEST)
    x = random_input(net)
    net.forward(data=x)
    top = np.random.RandomState(1).normal(size=net.blobs["prob"].shape).astype(np.float32)
    grads = net.backward(prob=top, diffs=["ip"])
    assert set(grads) == {"data", "ip"}
    # Softmax backward: dip = p * (top - sum(top * p)).
    p = net.blobs["prob"].data
    expected_ip = p * (top - (top * p).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(grads["ip"], expected_ip, rtol=1e-4, atol=1e-6)
    # The bias gradient of ip is the sum over the batch; backward accumulates it.
    np.testing.assert_allclose(net.params["ip"][1].diff, expected_ip.sum(axis=0), rtol=1e-4,
                               atol=1e-6)
    assert np.abs(grads["data"]).sum() > 0
    # Numeric check of one input element through the whole net.
    eps, k = 1e-2, (1, 2, 1, 3)
    xp, xm = x.copy(), x.copy()
    xp[k] += eps
    xm[k] -= eps
    numeric = ((reference_forward(net, xp) - reference_forward(net, xm)) * top).sum() / (2 * eps)
    assert grads["data"][k] == pytest.approx(numeric, rel=2e-2, abs=1e-4)
    partial = net.backward(start="prob", end="ip")
    assert list(partial) == ["conv"]


def test_copy_from_save_and_share_with(small_net_file, tmp_path):
    a = caffe.Net(small_net_file, caffe.TEST)
    a.params["ip"][0].data[...] = 0.5
    path = str(tmp_path / "a.caffemodel")
    a.save(path)
    b = caffe.Net(small_net_file, caffe.TEST)
    assert not np.array_equal(b.params["ip"][0].data, a.params["ip"][0].data)
    b.copy_from(path)
    np.testing.assert_array_equal(b.params["ip"][0].data, 0.5)
    c = caffe.Net(small_net_file, caffe.TEST)
    c.share_with(a)
    a.params["conv"][0].data[...] = 0.25
    np.testing.assert_array_equal(c.params["conv"][0].data, 0.25)


def test_blob_reshape_and_net_reshape(small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    net.blobs["data"].reshape(5, 3, 4, 4)
    net.reshape()
    assert net.blobs["prob"].data.shape == (5, 4)
    x = np.random.RandomState(3).uniform(-1, 1, (5, 3, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(net.forward(data=x)["prob"], reference_forward(net, x), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(caffe.Error, match="negative"):
        net.blobs["data"].reshape(-1, 3, 4, 4)
    with pytest.raises(caffe.Error, match="integer"):
        net.blobs["data"].reshape(2.5, 3)


def test_forward_all_batches_any_count(small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    x = np.random.RandomState(4).uniform(-1, 1, (5, 3, 4, 4)).astype(np.float32)
    out = net.forward_all(data=x)
    assert out["prob"].shape == (5, 4)
    np.testing.assert_allclose(out["prob"], reference_forward(net, x), rtol=1e-5, atol=1e-6)


def test_memory_data_set_input_arrays(tmp_path):
    path = tmp_path / "memory.prototxt"
    path.write_text("""
        layer { name: "data" type: "MemoryData" top: "data" top: "label"
                memory_data_param { batch_size: 2 channels: 1 height: 2 width: 2 } }
        layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
                inner_product_param { num_output: 1 weight_filler { type: "constant" value: 1 } } }
        layer { name: "silence" type: "Silence" bottom: "label" }
    """)
    net = caffe.Net(str(path), caffe.TEST)
    data = np.arange(16, dtype=np.float32).reshape(4, 1, 2, 2)
    net.set_input_arrays(data, np.array([0, 1, 2, 3], np.float32))
    np.testing.assert_allclose(net.forward()["fc"].ravel(), [6, 22])
    np.testing.assert_allclose(net.forward()["fc"].ravel(), [38, 54])
    np.testing.assert_array_equal(net.blobs["label"].data, [2, 3])
    with pytest.raises(caffe.Error, match="multiple of batch_size"):
        net.set_input_arrays(data[:3], np.zeros(3, np.float32))
    with pytest.raises(caffe.Error, match="N x 1 x 2 x 2"):
        net.set_input_arrays(np.zeros((2, 3, 2, 2), np.float32), np.zeros(2, np.float32))
    with pytest.raises(caffe.Error, match="needs a MemoryData layer"):
        net.set_input_arrays(data, np.zeros(4, np.float32), layer="fc")


def test_modes_and_device(small_net_file):
    caffe.set_mode_cpu()
    caffe.set_random_seed(1)
    assert "Convolution" in caffe.layer_type_list()
    try:
        caffe.set_mode_gpu()
    except caffe.Error as e:  # a machine without a GPU: one clear error, the mode unchanged
        assert "no GPU" in str(e)
        with pytest.raises(caffe.Error, match="no GPU 7"):
            caffe.set_device(7)
    else:
        caffe.set_device(0)
        net = caffe.Net(small_net_file, caffe.TEST)
        x = random_input(net)
        # TF32, the GPU's default math for convolution and InnerProduct: 10-bit mantissas.
        np.testing.assert_allclose(net.forward(data=x)["prob"], reference_forward(net, x),
                                   rtol=1e-2, atol=1e-3)
        grads = net.backward(prob=np.ones((2, 4), np.float32))
        np.testing.assert_allclose(grads["data"], 0, atol=1e-4)  # softmax of a constant diff
        # Host copies on a GPU are synchronized: written from Python, read back after forward.
        net.params["ip"][0].data[...] = 0
        net.params["ip"][1].data[...] = 0
        np.testing.assert_allclose(net.forward()["prob"], 0.25, rtol=1e-6)
    finally:
        caffe.set_mode_cpu()


def test_bad_calls_raise(small_net_file, tmp_path):
    with pytest.raises(caffe.Error, match="missing.prototxt"):
        caffe.Net(str(tmp_path / "missing.prototxt"), caffe.TEST)
    bad = tmp_path / "bad.prototxt"
    bad.write_text('layer { name: "x" type: "Input" top: "x"\n  nonsense: 3 }\n')
    with pytest.raises(caffe.Error, match=r"bad.prototxt:2"):
        caffe.Net(str(bad), caffe.TEST)
    with pytest.raises(caffe.Error, match="phase"):
        caffe.Net(small_net_file, 7)
    with pytest.raises(caffe.Error, match="missing.caffemodel"):
        caffe.Net(small_net_file, str(tmp_path / "missing.caffemodel"), caffe.TEST)
    garbage = tmp_path / "garbage.caffemodel"
    garbage.write_bytes(b"\xff\x00 not a net")
    net = caffe.Net(small_net_file, caffe.TEST)
    with pytest.raises(caffe.Error, match="garbage.caffemodel"):
        net.copy_from(str(garbage))
    with pytest.raises(KeyError):
        net.blobs["no_such_blob"]
    with pytest.raises(KeyError, match="not one of the net's inputs"):
        net.forward(no_such_blob=np.zeros(1))
    with pytest.raises(ValueError, match=r"shape \(2, 3, 5, 5\)"):
        net.forward(data=np.zeros((2, 3, 5, 5)))
    with pytest.raises(KeyError, match="no layer named"):
        net.forward(end="no_such_layer")
    with pytest.raises(KeyError, match="no blob named"):
        net.forward(blobs=["no_such_blob"])
    with pytest.raises(caffe.Error, match="comes after"):
        net.forward(start="prob", end="conv")
    with pytest.raises(KeyError, match="outputs"):
        net.backward(data=np.zeros((2, 3, 4, 4)))
    with pytest.raises(caffe.Error, match="cannot"):
        net.save(str(tmp_path / "no_such_folder" / "x.caffemodel"))
    # The net still works after every refused call.
    x = random_input(net)
    np.testing.assert_allclose(net.forward(data=x)["prob"], reference_forward(net, x), rtol=1e-5,
                               atol=1e-6)
