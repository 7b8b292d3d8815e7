"""The schema's message classes (protoc's crema_pb2; caffe_pb2 is the same module under
pycaffe's name): crema.proto.caffe_pb2.NetParameter, BlobProto, Datum, SolverParameter, ..."""
import importlib as _importlib
import sys as _sys

# crema_pb2 imports the schema's other files as protoc names them, top-level modules
# (`import crema_tensors_pb2`): they are this package's, loaded here in dependency order.
for _name in ("crema_tensors_pb2", "crema_layer_params_pb2", "crema_legacy_pb2"):
    _sys.modules.setdefault(_name, _importlib.import_module("." + _name, __name__))
