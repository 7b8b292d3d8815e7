"""Images and arrays in and out of nets, with pycaffe's caffe.io names: Transformer (an image as
read, H x W x K in [0, 1], into a net's C x H x W input and back), load_image, resize_image,
oversample, and conversions between numpy arrays and the BlobProto and Datum messages."""
import numpy as np

from . import _crema


def _proto():
    # Imported when needed: the rest of crema works without Python's protobuf package.
    from .proto import crema_pb2
    return crema_pb2


# ---- arrays and messages ------------------------------------------------------------------------

def blobproto_to_array(blob, return_diff=False):
    """A BlobProto's data (or diff) as an array of its shape (num x channels x height x width for
    the legacy fields)."""
    if return_diff:
        values = np.array(blob.diff if len(blob.diff) else blob.double_diff, dtype=np.float32)
    else:
        values = np.array(blob.data if len(blob.data) else blob.double_data, dtype=np.float32)
    if any(blob.HasField(f) for f in ("num", "channels", "height", "width")):
        return values.reshape(blob.num, blob.channels, blob.height, blob.width)
    return values.reshape(tuple(blob.shape.dim))


def array_to_blobproto(arr, diff=None):
    """A BlobProto holding arr (and diff, of the same shape) with arr's shape."""
    arr = np.asarray(arr)
    blob = _proto().BlobProto()
    blob.shape.dim.extend(arr.shape)
    blob.data.extend(arr.astype(np.float32).flat)
    if diff is not None:
        diff = np.asarray(diff)
        if diff.shape != arr.shape:
            raise ValueError("array_to_blobproto: diff has shape %s, data %s"
                             % (diff.shape, arr.shape))
        blob.diff.extend(diff.astype(np.float32).flat)
    return blob


def arraylist_to_blobprotovector_str(arraylist):
    """A serialized BlobProtoVector of the arrays."""
    vector = _proto().BlobProtoVector()
    vector.blobs.extend([array_to_blobproto(arr) for arr in arraylist])
    return vector.SerializeToString()


def blobprotovector_str_to_arraylist(text):
    vector = _proto().BlobProtoVector()
    vector.ParseFromString(text)
    return [blobproto_to_array(blob) for blob in vector.blobs]


def load_blobproto(path):
    """The array of a .binaryproto file (a mean image), read by crema's checked reader."""
    blob = _proto().BlobProto()
    blob.ParseFromString(_crema._read_binary(path, "BlobProto"))
    return blobproto_to_array(blob)


def array_to_datum(arr, label=None):
    """A Datum of a channels x height x width array: raw bytes for uint8, float_data else."""
    arr = np.asarray(arr)
    if arr.ndim != 3:
        raise ValueError("array_to_datum: the array must be channels x height x width, got shape %s"
                         % (arr.shape,))
    datum = _proto().Datum()
    datum.channels, datum.height, datum.width = arr.shape
    if arr.dtype == np.uint8:
        datum.data = arr.tobytes()
    else:
        datum.float_data.extend(arr.astype(np.float32).flat)
    if label is not None:
        datum.label = int(label)
    return datum


def datum_to_array(datum):
    """A Datum's values as a channels x height x width array (uint8 for raw bytes)."""
    shape = (datum.channels, datum.height, datum.width)
    if len(datum.data):
        return np.frombuffer(datum.data, dtype=np.uint8).reshape(shape)
    return np.array(datum.float_data, dtype=np.float32).reshape(shape)


# ---- images -------------------------------------------------------------------------------------

def load_image(filename, color=True):
    """An image file as float32 in [0, 1], height x width x 3 in RGB order (color) or height x
    width x 1 (gray). Decoded by crema's image reader (OpenCV)."""
    chw = _crema._decode_image(filename, bool(color))
    image = chw.transpose(1, 2, 0) / np.float32(255)
    if color:
        image = image[:, :, ::-1]  # the reader's BGR to RGB, as skimage reads
    return np.ascontiguousarray(image, dtype=np.float32)


def resize_image(im, new_dims, interp_order=1):
    """im (height x width x K) resized to new_dims (height, width): bilinear for interp_order 1,
    nearest for 0, sampling at pixel centres."""
    im = np.asarray(im, dtype=np.float32)
    if im.ndim == 2:
        im = im[:, :, np.newaxis]
    height, width = int(new_dims[0]), int(new_dims[1])
    if (height, width) == im.shape[:2]:
        return im.copy()
    if interp_order not in (0, 1):
        raise ValueError("resize_image: interp_order must be 0 (nearest) or 1 (bilinear)")

    def source(n_out, n_in):
        pos = (np.arange(n_out, dtype=np.float64) + 0.5) * n_in / n_out - 0.5
        return np.clip(pos, 0, n_in - 1)

    y, x = source(height, im.shape[0]), source(width, im.shape[1])
    if interp_order == 0:
        return im[np.rint(y).astype(int)][:, np.rint(x).astype(int)]
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    y1, x1 = np.minimum(y0 + 1, im.shape[0] - 1), np.minimum(x0 + 1, im.shape[1] - 1)
    wy, wx = (y - y0)[:, None, None], (x - x0)[None, :, None]
    top = im[y0][:, x0] * (1 - wx) + im[y0][:, x1] * wx
    bottom = im[y1][:, x0] * (1 - wx) + im[y1][:, x1] * wx
    return (top * (1 - wy) + bottom * wy).astype(np.float32)


