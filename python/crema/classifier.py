"""pycaffe's Classifier: a deploy net with its Transformer set up from the arguments, and
predict() for images as loaded (H x W x K in [0, 1]), optionally averaged over ten crops."""
import numpy as np

from . import io
from ._crema import TEST
from .pycaffe import Net


class Classifier(Net):
    """Classifier(model_file, pretrained_file, image_dims=None, mean=None, input_scale=None,
    raw_scale=None, channel_swap=None): images are resized to image_dims (default: the net's
    input size), cropped to the input size, transposed to C x H x W, then channel_swap,
    raw_scale, mean and input_scale apply as in io.Transformer."""

    def __init__(self, model_file, pretrained_file, image_dims=None, mean=None, input_scale=None,
                 raw_scale=None, channel_swap=None):
        Net.__init__(self, model_file, pretrained_file, TEST)
        name = self.inputs[0]
        shape = self.blobs[name].data.shape
        self.transformer = io.Transformer({name: shape})
        self.transformer.set_transpose(name, (2, 0, 1))
        if mean is not None:
            self.transformer.set_mean(name, mean)
        if input_scale is not None:
            self.transformer.set_input_scale(name, input_scale)
        if raw_scale is not None:
            self.transformer.set_raw_scale(name, raw_scale)
        if channel_swap is not None:
            self.transformer.set_channel_swap(name, channel_swap)
        self.crop_dims = np.array(shape[2:])
        self.image_dims = np.array(image_dims if image_dims is not None else self.crop_dims)

    def predict(self, inputs, oversample=True):
        """The net's first output for each image of inputs (a list of H x W x K arrays): one row
        per image, the mean over Caffe's ten crops with oversample, else the centre crop."""
        height, width = (int(d) for d in self.image_dims)
        images = np.stack([io.resize_image(np.asarray(im, np.float32), (height, width))
                           for im in inputs])
        crop_h, crop_w = (int(d) for d in self.crop_dims)
        if oversample:
            crops = io.oversample(images, (crop_h, crop_w))
        else:
            top, left = (height - crop_h) // 2, (width - crop_w) // 2
            crops = images[:, top:top + crop_h, left:left + crop_w, :]
        name = self.inputs[0]
        batch = np.stack([self.transformer.preprocess(name, crop) for crop in crops])
        predictions = self.forward_all(**{name: batch})[self.outputs[0]]
        if oversample:
            predictions = predictions.reshape(len(inputs), 10, -1).mean(axis=1)
        return predictions
