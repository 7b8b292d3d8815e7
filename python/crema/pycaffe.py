"""pycaffe's Net and solver interface over crema's compiled core.

Net gains blobs, params, layer_dict, inputs, outputs, top_names, bottom_names, forward,
backward, forward_all and set_input_arrays, with pycaffe's names and keyword arguments; the
solver constructors take a solver prototxt as pycaffe's do.
"""
from collections import OrderedDict

import numpy as np

from . import _crema
from ._crema import Net, Solver

__all__ = ["Layer", "Net", "Solver", "SGDSolver", "NesterovSolver", "AdaGradSolver",
           "RMSPropSolver", "AdaDeltaSolver", "AdamSolver", "get_solver"]


def _blobs(self):
    """The blobs by name, in the order the net made them (an OrderedDict of Blob)."""
    return OrderedDict(zip(self._blob_names, self._blobs))


def _params(self):
    """The learnable parameters by layer name (an OrderedDict of lists of Blob), for every layer
    that has any: params['conv1'][0] is the filter, params['conv1'][1] the bias."""
    return OrderedDict((name, layer.blobs) for name, layer in zip(self._layer_names, self.layers)
                       if len(layer.blobs) > 0)


def _layer_dict(self):
    return OrderedDict(zip(self._layer_names, self.layers))


def _top_names(self):
    return OrderedDict(zip(self._layer_names, self._layer_tops))


def _bottom_names(self):
    return OrderedDict(zip(self._layer_names, self._layer_bottoms))


def _layer_index(self, name, what):
    names = list(self._layer_names)
    if name not in names:
        raise KeyError("%s: net %s has no layer named %r" % (what, self.name, name))
    return names.index(name)


def _fill(self, arrays, which, allowed, what):
    """Copies each keyword argument's array into the data or diff of the blob of its name."""
    blobs = self.blobs
    for name, value in arrays.items():
        if name not in allowed:
            raise KeyError("%s: %r is not one of the net's %s (%s)"
                           % (what, name, "inputs" if which == "data" else "outputs",
                              ", ".join(allowed)))
        target = getattr(blobs[name], which)
        value = np.asarray(value, dtype=np.float32)
        if value.shape != target.shape:
            raise ValueError("%s: %r has shape %s but the blob's is %s (reshape the blob first: "
                             "net.blobs[%r].reshape(...) and net.reshape())"
                             % (what, name, value.shape, target.shape, name))
        target[...] = value


def _require_blobs(net, names, what):
    known = set(net._blob_names)
    for name in names:
        if name not in known:
            raise KeyError("%s: net %s has no blob named %r" % (what, net.name, name))


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Runs the layers from start to end (layer names; default all) after copying the keyword
    arrays into the input blobs of their names. Returns the outputs (the end layer's tops when end
    is given), and the blobs listed in blobs, by name: arrays over the blobs' memory."""
    blobs = list(blobs or [])
    start_index = 0 if start is None else _layer_index(self, start, "forward")
    end_index = len(self.layers) - 1 if end is None else _layer_index(self, end, "forward")
    outputs = list(self._layer_tops[end_index]) if end is not None else list(self.outputs)
    _require_blobs(self, blobs, "forward")
    _fill(self, kwargs, "data", self.inputs, "forward")
    self._forward(start_index, end_index)
    all_blobs = self.blobs
    return {name: all_blobs[name].data for name in outputs + blobs}


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Runs backward from start to end (layer names; default all, last to first) after copying
    the keyword arrays into the diffs of the output blobs of their names. Returns the diffs of the
    inputs and of the blobs listed in diffs, by name."""
    diffs = list(diffs or [])
    start_index = len(self.layers) - 1 if start is None else _layer_index(self, start, "backward")
    end_index = 0 if end is None else _layer_index(self, end, "backward")
    outputs = list(self.inputs) if end is None else list(self._layer_bottoms[end_index])
    _require_blobs(self, diffs, "backward")
    _fill(self, kwargs, "diff", self.outputs, "backward")
    self._backward(start_index, end_index)
    all_blobs = self.blobs
    return {name: all_blobs[name].diff for name in outputs + diffs}


def _forward_all(self, blobs=None, **kwargs):
    """forward over inputs of any batch size: runs the net batch by batch (the last one padded)
    and returns every output (and blob of blobs) concatenated, one row per input row."""
    blobs = list(blobs or [])
    inputs = {name: np.asarray(v, dtype=np.float32) for name, v in kwargs.items()}
    if not inputs:
        return self.forward(blobs=blobs)
    counts = {len(v) for v in inputs.values()}
    if len(counts) != 1:
        raise ValueError("forward_all: the inputs have different numbers of rows")
    total = counts.pop()
    batch = self.blobs[next(iter(inputs))].shape[0]
    collected = {}
    for begin in range(0, total, batch):
        chunk = {}
        for name, values in inputs.items():
            part = values[begin:begin + batch]
            if len(part) < batch:
                pad = np.zeros((batch - len(part),) + part.shape[1:], dtype=np.float32)
                part = np.concatenate([part, pad])
            chunk[name] = part
        for name, out in self.forward(blobs=blobs, **chunk).items():
            collected.setdefault(name, []).append(out.copy())
    return {name: np.concatenate(parts)[:total] for name, parts in collected.items()}


def _set_input_arrays(self, data, labels, layer=None):
    """Hands a MemoryData layer (the first layer, or the one named) its examples: data N x C x H
    x W and N labels, N a multiple of its batch size. The layer keeps a copy."""
    index = 0 if layer is None else _layer_index(self, layer, "set_input_arrays")
    data = np.ascontiguousarray(data, dtype=np.float32)
    labels = np.ascontiguousarray(labels, dtype=np.float32).reshape(-1)
    self._set_input_arrays(data, labels, index)


Net.blobs = property(_blobs)
Net.params = property(_params)
Net.layer_dict = property(_layer_dict)
Net.top_names = property(_top_names)
Net.bottom_names = property(_bottom_names)
Net.inputs = property(lambda self: list(self._inputs))
Net.outputs = property(lambda self: list(self._outputs))
Net.forward = _forward
Net.backward = _backward
Net.forward_all = _forward_all
Net.set_input_arrays = _set_input_arrays


class Layer:
    """The base of layers written in Python: a net's layer of type "Python" with
    python_param { module: "M" layer: "C" param_str: "..." } is an object of class C of module M
    (found on sys.path), made with no arguments; param_str and phase are set, then setup runs.
    bottom and top are lists of Blob; backward's propagate_down says which bottoms need a
    gradient. setup and reshape run when the net is built, reshape again before every forward."""

    param_str = ""
    phase = _crema.TRAIN

    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        pass

    def forward(self, bottom, top):
        raise NotImplementedError("%s has no forward" % type(self).__name__)

    def backward(self, top, propagate_down, bottom):
        pass


def _solver_maker(type_name):
    """pycaffe's <type>Solver(filename): the solver of that type, whatever the file's type says."""
    def make(filename):
        return _crema._make_solver(filename, type_name)
    make.__name__ = make.__qualname__ = type_name + "Solver"
    make.__doc__ = "The %s solver of a solver prototxt, whatever its type field says." % type_name
    return make


SGDSolver = _solver_maker("SGD")
NesterovSolver = _solver_maker("Nesterov")
AdaGradSolver = _solver_maker("AdaGrad")
RMSPropSolver = _solver_maker("RMSProp")
AdaDeltaSolver = _solver_maker("AdaDelta")
AdamSolver = _solver_maker("Adam")


def get_solver(filename):
    """The solver of the type the file names (SGD when it names none)."""
    return _crema._make_solver(filename, "")
