"""MXNet's NumPy shape semantics switch (``mx.util.set_np_shape``/``np_shape``/``use_np_shape``) and what
it changes: -1 and None for unknown sizes and ranks in shape inference, zero-size and 0-d arrays, the
NDArray file magic. Classic shapes (0 unknown) are the default and come back when it is turned off."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError, ShapeError


@pytest.fixture(autouse=True)
def _classic_after():
    yield
    mx.util.set_np_shape(False)


# --- the switch --------------------------------------------------------------------------------------

def test_set_np_shape_returns_the_previous_state_and_the_top_level_names_are_the_same():
    assert mx.set_np_shape is mx.util.set_np_shape and mx.np_shape is mx.util.np_shape
    assert mx.util.set_np_shape(True) is False
    assert mx.is_np_shape() is True
    assert mx.util.set_np_shape(True) is True
    assert mx.util.set_np_shape(False) is True and mx.is_np_shape() is False


def test_np_shape_scope_restores_the_state_before_it_even_on_an_exception():
    with mx.np_shape():
        assert mx.is_np_shape()
        with mx.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()
    with pytest.raises(KeyError):
        with mx.np_shape(True):
            raise KeyError("inside")
    assert not mx.is_np_shape()


def test_the_switch_belongs_to_the_thread_that_set_it():
    seen = []
    with mx.np_shape():
        worker = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        worker.start()
        worker.join()
        assert mx.is_np_shape()
    assert seen == [False]


def test_use_np_shape_wraps_functions_and_every_kind_of_class_member():
    @mx.use_np_shape
    def state():
        """Says whether the semantics are on."""
        return mx.is_np_shape()
    assert state.__name__ == "state" and state.__doc__ == "Says whether the semantics are on."
    assert state() is True and mx.is_np_shape() is False
    with mx.np_shape(False):
        assert state() is True

    class Base:
        def inherited(self):
            return mx.is_np_shape()

    @mx.use_np_shape
    class Probe(Base):
        def method(self):
            return mx.is_np_shape()

        @staticmethod
        def static():
            return mx.is_np_shape()

        @classmethod
        def klass(cls):
            return (cls, mx.is_np_shape())

        @property
        def prop(self):
            return mx.is_np_shape()

    p = Probe()
    assert (p.method(), Probe.static(), p.static(), p.prop, p.inherited()) == (True,) * 5
    assert Probe.klass() == (Probe, True)
    assert Base().inherited() is False and not mx.is_np_shape()
    with pytest.raises(TypeError, match="function or a class"):
        mx.use_np_shape(3)


def test_numpy_array_semantics_stay_refused_and_leave_the_shape_switch_alone():
    with pytest.raises(mx.util.NumpySemanticsUnsupported, match="array semantics"):
        mx.util.set_np()
    assert not mx.is_np_shape()
    mx.util.set_np(shape=True, array=False)
    assert mx.is_np_shape()
    mx.util.reset_np()
    assert not mx.is_np_shape()


# --- shape inference ---------------------------------------------------------------------------------

def test_unknown_sizes_and_ranks_read_as_each_semantics_writes_them():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    classic = net.infer_shape_partial(data=(0, 6))
    assert classic[0] == [(0, 6), (4, 6), (4,)] and classic[1] == [(0, 4)]
    assert net.infer_shape_partial()[0] == [(), (), ()]
    with mx.np_shape():
        arg, out, _ = net.infer_shape_partial(data=(-1, 6))
        assert arg == [(-1, 6), (4, 6), (4,)] and out == [(-1, 4)]
        assert net.infer_shape_partial()[0] == [None, None, None]
        assert net.infer_shape(data=(-1, 6)) == (None, None, None)
        # 0 is a size: zero rows complete the inference
        assert net.infer_shape(data=(0, 6))[1] == [(0, 4)]
    # back to classic: the same call reads 0 as unknown again
    assert net.infer_shape(data=(0, 6)) == (None, None, None)


def test_variable_shapes_are_read_under_the_semantics_in_force_at_inference():
    y = mx.sym.relu(mx.sym.var("x", shape=(0, 3)))
    assert y.infer_shape_partial()[1] == [(0, 3)] and y.infer_shape() == (None, None, None)
    with mx.np_shape():
        assert y.infer_shape()[1] == [(0, 3)]
        z = mx.sym.relu(mx.sym.var("x", shape=(-1, 3)))
        assert z.infer_shape_partial()[1] == [(-1, 3)]
        with pytest.raises(ShapeError, match="negative"):
            z.infer_shape(x=(-2, 3))
    assert z.infer_shape_partial()[1] == [(0, 3)]        # -1 is unknown with classic shapes too


def test_sources_with_unknown_sizes_take_them_from_their_consumers_and_bind():
    for unknown in ((-1, -1), (0, 0)):
        grid = mx.sym.ones(shape=(2, 3)) + mx.sym.transpose(mx.sym.full(shape=unknown, val=4.0))
        assert grid.infer_shape_partial()[1] == [(2, 3)]
        out = grid.bind(mx.cpu(), args={}).forward()[0]
        np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 5.0, np.float32))
    lone = mx.sym.zeros(shape=(4, 0))
    with pytest.raises(mx.MXNetError, match="unknown"):
        lone.bind(mx.cpu(), args={})
    with mx.np_shape():   # with NumPy shapes the 0 is a real size
        assert lone.bind(mx.cpu(), args={}).forward()[0].shape == (4, 0)


# --- arrays --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [mx.nd.zeros, mx.nd.ones, lambda s: mx.nd.full(s, 2.0)])
def test_filled_arrays_need_numpy_shapes_for_zero_sizes_and_no_axes(make):
    for shape in ((3, 0), ()):
        with pytest.raises(ShapeError, match="not complete"):
            make(shape)
    with mx.np_shape():
        assert make((3, 0)).shape == (3, 0) and make((3, 0)).asnumpy().size == 0
        scalar = make(())
        assert scalar.shape == () and scalar.asnumpy().shape == ()


def test_array_of_a_number_is_0d_with_numpy_shapes_and_empty_takes_any_size():
    assert mx.nd.array(5).shape == (1,)
    assert mx.nd.empty((2, 0)).shape == (2, 0)
    with mx.np_shape():
        five = mx.nd.array(np.int32(5), dtype="int32")
        assert five.shape == () and five.asnumpy().item() == 5


def test_zero_size_arrays_flow_through_operators_and_extremes_of_nothing_fail():
    with mx.np_shape():
        a = mx.nd.zeros((4, 0))
        assert (a + 1).shape == (4, 0)
        assert mx.nd.Concat(mx.nd.ones((0, 2)), mx.nd.ones((3, 2)), dim=0).shape == (3, 2)
        assert a.sum().asnumpy().tolist() == [0.0]
        assert a.max(axis=0).shape == (0,)      # reduces the axis of 4
        for extreme in (a.max, a.min, lambda: a.max(axis=1)):
            with pytest.raises(mx.MXNetError, match="size 0 on reduced axis 1"):
                extreme()


def test_saved_arrays_load_only_under_the_semantics_they_were_saved_with(tmp_path):
    path = os.fspath(tmp_path / "arrays")
    with mx.np_shape():
        mx.nd.save(path, {"s": mx.nd.array(np.float32(2.5)), "z": mx.nd.zeros((0, 3))})
        back = mx.nd.load(path)
        assert back["s"].shape == () and back["s"].asnumpy().item() == 2.5
        assert back["z"].shape == (0, 3)
    with pytest.raises(FormatError, match="saved with NumPy shape semantics"):
        mx.nd.load(path)
    mx.nd.save(path, [mx.nd.ones((2,))])
    with mx.np_shape(), pytest.raises(FormatError, match="saved without NumPy shape semantics"):
        mx.nd.load(path)
    with pytest.raises(FormatError, match="0-d"):
        mx.nd.save(path, [mx.nd.array(1.0).reshape(())])


def test_symbol_json_marks_numpy_shapes_and_classic_files_read_under_them(tmp_path):
    def net():
        return mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("w", shape=(16, 0)), num_hidden=16)
    assert "is_np_shape" not in json_attrs(net().tojson())
    with mx.np_shape():
        assert json_attrs(net().tojson())["is_np_shape"] == ["int", 1]
    path = os.fspath(tmp_path / "classic-symbol.json")
    net().save(path)                 # 0 in w's shape: unknown, as classic files mean it
    for numpy_shapes in (False, True):
        with mx.np_shape(numpy_shapes):
            arg, out, _ = mx.sym.load(path).infer_shape(data=(5, 7))
            assert arg == [(5, 7), (16, 7), (16,)] and out == [(5, 16)]
    with mx.np_shape():
        assert mx.sym.load(path).attr_dict()["w"]["__shape__"] == "(16, -1)"
        kept = mx.sym.var("v", shape=(0, 3))     # a real 0, kept by a file that says so
        assert mx.sym.load_json(mx.sym.relu(kept).tojson()).infer_shape()[1] == [(0, 3)]


def json_attrs(text: str) -> dict:
    return json.loads(text)["attrs"]


def test_0d_arrays_into_compiled_operators_are_a_clear_error_and_depth_0_one_hot_is_empty():
    with mx.np_shape():
        with pytest.raises(mx.MXNetError, match=r"'in0_data' is 0-d \(shape \(\)\)"):
            mx.nd.relu(mx.nd.ones(()))
    rows = mx.nd.one_hot(mx.nd.array([[1, 2]]), depth=0)       # MXNet gives zero-size rows, classic or not
    assert rows.shape == (1, 2, 0) and rows.asnumpy().size == 0
