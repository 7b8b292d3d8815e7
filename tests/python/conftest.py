"""Shared fixtures of the Python module's tests: small nets written to a temporary folder, and
where the build tree and the repository are (ctest sets CREMA_BUILD_DIR and CREMA_SOURCE_DIR)."""
import gzip
import os
import subprocess
import textwrap

import numpy as np
import pytest

BUILD_DIR = os.environ.get("CREMA_BUILD_DIR", "build")
SOURCE_DIR = os.environ.get("CREMA_SOURCE_DIR", ".")
FASHION_MNIST_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")

# An input of 2 x 3 x 4 x 4, a convolution, ReLU in place, a fully connected layer and a
# softmax: every kind of blob (input, in-place, parameters, output).
SMALL_NET = """
name: "small"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 2 dim: 3 dim: 4 dim: 4 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 5 kernel_size: 3
                            weight_filler { type: "gaussian" std: 0.1 }
                            bias_filler { type: "constant" value: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
force_backward: true
"""

# Linear regression: y = x W' + b against a target with a Euclidean loss; inputs set from
# Python before each step, as pycaffe scripts feed Input layers.
REGRESSION_NET = """
name: "regression"
layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 8 dim: 3 } } }
layer { name: "y" type: "Input" top: "y" input_param { shape { dim: 8 dim: 1 } } }
layer { name: "fc" type: "InnerProduct" bottom: "x" top: "fc"
        inner_product_param { num_output: 1 weight_filler { type: "constant" value: 0 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "fc" bottom: "y" top: "loss" }
"""


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def small_net_file(tmp_path):
    return write(tmp_path / "small.prototxt", SMALL_NET)


@pytest.fixture
def regression_net_file(tmp_path):
    return write(tmp_path / "regression.prototxt", REGRESSION_NET)


def fashion_mnist_or_skip():
    if not os.path.exists(os.path.join(FASHION_MNIST_DIR, "t10k-images-idx3-ubyte.gz")):
        pytest.skip("no Fashion-MNIST in %s (Debian: dataset-fashion-mnist)" % FASHION_MNIST_DIR)


def make_fashion_lmdbs(folder):
    """The Fashion-MNIST training and test LMDBs, made as the repository makes them
    (data/get_fashion_mnist.sh): by the built convert_mnist."""
    fashion_mnist_or_skip()
    tool = os.path.join(BUILD_DIR, "convert_mnist")
    lmdbs = []
    for prefix, name in (("train", "train"), ("t10k", "test")):
        lmdb = os.path.join(str(folder), "fashion_mnist_%s_lmdb" % name)
        subprocess.run([tool, os.path.join(FASHION_MNIST_DIR, prefix + "-images-idx3-ubyte.gz"),
                        os.path.join(FASHION_MNIST_DIR, prefix + "-labels-idx1-ubyte.gz"), lmdb],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lmdbs.append(lmdb)
    return lmdbs


def fashion_test_images(count):
    """The first count test images (count x 28 x 28 uint8) and their labels."""
    fashion_mnist_or_skip()
    with gzip.open(os.path.join(FASHION_MNIST_DIR, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:count]
    with gzip.open(os.path.join(FASHION_MNIST_DIR, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:count]
    return images, labels


def write_pgm(path, gray):
    """A binary PGM (P5) of an H x W uint8 array: a format OpenCV reads, written without any
    imaging package."""
    h, w = gray.shape
    with open(str(path), "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h) + gray.astype(np.uint8).tobytes())
    return str(path)
