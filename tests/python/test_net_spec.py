"""crema.NetSpec, layers (L) and params (P): LeNet written in Python as Caffe's 01-learning-lenet
writes it, the prototxt it gives, and that crema builds it; crema.draw over the same net."""
import os
import shutil

import pytest

import crema as caffe
from crema import layers as L, params as P
from crema.proto import caffe_pb2
from google.protobuf import text_format


def lenet(lmdb, batch_size):
    n = caffe.NetSpec()
    n.data, n.label = L.Data(batch_size=batch_size, backend=P.Data.LMDB, source=lmdb,
                             transform_param=dict(scale=1. / 255), ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20, weight_filler=dict(type="xavier"))
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50,
                            weight_filler=dict(type="xavier"))
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.fc1 = L.InnerProduct(n.pool2, num_output=500, weight_filler=dict(type="xavier"),
                           param=[dict(lr_mult=1), dict(lr_mult=2)])
    n.relu1 = L.ReLU(n.fc1, in_place=True)
    n.score = L.InnerProduct(n.relu1, num_output=10, weight_filler=dict(type="xavier"))
    n.loss = L.SoftmaxWithLoss(n.score, n.label)
    return n.to_proto()


def test_lenet_prototxt_text():
    proto = lenet("train_lmdb", 64)
    text = str(proto)
    assert 'type: "Data"' in text and 'source: "train_lmdb"' in text and "backend: LMDB" in text
    assert "pool: MAX" in text and "lr_mult: 2" in text
    layers = {l.name: l for l in proto.layer}
    assert list(layers) == ["data", "conv1", "pool1", "conv2", "pool2", "fc1", "relu1", "score",
                            "loss"]
    assert list(layers["data"].top) == ["data", "label"]
    assert list(layers["relu1"].bottom) == ["fc1"] and list(layers["relu1"].top) == ["fc1"]
    assert list(layers["score"].bottom) == ["fc1"]
    assert layers["conv1"].convolution_param.num_output == 20
    assert list(layers["conv1"].convolution_param.kernel_size) == [5]
    assert layers["data"].transform_param.scale == pytest.approx(1 / 255)
    # The text parses back to the same message.
    assert text_format.Parse(text, caffe_pb2.NetParameter()) == proto


def test_generated_prototxt_builds_in_crema(tmp_path):
    n = caffe.NetSpec()
    n.data = L.Input(shape=[dict(dim=[2, 1, 28, 28])])
    n.conv = L.Convolution(n.data, kernel_size=5, num_output=4, weight_filler=dict(type="xavier"),
                           include=dict(phase=caffe.TEST))
    n.pool = L.Pooling(n.conv, kernel_size=2, stride=2, pool=P.Pooling.AVE)
    n.ip = L.InnerProduct(n.pool, num_output=3)
    n.deconv = L.Deconvolution(n.pool, convolution_param=dict(num_output=2, kernel_size=2,
                                                              stride=2))
    n.prob, n.argmax = L.Softmax(n.ip), L.ArgMax(n.ip)
    path = tmp_path / "gen.prototxt"
    path.write_text(str(n.to_proto()))
    net = caffe.Net(str(path), caffe.TEST)
    assert net.blobs["pool"].data.shape == (2, 4, 12, 12)
    assert net.blobs["deconv"].data.shape == (2, 2, 24, 24)
    assert net.blobs["prob"].data.shape == (2, 3)
    assert sorted(net.outputs) == ["argmax", "deconv", "prob"]
    # to_proto over tops names unnamed tops automatically.
    unnamed = caffe.to_proto(L.ReLU(L.Input(shape=dict(dim=[1, 2]))))
    assert [l.name for l in unnamed.layer] == ["Input1", "ReLU1"]


def test_bad_specs_raise():
    with pytest.raises(AttributeError, match="no field 'no_such_field'"):
        caffe.to_proto(L.Convolution(L.Input(), no_such_field=3))
    with pytest.raises(TypeError, match="bottoms"):
        L.ReLU("data")
    with pytest.raises(AttributeError):
        P.NoSuchLayer.MAX


def test_draw_net(tmp_path):
    proto = lenet("train_lmdb", 64)
    dot = caffe.draw.net_to_dot(proto, "TB")
    assert "conv1" in dot and "rankdir=TB" in dot.replace('"', "").replace(" ", "")
    dot_file = tmp_path / "lenet.dot"
    caffe.draw.draw_net_to_file(proto, str(dot_file), "LR", phase=caffe.TRAIN)
    assert "pool2" in dot_file.read_text()
    with pytest.raises(caffe.Error, match="rankdir"):
        caffe.draw.draw_net_to_file(proto, str(tmp_path / "x.dot"), "XX")
    with pytest.raises(ValueError, match="phase"):
        caffe.draw.net_to_dot(proto, phase=5)
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    svg = tmp_path / "lenet.svg"
    caffe.draw.draw_net_to_file(proto, str(svg))
    assert "<svg" in svg.read_text()
    assert caffe.draw.draw_net(proto, ext="svg").startswith(b"<?xml")
    # A prototxt path works too.
    source = os.path.join(os.environ.get("CREMA_SOURCE_DIR", "."),
                          "models/lenet_fashion/lenet_deploy.prototxt")
    assert "ip2" in caffe.draw.net_to_dot(source)
