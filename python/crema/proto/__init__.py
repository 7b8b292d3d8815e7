"""The schema's message classes (protoc's crema_pb2; caffe_pb2 is the same module under
pycaffe's name): crema.proto.caffe_pb2.NetParameter, BlobProto, Datum, SolverParameter, ..."""
