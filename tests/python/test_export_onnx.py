"""crema.export_onnx: from files and from a Net in memory; the file read back by the onnx package
(Debian's python3-onnx, when installed) passes its full checker and holds the net's weights."""
import numpy as np
import pytest

import crema as caffe


def _exported(tmp_path, small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    weights = str(tmp_path / "small.caffemodel")
    net.save(weights)
    path = tmp_path / "small.onnx"
    caffe.export_onnx(small_net_file, weights, str(path), batch=3)
    return net, path


def test_export_from_files_writes_a_checked_model(tmp_path, small_net_file):
    net, path = _exported(tmp_path, small_net_file)
    onnx = pytest.importorskip("onnx")
    numpy_helper = pytest.importorskip("onnx.numpy_helper")
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 17
    assert [i.name for i in model.graph.input] == ["data"]
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [3, 3, 4, 4]
    assert [o.name for o in model.graph.output] == ["prob"]
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(weights["conv/weight"], net.params["conv"][0].data)
    np.testing.assert_array_equal(weights["ip/bias"], net.params["ip"][1].data)
    assert [n.op_type for n in model.graph.node] == ["Conv", "Relu", "Flatten", "Gemm", "Softmax"]


def test_export_from_a_net_in_memory(tmp_path, small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    net.params["conv"][0].data[...] = 0.25  # surgery before the export reaches the file
    path = tmp_path / "surgery.onnx"
    caffe.export_onnx(net, path, dynamic_batch=True)
    onnx = pytest.importorskip("onnx")
    numpy_helper = pytest.importorskip("onnx.numpy_helper")
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    conv = [t for t in model.graph.initializer if t.name == "conv/weight"][0]
    assert np.all(numpy_helper.to_array(conv) == 0.25)


def test_export_errors_raise(tmp_path, small_net_file):
    with pytest.raises(caffe.Error, match="missing.caffemodel"):
        caffe.export_onnx(small_net_file, str(tmp_path / "missing.caffemodel"),
                          str(tmp_path / "x.onnx"))
    net = caffe.Net(small_net_file, caffe.TEST)
    with pytest.raises(caffe.Error, match="onnx_file"):
        caffe.export_onnx(net)
    text = open(small_net_file).read() + (
        'layer { name: "pyramid" type: "SPP" bottom: "conv" top: "spp" '
        'spp_param { pyramid_height: 2 } }\n')
    mvn = tmp_path / "mvn.prototxt"
    mvn.write_text(text)
    with pytest.raises(caffe.Error, match=r"layer pyramid \(SPP\): ONNX export does not support"):
        caffe.export_onnx(caffe.Net(str(mvn), caffe.TEST), str(tmp_path / "x.onnx"))
