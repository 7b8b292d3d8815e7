"""Drawings of nets with Graphviz, as pycaffe's caffe.draw, made by crema's own drawing code (the
one `crema draw` uses): a box per layer with its type and shaping parameters, an octagon per
blob, edges from bottoms through layers to tops.

    from crema.proto import caffe_pb2
    from google.protobuf import text_format
    net = text_format.Merge(open("net.prototxt").read(), caffe_pb2.NetParameter())
    crema.draw.draw_net_to_file(net, "net.png", "LR", phase=crema.TRAIN)

A net may also be given as the path of its prototxt (old V0/V1 formats are upgraded).
"""
import os
import tempfile

from . import _crema


def _serialized(caffe_net):
    if isinstance(caffe_net, (str, os.PathLike)):
        return _crema._read_net_text(os.fspath(caffe_net))
    return caffe_net.SerializeToString()


def _phase_name(phase):
    if phase is None:
        return ""
    if phase in (_crema.TRAIN, _crema.TEST):
        return "TRAIN" if phase == _crema.TRAIN else "TEST"
    raise ValueError("phase must be crema.TRAIN, crema.TEST or None, got %r" % (phase,))


def net_to_dot(caffe_net, rankdir="LR", phase=None):
    """The graph in Graphviz's DOT language. phase keeps that phase's layers (None: all)."""
    return _crema._net_to_dot(_serialized(caffe_net), rankdir, _phase_name(phase))


def draw_net_to_file(caffe_net, filename, rankdir="LR", phase=None):
    """Draws the net into filename, in the format its extension names (.png, .svg, .pdf; .dot
    for the graph's text). rankdir: LR, RL, TB or BT."""
    _crema._draw_net(_serialized(caffe_net), rankdir, _phase_name(phase), os.fspath(filename))


def draw_net(caffe_net, rankdir="LR", ext="png", phase=None):
    """The drawing's bytes in format ext."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "net." + ext)
        draw_net_to_file(caffe_net, path, rankdir, phase)
        with open(path, "rb") as f:
            return f.read()
