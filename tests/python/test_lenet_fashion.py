"""A pycaffe script (pycaffe_lenet.py, written against Caffe's documented Python interface) run
with `import crema as caffe`: it trains LeNet on Fashion-MNIST for 300 iterations and classifies
test images from files. The training must have learnt: accuracy well above chance."""
import os
import re
import subprocess
import sys

import pytest

from conftest import (SOURCE_DIR, fashion_test_images, make_fashion_lmdbs, write_pgm)

import crema


def test_pycaffe_lenet_script_trains_and_classifies(tmp_path):
    if not crema.image_io_available():
        pytest.skip("built without OpenCV: the script reads image files")
    train_lmdb, test_lmdb = make_fashion_lmdbs(tmp_path)
    images, labels = fashion_test_images(100)
    image_dir = tmp_path / "images"
    image_dir.mkdir()
    for i, (image, label) in enumerate(zip(images, labels)):
        write_pgm(image_dir / ("%03d_%d.pgm" % (i, label)), image)
    script = os.path.join(os.path.dirname(__file__), "pycaffe_lenet.py")
    deploy = os.path.join(SOURCE_DIR, "models/lenet_fashion/lenet_deploy.prototxt")
    run = subprocess.run([sys.executable, script, train_lmdb, test_lmdb, str(image_dir), deploy,
                          "300"], cwd=str(tmp_path), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    right, total = map(int, re.search(r"classified: (\d+) of (\d+)", out).groups())
    first, last = map(float, re.search(r"first losses: ([0-9.]+) last losses: ([0-9.]+)",
                                       out).groups())
    # 300 iterations of batch 64 reach about 80% on Fashion-MNIST; chance is 10%.
    assert accuracy > 0.65, out
    assert total == 100 and right > 60, out
    assert last < 0.5 * first, out
    assert os.path.exists(str(tmp_path / "lenet_fashion.caffemodel"))
