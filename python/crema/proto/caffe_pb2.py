"""pycaffe's name for the schema's classes: the same messages as crema_pb2 (the field names and
numbers are Caffe's)."""
from .crema_pb2 import *  # noqa: F401,F403
from .crema_pb2 import DESCRIPTOR  # noqa: F401
