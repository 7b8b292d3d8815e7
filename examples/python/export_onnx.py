#!/usr/bin/env python3
"""Exports a deploy net with its trained weights to ONNX (opset 17) and checks the file: onnx's
full checker (Debian's python3-onnx), the graph's inputs and outputs, and, where onnxruntime is
installed, its outputs against crema's own forward on the same random inputs, at two batch sizes
of one model exported with a symbolic batch axis.

    PYTHONPATH=build/python examples/python/export_onnx.py \\
        --model models/lenet_fashion/lenet_deploy.prototxt --weights lenet.caffemodel \\
        --onnx lenet.onnx
"""
import argparse

import numpy as np

import crema as caffe

try:
    import onnxruntime
except ImportError:
    onnxruntime = None


def shape_text(value):
    dims = value.type.tensor_type.shape.dim
    return "(" + ", ".join(d.dim_param or str(d.dim_value) for d in dims) + ")"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the deploy prototxt")
    parser.add_argument("--weights", required=True, help="its .caffemodel")
    parser.add_argument("--onnx", required=True, help="the model to write")
    parser.add_argument("--batches", default="1,8", help="batch sizes onnxruntime is run at")
    args = parser.parse_args()

    caffe.export_onnx(args.model, args.weights, args.onnx, dynamic_batch=True)
    print("wrote", args.onnx)
    try:
        import onnx
    except ImportError:
        print("the onnx package is not installed: no further checks")
        return
    model = onnx.load(args.onnx)
    onnx.checker.check_model(model, full_check=True)
    print("checker: passed (opset %d, %d nodes)" % (model.opset_import[0].version,
                                                   len(model.graph.node)))
    for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
        for v in values:
            print("%s: %s %s" % (kind, v.name, shape_text(v)))
    if onnxruntime is None:
        print("onnxruntime is not installed: outputs not compared")
        return
    session = onnxruntime.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
    for batch in [int(b) for b in args.batches.split(",")]:
        net = caffe.Net(args.model, args.weights, caffe.TEST)
        rng = np.random.default_rng(batch)
        feeds = {}
        for name in net.inputs:
            shape = (batch,) + net.blobs[name].data.shape[1:]
            net.blobs[name].reshape(*shape)
            feeds[name] = rng.uniform(-1, 1, shape).astype(np.float32)
        net.reshape()
        ours = net.forward(**feeds)
        theirs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        for name, value in ours.items():
            scale = max(1.0, float(np.abs(value).max()))
            error = float(np.abs(theirs[name] - value).max()) / scale
            print("batch %d, %s: max error %.3g relative to the largest output" % (batch, name,
                                                                                     error))


if __name__ == "__main__":
    main()
