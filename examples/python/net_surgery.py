#!/usr/bin/env python3
"""Net surgery, as Caffe's net_surgery example: LeNet's fully connected layers become
convolutions, so that the classifier slides over an image larger than 28 x 28 and gives a map of
class probabilities, one per 28 x 28 window (every 4 pixels).

The fully connected ip1 (500 x 800, over pool2's 50 x 4 x 4) holds the same numbers as a 4 x 4
convolution with 500 outputs, and ip2 (10 x 500) as a 1 x 1 convolution: the weights are copied
over flat, through the numpy views of net.params. Writes the convolutional net's prototxt and
weights, checks that on a 28 x 28 input it gives what the original gives, and prints the map's
classes for an input made of four test images (an ankle boot, a pullover, two trousers).

    PYTHONPATH=build/python examples/python/net_surgery.py [--weights W] [--out DIR]
"""
import argparse
import gzip
import os

import numpy as np

import crema as caffe
from crema import layers as L, params as P


def fully_convolutional_lenet(height, width):
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, height, width]))
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20)
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50)
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    # ip1 and ip2 as convolutions: new names, so copy_from leaves them for the surgery.
    n["ip1-conv"] = L.Convolution(n.pool2, kernel_size=4, num_output=500)
    n.relu1 = L.ReLU(n["ip1-conv"], in_place=True)
    n["ip2-conv"] = L.Convolution(n.relu1, kernel_size=1, num_output=10)
    n.prob = L.Softmax(n["ip2-conv"])
    return n.to_proto()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="models/lenet_fashion/lenet_deploy.prototxt")
    parser.add_argument("--weights",
                        default="models/lenet_fashion/snapshots/lenet_iter_10000.caffemodel")
    parser.add_argument("--out", default="guide/surgery")
    parser.add_argument("--images", default="",
                        help="a .npy of four 28 x 28 images in [0, 1] to tile (default: the "
                        "first four Fashion-MNIST test images)")
    parser.add_argument("--fashion-mnist",
                        default=os.environ.get("FASHION_MNIST_DIR",
                                               "/usr/share/datasets/fashion-mnist"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    net = caffe.Net(args.model, args.weights, caffe.TEST)
    params = ["ip1", "ip2"]
    for pr in params:
        print("%s weights are %s dimensional and biases are %s dimensional"
              % (pr, net.params[pr][0].data.shape, net.params[pr][1].data.shape))

    # A 56 x 56 input: a 2 x 2 tiling of 28 x 28 images.
    conv_file = os.path.join(args.out, "lenet_full_conv.prototxt")
    with open(conv_file, "w") as f:
        f.write(str(fully_convolutional_lenet(56, 56)))
    net_full_conv = caffe.Net(conv_file, args.weights, caffe.TEST)
    params_full_conv = ["ip1-conv", "ip2-conv"]
    for conv in params_full_conv:
        print("%s weights are %s dimensional and biases are %s dimensional"
              % (conv, net_full_conv.params[conv][0].data.shape,
                 net_full_conv.params[conv][1].data.shape))

    # The surgery: the same numbers, in the convolutions' shapes.
    for pr, conv in zip(params, params_full_conv):
        net_full_conv.params[conv][0].data.flat = net.params[pr][0].data.flat
        net_full_conv.params[conv][1].data[...] = net.params[pr][1].data
    weights_out = os.path.join(args.out, "lenet_full_conv.caffemodel")
    net_full_conv.save(weights_out)

    if args.images:
        tiles = np.load(args.images).astype(np.float32)[:4]
    else:
        with gzip.open(os.path.join(args.fashion_mnist, "t10k-images-idx3-ubyte.gz")) as f:
            pixels = np.frombuffer(f.read(), np.uint8, offset=16)[:4 * 28 * 28]
        tiles = pixels.reshape(4, 28, 28).astype(np.float32) / 255
    image = np.block([[tiles[0], tiles[1]], [tiles[2], tiles[3]]])

    # Each 28 x 28 window of the big input is what the original net classifies: the corner
    # windows are the four tiles.
    net.blobs["data"].reshape(4, 1, 28, 28)
    net.reshape()
    original = net.forward(data=tiles[:, None])["prob"]
    full = net_full_conv.forward(data=image[None, None])["prob"][0]
    print("probability map: %s (classes x rows x columns)" % (full.shape,))
    corners = [full[:, 0, 0], full[:, 0, -1], full[:, -1, 0], full[:, -1, -1]]
    worst = max(np.abs(c - o).max() for c, o in zip(corners, original))
    print("corner windows against the original net: max difference %.2e" % worst)
    print("classes of the windows:")
    print(full.argmax(axis=0))
    print("wrote %s and %s" % (conv_file, weights_out))
    if worst > 1e-4:
        raise SystemExit("the convolutional net disagrees with the original")


if __name__ == "__main__":
    main()
