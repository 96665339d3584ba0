"""mx.nd functions that are not one operator's record: creation by the registered input-less ops,
the logical functions, split_v2, moveaxis, onehot_encode, from_numpy; and mx.sym's functions."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx


def test_eye_and_linspace_run_the_registered_ops():
    np.testing.assert_array_equal(mx.nd.eye(3, 4, k=-1).asnumpy(), np.eye(3, 4, k=-1, dtype=np.float32))
    assert mx.nd.eye(2, dtype="float64").dtype == np.float64
    np.testing.assert_allclose(mx.nd.linspace(-1, 1, 5).asnumpy(), np.linspace(-1, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.linspace(0, 1, 4, endpoint=False).asnumpy(), [0, 0.25, 0.5, 0.75])


@pytest.mark.parametrize("name, ref", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                       ("logical_xor", np.logical_xor)])
def test_logical_functions(name, ref):
    a = np.array([[0.0, 1.0, 2.0]])
    b = np.array([[1.0], [0.0]])
    fn = getattr(mx.nd, name)
    np.testing.assert_array_equal(fn(mx.nd.array(a), mx.nd.array(b)).asnumpy(), ref(a, b).astype(np.float32))
    np.testing.assert_array_equal(fn(mx.nd.array(a), 0).asnumpy(), ref(a, 0).astype(np.float32))
    assert fn(1, 0) == float(ref(1, 0))
    with pytest.raises(mx.MXNetError, match=name):
        fn("x", mx.nd.array(a))


def test_split_v2_sections_and_indices():
    x = mx.nd.array(np.arange(12.0).reshape(2, 6))
    parts = mx.nd.split_v2(x, 3, axis=1)
    assert [p.asnumpy().tolist() for p in parts] == [[[0, 1], [6, 7]], [[2, 3], [8, 9]], [[4, 5], [10, 11]]]
    parts = mx.nd.split_v2(x, (1, 4), axis=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 3), (2, 2)]
    with pytest.raises(mx.MXNetError, match="equal sections"):
        mx.nd.split_v2(x, 4, axis=1)
    s = mx.sym.split_v2(mx.sym.Variable("x"), (2,), axis=0)
    assert len(s.list_outputs()) == 2


def test_moveaxis_onehot_encode_from_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(mx.nd.moveaxis(mx.nd.array(x), [0, 1], [-1, 0]).asnumpy(),
                                  np.moveaxis(x, [0, 1], [-1, 0]).astype(np.float32))
    with pytest.raises(mx.MXNetError, match="moveaxis"):
        mx.nd.moveaxis(mx.nd.array(x), [0], [1, 2])
    out = mx.nd.zeros((3, 4))
    assert mx.nd.onehot_encode(mx.nd.array([3, 0, 1]), out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4, dtype=np.float32)[[3, 0, 1]])
    with pytest.raises(mx.MXNetError, match="onehot_encode"):
        mx.nd.onehot_encode(mx.nd.array([1, 2]), out)
    a = np.arange(4, dtype=np.float32)
    copied, shared = mx.nd.from_numpy(a, zero_copy=False), mx.nd.from_numpy(a)
    with pytest.raises(ValueError):      # the array handed over without a copy is read-only
        a[0] = 9
    shared[0] = 9
    assert a[0] == 9 and shared.asnumpy()[0] == 9 and copied.asnumpy()[0] == 0
    again = mx.nd.from_numpy(a)         # handed over again: the same memory, still writable
    again[1] = 5
    assert a[1] == 5 and shared.asnumpy()[1] == 5
    del shared, again
    mx.nd.from_numpy(a)[2] = 4          # and once the arrays holding it are gone
    assert a[2] == 4 and not a.flags.writeable
    with pytest.raises(ValueError, match="writable"):
        mx.nd.from_numpy(np.broadcast_to(np.ones(1), (1,)))
    with pytest.raises(ValueError, match="C-contiguous"):   # an MXNetError too
        mx.nd.from_numpy(np.ones((3, 3))[:, ::2])


def test_symbol_functions_take_symbols_or_numbers():
    x = mx.sym.Variable("x")
    y = mx.sym.maximum(x, 0.5) + mx.sym.minimum(1.0, x) + mx.sym.power(x, 2) + mx.sym.hypot(x, x)
    ex = y.simple_bind(mx.cpu(), x=(3,))
    v = np.array([0.25, 1.0, 2.0], dtype=np.float32)
    want = np.maximum(v, 0.5) + np.minimum(1.0, v) + v ** 2 + np.hypot(v, v)
    np.testing.assert_allclose(ex.forward(x=mx.nd.array(v))[0].asnumpy(), want, rtol=1e-6)
    assert mx.sym.maximum(2, 3) == 3 and mx.sym.pow(2, 3) == 8
    with pytest.raises(mx.MXNetError, match="maximum"):
        mx.sym.maximum("a", x)
    with pytest.raises(mx.MXNetError, match="infer_range"):
        mx.sym.arange(0, infer_range=True)


def test_parameters_given_positionally_after_the_inputs():
    """MXNet's generated functions take parameters positionally after the inputs
    (``mx.nd.image.crop(image, 1, 1, 2, 2)`` in its documentation)."""
    img = mx.nd.array(np.arange(24, dtype=np.float32).reshape(2, 4, 3))
    np.testing.assert_array_equal(mx.nd.image.crop(img, 1, 0, 2, 1).asnumpy(), img.asnumpy()[0:1, 1:3])
    sym = mx.sym.image.random_brightness(mx.sym.Variable("x"), 0.5, 0.7)
    assert sym.attr_dict()[sym.name]["min_factor"] == "0.5"
    with pytest.raises(TypeError, match="positional inputs must be Symbols"):
        mx.sym.FullyConnected(mx.sym.Variable("x"), 3, num_hidden=2)     # 3 lands in the weight slot
    with pytest.raises(TypeError, match="positional inputs must be Symbols"):
        mx.sym.Concat(mx.sym.Variable("a"), 3)                           # a variadic op takes inputs only
    with pytest.raises(mx.MXNetError, match="positional parameter"):
        mx.nd.image.crop(img, 1, 0, 2, 1, 5)


def test_none_in_an_input_slot_is_an_absent_input():
    """A positional ``None`` where the signature has an input slot (BilinearResize2D's ``like``)
    leaves that input out; the parameters after it keep their own names."""
    x = mx.sym.Variable("x")
    sym = mx.sym.contrib.BilinearResize2D(x, None, scale_height=0.5, scale_width=2.0, mode="odd_scale")
    assert sym.list_arguments() == ["x"]
    assert sym.infer_shape(x=(1, 2, 5, 4))[1] == [(1, 2, 3, 8)]
    out = mx.nd.contrib.BilinearResize2D(mx.nd.ones((1, 1, 4, 3)), None, mode="to_even_up")
    assert out.shape == (1, 1, 4, 4)
    np.testing.assert_allclose(out.asnumpy(), np.ones((1, 1, 4, 4)))
    # the bias slot of a layer whose no_bias drops it
    conv = mx.sym.Convolution(x, mx.sym.Variable("w"), None, num_filter=2, kernel=(3,), no_bias=True)
    assert conv.list_arguments() == ["x", "w"]


def test_bilinear_resize_sizes_of_each_mode():
    x = mx.sym.Variable("x")
    want = {"to_even_down": (4, 6), "to_even_up": (6, 6), "to_odd_down": (5, 5), "to_odd_up": (5, 7)}
    for mode, hw in want.items():
        assert mx.sym.contrib.BilinearResize2D(x, mode=mode).infer_shape(x=(1, 1, 5, 6))[1] == [(1, 1) + hw]
    # odd_scale: an odd side keeps its last pixel, (5 - 1) * 2 + 1; an even one is scaled, 6 * 2
    assert mx.sym.contrib.BilinearResize2D(x, scale_height=2, scale_width=2, mode="odd_scale").infer_shape(
        x=(1, 1, 5, 6))[1] == [(1, 1, 9, 12)]
    with pytest.raises(mx.MXNetError, match="odd_scale.*scale_width"):
        mx.sym.contrib.BilinearResize2D(x, scale_height=2, mode="odd_scale")


def test_imdecode_clip_rect_and_mean():
    from symjit.recordio import encode_image
    pixels = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    buf = encode_image(pixels[:, :, ::-1], img_fmt=".png")         # OpenCV encodes BGR
    full = mx.nd.imdecode(buf)
    assert full.dtype == np.uint8 and full.shape == (4, 6, 3)
    np.testing.assert_array_equal(full.asnumpy(), pixels)
    part = mx.nd.imdecode(buf, clip_rect=(1, 2, 4, 4), mean=mx.nd.ones((2, 3, 3)))
    np.testing.assert_array_equal(part.asnumpy(), pixels[2:4, 1:4].astype(np.float32) - 1)
    with pytest.raises(mx.MXNetError, match="clip_rect"):
        mx.nd.imdecode(buf, clip_rect=(0, 0, 9, 9))


def test_dlpack_shares_memory():
    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    view = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
    view[1, 2] = -1.0
    assert x.asnumpy()[1, 2] == -1.0
    ro = mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(x))
    np.testing.assert_array_equal(ro.asnumpy(), x.asnumpy())
    with pytest.raises(mx.MXNetError, match="read-only"):
        ro[0, 0] = 3.0
    np.testing.assert_array_equal(mx.nd.from_dlpack(np.arange(3.0)).asnumpy(), [0.0, 1.0, 2.0])
    with pytest.raises(mx.MXNetError, match="from_dlpack"):
        mx.nd.from_dlpack(object())