def oversample(images, crop_dims):
    """Ten crops of each image (N x H x W x K): the four corners and the centre, and their
    mirrors, as in Caffe's classifier."""
    im_shape = np.array(images[0].shape)
    crop_dims = np.array(crop_dims)
    im_center = im_shape[:2] / 2.0
    h_indices = (0, im_shape[0] - crop_dims[0])
    w_indices = (0, im_shape[1] - crop_dims[1])
    crops_ix = [(i, j, i + crop_dims[0], j + crop_dims[1]) for i in h_indices for j in w_indices]
    centre = np.tile(im_center, (1, 2))[0] + np.concatenate([-crop_dims / 2.0, crop_dims / 2.0])
    crops_ix.append(tuple(centre.astype(int)))
    crops = []
    for im in images:
        for y0, x0, y1, x1 in crops_ix:
            crops.append(im[int(y0):int(y1), int(x0):int(x1), :])
        crops.extend([c[:, ::-1, :] for c in crops[-5:]])
    return np.asarray(crops, dtype=np.float32)


# ---- Transformer --------------------------------------------------------------------------------

class Transformer:
    """Turns images as loaded (H x W x K) into a net's input (C x H x W) and back.

    inputs: {input name: its shape (N, C, H, W)}, e.g. {"data": net.blobs["data"].data.shape}.
    preprocess applies, in order: resize to the input's H x W, transpose, channel swap, raw
    scale, mean subtraction, input scale; deprocess undoes them in reverse.
    """

    def __init__(self, inputs):
        self.inputs = {name: tuple(int(d) for d in shape) for name, shape in inputs.items()}
        self.transpose = {}
        self.channel_swap = {}
        self.raw_scale = {}
        self.mean = {}
        self.input_scale = {}

    def _check_input(self, in_):
        if in_ not in self.inputs:
            raise KeyError("Transformer: %r is not one of the inputs (%s)"
                           % (in_, ", ".join(self.inputs)))

    def preprocess(self, in_, data):
        self._check_input(in_)
        out = np.asarray(data, dtype=np.float32)
        in_dims = self.inputs[in_][2:]
        if out.shape[:2] != in_dims:
            out = resize_image(out, in_dims)
        if in_ in self.transpose:
            out = out.transpose(self.transpose[in_])
        if in_ in self.channel_swap:
            out = out[list(self.channel_swap[in_]), :, :]
        out = np.array(out, dtype=np.float32)  # a copy: the scalings below are in place
        if in_ in self.raw_scale:
            out *= self.raw_scale[in_]
        if in_ in self.mean:
            out -= self.mean[in_]
        if in_ in self.input_scale:
            out *= self.input_scale[in_]
        return out

    def deprocess(self, in_, data):
        self._check_input(in_)
        out = np.array(data, dtype=np.float32).squeeze()
        if in_ in self.input_scale:
            out /= self.input_scale[in_]
        if in_ in self.mean:
            out += self.mean[in_]
        if in_ in self.raw_scale:
            out /= self.raw_scale[in_]
        if in_ in self.channel_swap:
            out = out[np.argsort(self.channel_swap[in_]), :, :]
        if in_ in self.transpose:
            out = out.transpose(np.argsort(self.transpose[in_]))
        return out

    def set_transpose(self, in_, order):
        """The axis order from the image's (H, W, K) to the input's: (2, 0, 1) for C x H x W."""
        self._check_input(in_)
        if len(order) != len(self.inputs[in_]) - 1:
            raise ValueError("set_transpose: the order must name %d axes"
                             % (len(self.inputs[in_]) - 1))
        self.transpose[in_] = tuple(order)

    def set_channel_swap(self, in_, order):
        """The channel order after transposing: (2, 1, 0) turns RGB into BGR."""
        self._check_input(in_)
        if len(order) != self.inputs[in_][1]:
            raise ValueError("set_channel_swap: the order must name the input's %d channels"
                             % self.inputs[in_][1])
        self.channel_swap[in_] = tuple(order)

    def set_raw_scale(self, in_, scale):
        """Multiplies the image before the mean is subtracted (255 for images in [0, 1] and a
        mean in [0, 255])."""
        self._check_input(in_)
        self.raw_scale[in_] = scale

    def set_mean(self, in_, mean):
        """Subtracts mean: one value per channel, or an image of the input's C x H x W."""
        self._check_input(in_)
        mean = np.asarray(mean, dtype=np.float32)
        channels = self.inputs[in_][1]
        if mean.ndim == 1:
            if mean.shape[0] != channels:
                raise ValueError("set_mean: %d channel means for an input of %d channels"
                                 % (mean.shape[0], channels))
            mean = mean[:, np.newaxis, np.newaxis]
        else:
            if mean.ndim == 2:
                mean = mean[np.newaxis]
            if mean.shape != self.inputs[in_][1:]:
                raise ValueError("set_mean: a mean of shape %s for an input of %s"
                                 % (mean.shape, self.inputs[in_][1:]))
        self.mean[in_] = mean

    def set_input_scale(self, in_, scale):
        """Multiplies the input after the mean is subtracted."""
        self._check_input(in_)
        self.input_scale[in_] = scale
