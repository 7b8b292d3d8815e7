"""crema: Caffe-compatible training and inference, with pycaffe's names.

    import crema as caffe
    net = caffe.Net("deploy.prototxt", "weights.caffemodel", caffe.TEST)
    net.blobs["data"].data[...] = image
    probabilities = net.forward()["prob"]
"""
from ._crema import (TEST, TRAIN, Blob, Error, export_onnx, image_io_available, layer_type_list,
                     set_device, set_mode_cpu, set_mode_gpu, set_random_seed, solver_types)
from .pycaffe import (AdaDeltaSolver, AdaGradSolver, AdamSolver, Layer, NesterovSolver, Net,
                      RMSPropSolver, SGDSolver, Solver, get_solver)
from . import draw, io
from .classifier import Classifier
from .net_spec import NetSpec, layers, params, to_proto

__all__ = ["TEST", "TRAIN", "Blob", "Classifier", "Error", "Layer", "Net", "Solver", "SGDSolver",
           "NesterovSolver", "AdaGradSolver", "RMSPropSolver", "AdaDeltaSolver", "AdamSolver",
           "get_solver", "set_mode_cpu", "set_mode_gpu", "set_device", "set_random_seed",
           "layer_type_list", "solver_types", "image_io_available", "draw", "io", "NetSpec",
           "layers", "params", "to_proto", "export_onnx"]
