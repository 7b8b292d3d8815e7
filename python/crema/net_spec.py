"""Nets written in Python, as pycaffe's NetSpec: layers.<Type>(bottoms..., **fields) makes a
layer and returns its top(s); assigning a top to an attribute of a NetSpec names it; to_proto()
gives the NetParameter, whose str() is the prototxt.

    n = NetSpec()
    n.data, n.label = layers.Data(source="train_lmdb", backend=params.Data.LMDB, batch_size=64,
                                  ntop=2, transform_param=dict(scale=1. / 255))
    n.ip = layers.InnerProduct(n.data, num_output=10, weight_filler=dict(type="xavier"))
    n.loss = layers.SoftmaxWithLoss(n.ip, n.label)
    open("net.prototxt", "w").write(str(n.to_proto()))

A keyword whose name ends in _param, or that LayerParameter has (name, include, param,
loss_weight, ...), sets that field; any other keyword is a field of the layer type's own
parameter message (num_output of convolution_param for a Convolution). Dicts fill messages,
lists fill repeated fields. ntop=N makes N tops (0 for none); in_place=True writes the top over
the bottom.
"""
from collections import Counter, OrderedDict


def _pb2():
    from .proto import crema_pb2
    return crema_pb2


# Layer types whose fields live in another type's message.
_SHARED_PARAM_FIELDS = {"Deconvolution": "convolution_param"}


def _param_field_names():
    """{layer type: the LayerParameter field of its parameters}, from the schema: a field of
    message type <Type>Parameter holds the parameters of layer type <Type>."""
    names = dict(_SHARED_PARAM_FIELDS)
    for field in _pb2().LayerParameter.DESCRIPTOR.fields:
        if field.name.endswith("_param") and field.message_type is not None:
            type_name = field.message_type.name
            if type_name.endswith("Parameter"):
                names.setdefault(type_name[:-len("Parameter")], field.name)
    return names


def assign_proto(proto, name, value):
    """Sets field name of proto from a Python value: a dict fills a message, a list a repeated
    field (a list of dicts adds one message per dict), anything else is assigned."""
    field = proto.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise AttributeError("%s has no field %r" % (proto.DESCRIPTOR.name, name))
    # Repeated fields are containers with extend (FieldDescriptor.label is gone from newer
    # protobuf releases).
    repeated = hasattr(getattr(proto, name), "extend")
    if repeated and not isinstance(value, (list, tuple)):
        value = [value]
    if isinstance(value, (list, tuple)):
        target = getattr(proto, name)
        for item in value:
            if isinstance(item, dict):
                message = target.add()
                for k, v in item.items():
                    assign_proto(message, k, v)
            else:
                target.append(item)
    elif isinstance(value, dict):
        for k, v in value.items():
            assign_proto(getattr(proto, name), k, v)
    else:
        setattr(proto, name, value)


class Top:
    """One output of a layer, named when a NetSpec attribute holds it (else automatically)."""

    def __init__(self, fn, n):
        self.fn = fn
        self.n = n

    def to_proto(self):
        """The NetParameter of this top and every layer it depends on."""
        return to_proto(self)

    def _to_proto(self, layers, names, autonames):
        return self.fn._to_proto(layers, names, autonames)


class Function:
    """A layer: its type, bottoms (Tops) and fields; it makes its Tops."""

    def __init__(self, type_name, inputs, params):
        self.type_name = type_name
        for i in inputs:
            if not isinstance(i, Top):
                raise TypeError("layers.%s: bottoms must be tops of other layers, got %r"
                                % (type_name, i))
        self.inputs = inputs
        self.params = dict(params)
        self.ntop = self.params.pop("ntop", 1)
        self.in_place = self.params.pop("in_place", False)
        if self.in_place and self.ntop != 1:
            raise ValueError("layers.%s: in_place needs exactly one top" % type_name)
        self.tops = tuple(Top(self, n) for n in range(self.ntop))

    def _top_name(self, top, names, autonames):
        if top not in names:
            autonames[top.fn.type_name] += 1
            names[top] = top.fn.type_name + str(autonames[top.fn.type_name])
        return names[top]

    def _layer_name(self, names, autonames):
        if self not in names:
            if self.ntop > 0:
                names[self] = self._top_name(self.tops[0], names, autonames)
            else:
                autonames[self.type_name] += 1
                names[self] = self.type_name + str(autonames[self.type_name])
        return names[self]

    def _to_proto(self, layers, names, autonames):
        if self in layers:
            return
        bottoms = []
        for inp in self.inputs:
            inp._to_proto(layers, names, autonames)
            bottoms.append(layers[inp.fn].top[inp.n])
        layer = _pb2().LayerParameter()
        layer.type = self.type_name
        layer.bottom.extend(bottoms)
        if self.in_place:
            layer.top.extend(layer.bottom)
        else:
            for top in self.tops:
                layer.top.append(self._top_name(top, names, autonames))
        layer.name = self._layer_name(names, autonames)
        own_field = _param_field_names().get(self.type_name)
        for k, v in self.params.items():
            if k.endswith("_param") or k in layer.DESCRIPTOR.fields_by_name or own_field is None:
                assign_proto(layer, k, v)
            else:
                assign_proto(getattr(layer, own_field), k, v)
        layers[self] = layer


def to_proto(*tops):
    """The NetParameter of the layers the tops depend on, in dependency order."""
    layers = OrderedDict()
    autonames = Counter()
    for top in tops:
        top.fn._to_proto(layers, {}, autonames)
    net = _pb2().NetParameter()
    net.layer.extend(layers.values())
    return net


class NetSpec:
    """Tops by name: n.conv1 = layers.Convolution(n.data, ...) names the layer and its top
    conv1; to_proto() writes every layer, in the order the names were assigned."""

    def __init__(self):
        super().__setattr__("tops", OrderedDict())

    def __setattr__(self, name, value):
        self.tops[name] = value

    def __getattr__(self, name):
        try:
            return self.tops[name]
        except KeyError:
            raise AttributeError("NetSpec has no top named %r" % name) from None

    def __setitem__(self, key, value):
        self.__setattr__(key, value)

    def __getitem__(self, item):
        return self.__getattr__(item)

    def __delitem__(self, name):
        del self.tops[name]

    def keys(self):
        return list(self.tops.keys())

    def vals(self):
        return list(self.tops.values())

    def to_proto(self):
        names = {v: k for k, v in self.tops.items()}
        autonames = Counter()
        layers = OrderedDict()
        for top in self.tops.values():
            top._to_proto(layers, names, autonames)
        net = _pb2().NetParameter()
        net.layer.extend(layers.values())
        return net


class Layers:
    """layers.<Type>(*bottoms, **fields): a layer of that type; returns its top, a tuple of tops
    (ntop > 1) or, for ntop=0, the layer."""

    def __getattr__(self, name):
        def make_layer(*args, **kwargs):
            fn = Function(name, args, kwargs)
            if fn.ntop == 0:
                return fn
            if fn.ntop == 1:
                return fn.tops[0]
            return fn.tops
        return make_layer


class Parameters:
    """params.<Type>.<VALUE>: the enum values of a type's parameter message, e.g.
    params.Pooling.MAX or params.Data.LMDB."""

    def __getattr__(self, name):
        message = getattr(_pb2(), name + "Parameter")

        class Param:
            def __getattr__(self, param_name):
                return getattr(message, param_name)
        return Param()


layers = Layers()
params = Parameters()
