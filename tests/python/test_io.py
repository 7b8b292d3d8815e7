"""crema.io with pycaffe's names: Transformer's steps and their inverse, load_image through
crema's image reader, resize_image, oversample, and the BlobProto and Datum conversions."""
import numpy as np
import pytest

import crema as caffe
from crema.proto import caffe_pb2


def write_ppm(path, rgb):
    """A binary PPM (P6) of an H x W x 3 uint8 array: a format OpenCV reads, written without any
    imaging package."""
    h, w, _ = rgb.shape
    path.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + rgb.astype(np.uint8).tobytes())
    return str(path)


def test_transformer_steps_and_inverse():
    t = caffe.io.Transformer({"data": (1, 3, 4, 5)})
    t.set_transpose("data", (2, 0, 1))
    t.set_channel_swap("data", (2, 1, 0))
    t.set_raw_scale("data", 255)
    t.set_mean("data", np.array([10, 20, 30], np.float32))
    t.set_input_scale("data", 0.5)
    image = np.random.RandomState(0).uniform(0, 1, (4, 5, 3)).astype(np.float32)
    out = t.preprocess("data", image)
    assert out.shape == (3, 4, 5) and out.dtype == np.float32
    expected = (image.transpose(2, 0, 1)[::-1] * 255 - np.array([10, 20, 30])[:, None, None]) * 0.5
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(t.deprocess("data", out), image, rtol=1e-5, atol=1e-5)
    # A different size is resized to the input's height and width first.
    big = np.random.RandomState(1).uniform(0, 1, (8, 10, 3)).astype(np.float32)
    assert t.preprocess("data", big).shape == (3, 4, 5)
    # A mean image of the input's shape.
    t.set_mean("data", np.ones((3, 4, 5), np.float32))
    np.testing.assert_allclose(t.deprocess("data", t.preprocess("data", image)), image, atol=1e-5)


def test_transformer_refuses_bad_settings():
    t = caffe.io.Transformer({"data": (1, 3, 4, 5)})
    with pytest.raises(KeyError, match="not one of the inputs"):
        t.preprocess("image", np.zeros((4, 5, 3)))
    with pytest.raises(ValueError, match="3 axes"):
        t.set_transpose("data", (1, 0))
    with pytest.raises(ValueError, match="3 channels"):
        t.set_channel_swap("data", (1, 0))
    with pytest.raises(ValueError, match="2 channel means"):
        t.set_mean("data", np.zeros(2))
    with pytest.raises(ValueError, match="a mean of shape"):
        t.set_mean("data", np.zeros((3, 2, 2)))


def test_load_image_color_and_gray(tmp_path):
    if not caffe.image_io_available():
        pytest.skip("built without OpenCV")
    rgb = np.zeros((3, 4, 3), np.uint8)
    rgb[..., 0] = 255  # pure red
    rgb[1, 2] = (0, 128, 255)
    path = write_ppm(tmp_path / "red.ppm", rgb)
    image = caffe.io.load_image(path)
    assert image.shape == (3, 4, 3) and image.dtype == np.float32
    np.testing.assert_allclose(image[0, 0], [1, 0, 0])
    np.testing.assert_allclose(image[1, 2], [0, 128 / 255, 1], atol=1e-6)
    gray = caffe.io.load_image(path, color=False)
    assert gray.shape == (3, 4, 1) and 0 < gray[0, 0, 0] < 1
    with pytest.raises(caffe.Error, match="missing.png"):
        caffe.io.load_image(str(tmp_path / "missing.png"))
    (tmp_path / "junk.png").write_bytes(b"not an image")
    with pytest.raises(caffe.Error, match="junk.png"):
        caffe.io.load_image(str(tmp_path / "junk.png"))


def test_resize_image_and_oversample():
    im = np.arange(2 * 2 * 1, dtype=np.float32).reshape(2, 2, 1)
    up = caffe.io.resize_image(im, (4, 4))
    assert up.shape == (4, 4, 1)
    assert up[0, 0, 0] == 0 and up[3, 3, 0] == 3  # corners keep their values
    assert up.min() >= 0 and up.max() <= 3
    np.testing.assert_allclose(caffe.io.resize_image(up, (2, 2)),
                               [[[0.375], [1.125]], [[1.875], [2.625]]])
    np.testing.assert_array_equal(caffe.io.resize_image(im, (4, 4), interp_order=0)[:, :, 0],
                                  [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
    crops = caffe.io.oversample([np.random.rand(6, 8, 3)], (4, 4))
    assert crops.shape == (10, 4, 4, 3)
    np.testing.assert_array_equal(crops[5], crops[0][:, ::-1])


def test_blobproto_and_datum_round_trips(tmp_path):
    arr = np.random.RandomState(0).normal(size=(2, 3, 4)).astype(np.float32)
    blob = caffe.io.array_to_blobproto(arr, diff=2 * arr)
    assert isinstance(blob, caffe_pb2.BlobProto) and list(blob.shape.dim) == [2, 3, 4]
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(blob), arr)
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(blob, return_diff=True), 2 * arr)
    legacy = caffe_pb2.BlobProto(num=1, channels=2, height=1, width=3, data=range(6))
    assert caffe.io.blobproto_to_array(legacy).shape == (1, 2, 1, 3)
    mean_file = tmp_path / "mean.binaryproto"
    mean_file.write_bytes(blob.SerializeToString())
    np.testing.assert_array_equal(caffe.io.load_blobproto(str(mean_file)), arr)
    with pytest.raises(caffe.Error, match="missing.binaryproto"):
        caffe.io.load_blobproto(str(tmp_path / "missing.binaryproto"))
    vector = caffe.io.arraylist_to_blobprotovector_str([arr, arr[0]])
    back = caffe.io.blobprotovector_str_to_arraylist(vector)
    assert [a.shape for a in back] == [(2, 3, 4), (3, 4)]

    pixels = np.random.RandomState(1).randint(0, 256, (3, 4, 5)).astype(np.uint8)
    datum = caffe.io.array_to_datum(pixels, label=7)
    assert datum.label == 7 and len(datum.data) == 60
    np.testing.assert_array_equal(caffe.io.datum_to_array(datum), pixels)
    floats = caffe.io.array_to_datum(arr)
    assert len(floats.float_data) == 24
    np.testing.assert_array_equal(caffe.io.datum_to_array(floats), arr)
    with pytest.raises(ValueError, match="channels x height x width"):
        caffe.io.array_to_datum(np.zeros((2, 2)))
