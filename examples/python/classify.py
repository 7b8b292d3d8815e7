#!/usr/bin/env python3
"""Classifies images with a deploy net and its trained weights, as Caffe's classification
example does in pycaffe: load the net, set up a Transformer for the net's input, load each
image, run forward, print the top classes.

    PYTHONPATH=build/python examples/python/classify.py boot.png
    PYTHONPATH=build/python examples/python/classify.py --model deploy.prototxt \
        --weights net.caffemodel --labels synset_words.txt --mean 104,117,123 \
        --raw-scale 255 --channel-swap 2,1,0 cat.jpg

The defaults are the README's LeNet on Fashion-MNIST (grey images, values in [0, 1]).
"""
import argparse

import numpy as np

import crema as caffe


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("images", nargs="+")
    parser.add_argument("--model", default="models/lenet_fashion/lenet_deploy.prototxt")
    parser.add_argument("--weights",
                        default="models/lenet_fashion/snapshots/lenet_iter_10000.caffemodel")
    parser.add_argument("--labels", default="models/lenet_fashion/labels.txt")
    parser.add_argument("--mean", default="", help="per-channel means, e.g. 104,117,123")
    parser.add_argument("--raw-scale", type=float, default=1.0,
                        help="255 for nets trained on [0, 255] pixels")
    parser.add_argument("--channel-swap", default="", help="2,1,0 for nets trained on BGR")
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--gpu", action="store_true")
    args = parser.parse_args()

    if args.gpu:
        caffe.set_mode_gpu()
    net = caffe.Net(args.model, caffe.TEST, weights=args.weights)
    labels = [line.strip() for line in open(args.labels)] if args.labels else None
    channels = net.blobs["data"].data.shape[1]

    # One image per forward: batch 1.
    net.blobs["data"].reshape(1, *net.blobs["data"].data.shape[1:])
    net.reshape()
    transformer = caffe.io.Transformer({"data": net.blobs["data"].data.shape})
    transformer.set_transpose("data", (2, 0, 1))  # H x W x C to C x H x W
    if args.channel_swap:
        transformer.set_channel_swap("data", [int(c) for c in args.channel_swap.split(",")])
    transformer.set_raw_scale("data", args.raw_scale)
    if args.mean:
        transformer.set_mean("data", np.array([float(m) for m in args.mean.split(",")]))

    for path in args.images:
        image = caffe.io.load_image(path, color=channels == 3)
        net.blobs["data"].data[...] = transformer.preprocess("data", image)
        probabilities = net.forward()[net.outputs[0]][0]
        print("---------- Prediction for %s ----------" % path)
        for k in probabilities.argsort()[::-1][:args.top]:
            print("%.4f - \"%s\"" % (probabilities[k], labels[k] if labels else k))


if __name__ == "__main__":
    main()
