"""mx.image.imrotate / random_rotate (float32 CHW images and NCHW batches) and MXNet's other
module paths of mx.image (mx.img, mx.image.image)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage

import symjit as mx
from symjit.base import MXNetError


def test_quarter_turns_are_exact_counter_clockwise():
    src = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    out = mx.image.imrotate(mx.nd.array(src), 90)
    assert out.shape == (2, 3, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), np.rot90(src, 1, axes=(1, 2)), atol=1e-5)
    batch = mx.nd.array(np.stack([src, src]))
    both = mx.image.imrotate(batch, mx.nd.array([90, -90])).asnumpy()       # an angle per image
    np.testing.assert_allclose(both[0], np.rot90(src, 1, axes=(1, 2)), atol=1e-5)
    np.testing.assert_allclose(both[1], np.rot90(src, -1, axes=(1, 2)), atol=1e-5)


def test_small_angle_matches_a_bilinear_rotation_inside():
    ramp = (np.linspace(0, 1, 24)[:, None] * np.linspace(1, 2, 40)[None, :]).astype(np.float32)
    ours = mx.image.imrotate(mx.nd.array(ramp[None]), 8.0).asnumpy()[0]
    ref = scipy.ndimage.rotate(ramp, 8.0, reshape=False, order=1, mode="constant", prefilter=False)
    np.testing.assert_allclose(ours[6:18, 10:30], ref[6:18, 10:30], atol=1e-5)
    same = mx.image.imrotate(mx.nd.array(np.stack([ramp[None]] * 2)), 8.0).asnumpy()   # one number, a batch
    np.testing.assert_allclose(same[1, 0], ours, atol=1e-6)


def test_zoom_in_hides_the_padding_and_zoom_out_keeps_the_whole_source():
    ones = mx.nd.ones((1, 20, 30))
    plain = mx.image.imrotate(ones, 30).asnumpy()
    assert plain[0, 0, 0] == 0 and plain[0, -1, -1] == 0                  # corners come from outside
    zin = mx.image.imrotate(ones, 30, zoom_in=True).asnumpy()
    assert zin[:, 1:-1, 1:-1].min() > 0.999
    zout = mx.image.imrotate(ones, 30, zoom_out=True).asnumpy()
    c, s = np.cos(np.pi / 6), np.sin(np.pi / 6)
    scale = max((30 * c + 20 * s) / 30, (30 * s + 20 * c) / 20)
    assert abs(zout.sum() * scale ** 2 - 20 * 30) < 0.05 * 20 * 30       # all of the source, shrunk
    assert zout[0, 0, 0] == 0


def test_bad_arguments_name_the_problem():
    img = mx.nd.ones((3, 4, 5))
    with pytest.raises(ValueError, match="zoom_in and zoom_out"):
        mx.image.imrotate(img, 5, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(mx.nd.ones((3, 4, 5), dtype="float64"), 5)
    with pytest.raises(TypeError, match="one number"):
        mx.image.imrotate(img, mx.nd.array([1, 2]))
    with pytest.raises(ValueError, match="2 images need as many rotation angles, got 3"):
        mx.image.imrotate(mx.nd.ones((2, 3, 4, 5)), mx.nd.array([1, 2, 3]))
    with pytest.raises(ValueError, match="CHW or NCHW"):
        mx.image.imrotate(mx.nd.ones((4, 5)), 5)


def test_random_rotate_draws_from_the_limits_and_the_seed():
    one = np.random.default_rng(0).random((3, 8, 9), dtype=np.float32)
    img = mx.nd.array(np.stack([one, one]))
    fixed = mx.image.random_rotate(img, (7.0, 7.0)).asnumpy()
    np.testing.assert_allclose(fixed, mx.image.imrotate(img, 7.0).asnumpy(), atol=1e-6)
    mx.random.seed(3)
    a = mx.image.random_rotate(img, (-20, 20)).asnumpy()
    mx.random.seed(3)
    b = mx.image.random_rotate(img, (-20, 20)).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a[0], a[1])                        # the same image, one angle per image
    assert mx.image.random_rotate(img[0], (-5, 5)).shape == (3, 8, 9)


def test_mxnet_module_paths_of_mx_image():
    assert mx.img is mx.image and mx.img.image.imread is mx.image.imread
    assert mx.image.image.imrotate is mx.image.imrotate
    with pytest.raises(MXNetError, match="cannot read"):
        mx.img.image.imread("/no/such/dir/x.jpg")
