"""The Python examples (examples/python) run as a user runs them, on a LeNet trained briefly on
Fashion-MNIST here: classify.py names most test images, net_surgery.py's convolutional net agrees
with the original, finetune_lenet.py's pretrained net beats the one from scratch; and
crema.Classifier, pycaffe's class for what classify.py does, names most test images; export_onnx.py
writes a model that passes onnx's checker."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import (SOURCE_DIR, fashion_test_images, make_fashion_lmdbs, write_pgm)

import crema as caffe

EXAMPLES = os.path.join(SOURCE_DIR, "examples", "python")
DEPLOY = os.path.join(SOURCE_DIR, "models/lenet_fashion/lenet_deploy.prototxt")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """LMDBs and the weights of the README's LeNet after 200 iterations."""
    folder = tmp_path_factory.mktemp("lenet")
    train_lmdb, test_lmdb = make_fashion_lmdbs(folder)
    train_test = os.path.join(SOURCE_DIR, "models/lenet_fashion/lenet_train_test.prototxt")
    text = open(train_test).read().replace("data/fashion_mnist/fashion_mnist_train_lmdb",
                                           train_lmdb)
    text = text.replace("data/fashion_mnist/fashion_mnist_test_lmdb", test_lmdb)
    (folder / "net.prototxt").write_text(text)
    (folder / "solver.prototxt").write_text(
        'net: "%s"\nbase_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0005\nlr_policy: "inv"\n'
        'gamma: 0.0001\npower: 0.75\ndisplay: 0\nmax_iter: 200\nrandom_seed: 1\n'
        'snapshot_prefix: "%s"\n' % (folder / "net.prototxt", folder / "lenet"))
    solver = caffe.SGDSolver(str(folder / "solver.prototxt"))
    solver.step(200)
    weights = str(folder / "lenet.caffemodel")
    solver.net.save(weights)
    return {"folder": folder, "train": train_lmdb, "test": test_lmdb, "weights": weights}


def run_example(name, *args, cwd):
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                         cwd=str(cwd), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_classify_names_most_images(trained, tmp_path):
    if not caffe.image_io_available():
        pytest.skip("built without OpenCV")
    images, labels = fashion_test_images(10)
    files = [write_pgm(tmp_path / ("%d.pgm" % i), im) for i, im in enumerate(images)]
    labels_file = os.path.join(SOURCE_DIR, "models/lenet_fashion/labels.txt")
    names = [line.strip() for line in open(labels_file)]
    out = run_example("classify.py", "--model", DEPLOY, "--weights", trained["weights"],
                      "--labels", labels_file, "--top", "1", *files, cwd=tmp_path)
    predicted = re.findall(r'^[0-9.]+ - "(.*)"$', out, re.M)
    assert len(predicted) == 10, out
    right = sum(p == names[label] for p, label in zip(predicted, labels))
    assert right >= 6, out


def test_net_surgery_convolutional_net_agrees(trained, tmp_path):
    images, _ = fashion_test_images(4)
    tiles = tmp_path / "tiles.npy"
    np.save(str(tiles), images.astype(np.float32) / 255)
    out = run_example("net_surgery.py", "--model", DEPLOY, "--weights", trained["weights"],
                      "--out", str(tmp_path / "surgery"), "--images", str(tiles), cwd=tmp_path)
    assert "probability map: (10, 8, 8)" in out, out
    difference = float(re.search(r"max difference ([0-9.e+-]+)", out).group(1))
    assert difference < 1e-4
    # The written net loads with its weights and classifies a 56 x 56 input.
    net = caffe.Net(str(tmp_path / "surgery/lenet_full_conv.prototxt"),
                    str(tmp_path / "surgery/lenet_full_conv.caffemodel"), caffe.TEST)
    assert net.forward()["prob"].shape == (1, 10, 8, 8)


def test_finetuning_beats_scratch(trained, tmp_path):
    out = run_example("finetune_lenet.py", "--weights", trained["weights"], "--train-lmdb",
                      trained["train"], "--test-lmdb", trained["test"], "--iters", "30",
                      "--test-iter", "10", "--out", str(tmp_path / "ft"), cwd=tmp_path)
    pretrained = float(re.search(r"pretrained accuracy: ([0-9.]+)", out).group(1))
    scratch = float(re.search(r"scratch accuracy: ([0-9.]+)", out).group(1))
    assert pretrained > 0.6 and pretrained > scratch, out
    assert os.path.exists(str(tmp_path / "ft/lenet_finetuned.caffemodel"))


def test_classifier_predicts_most_images(trained):
    images, labels = fashion_test_images(20)
    inputs = [im[:, :, None].astype(np.float32) / 255 for im in images]
    classifier = caffe.Classifier(DEPLOY, trained["weights"], image_dims=(32, 32))
    assert classifier.transformer.inputs["data"] == (64, 1, 28, 28)
    centre = classifier.predict(inputs, oversample=False)
    assert centre.shape == (20, 10)
    np.testing.assert_allclose(centre.sum(axis=1), 1, rtol=1e-5)
    assert (centre.argmax(axis=1) == labels).mean() >= 0.6
    ten_crops = classifier.predict(inputs)
    assert ten_crops.shape == (20, 10)
    assert (ten_crops.argmax(axis=1) == labels).mean() >= 0.6
    # Without resizing, the centre crop is the image: the plain net's answer.
    plain = caffe.Classifier(DEPLOY, trained["weights"])
    net = caffe.Net(DEPLOY, trained["weights"], caffe.TEST)
    expected = net.forward_all(data=np.stack([im.transpose(2, 0, 1) for im in inputs]))["prob"]
    np.testing.assert_allclose(plain.predict(inputs, oversample=False), expected, rtol=1e-5,
                               atol=1e-6)


def test_export_onnx_writes_a_checked_model(trained, tmp_path):
    pytest.importorskip("onnx")
    out = run_example("export_onnx.py", "--model", DEPLOY, "--weights", trained["weights"],
                      "--onnx", str(tmp_path / "lenet.onnx"), cwd=tmp_path)
    assert "checker: passed (opset 17, 9 nodes)" in out, out
    assert "input: data (N, 1, 28, 28)" in out, out
    assert "output: prob (N, 10)" in out, out
    for line in re.findall(r"max error ([0-9.e+-]+)", out):  # where onnxruntime is installed
        assert float(line) < 1e-4, out
