"""mx.nd.save / mx.nd.load against files written by MXNet 1.9.1, round trips, corrupt files, pickle."""
from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError, MXNetError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mxnet"
DICT_FILE = DATA / "arrays-dict.nd"
LIST_FILE = DATA / "arrays-list.nd"


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((DATA / "arrays-expected.json").read_text())


def _check(arr: mx.nd.NDArray, exp: dict) -> None:
    assert arr.dtype is np.dtype(exp["dtype"]).type
    assert arr.shape == tuple(exp["shape"])
    want = np.array(exp["values"], dtype=np.float64)
    # every stored value is exactly representable in its dtype: compare exactly
    assert np.array_equal(arr.asnumpy().astype(np.float64).ravel(), want)
    assert np.array_equal(arr.asnumpy(), want.astype(exp["dtype"]).reshape(exp["shape"]))


def test_load_mxnet_dict(expected: dict) -> None:
    loaded = mx.nd.load(DICT_FILE)
    assert isinstance(loaded, dict)
    assert list(loaded) == list(expected)
    for name, exp in expected.items():
        _check(loaded[name], exp)
        assert loaded[name].context == mx.cpu()


def test_load_mxnet_list(expected: dict) -> None:
    loaded = mx.nd.load(str(LIST_FILE))
    assert isinstance(loaded, list) and len(loaded) == 2
    _check(loaded[0], expected["f32_2x3"])
    _check(loaded[1], expected["i32_2x2x2"])


def test_save_reproduces_mxnet_bytes(tmp_path: Path) -> None:
    for src in (DICT_FILE, LIST_FILE):
        out = tmp_path / src.name
        mx.nd.save(out, mx.nd.load(src))
        assert out.read_bytes() == src.read_bytes()


def test_save_layout_by_hand(tmp_path: Path) -> None:
    mx.nd.save(tmp_path / "a.nd", {"ab": mx.nd.array([[1.5, -2.0]])})
    want = (struct.pack("<QQQ", 0x112, 0, 1)
            + struct.pack("<IiI2q", 0xF993FAC9, 0, 2, 1, 2)
            + struct.pack("<iii", 1, 0, 0) + struct.pack("<2f", 1.5, -2.0)
            + struct.pack("<QQ", 1, 2) + b"ab")
    assert (tmp_path / "a.nd").read_bytes() == want


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"])
def test_round_trip_list_and_dict(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 4)) * 50).astype(dtype)
    b = (rng.standard_normal((2, 0, 5)) * 50).astype(dtype)  # zero-size arrays survive too
    mx.nd.save(tmp_path / "l.nd", [mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype)])
    back = mx.nd.load(tmp_path / "l.nd")
    assert [x.shape for x in back] == [a.shape, b.shape]
    assert np.array_equal(back[0].asnumpy(), a) and back[0].dtype is a.dtype.type
    mx.nd.save(tmp_path / "d.nd", {"x": mx.nd.array(a, dtype=dtype), "é名": mx.nd.array(a[:1], dtype=dtype)})
    d = mx.nd.load(tmp_path / "d.nd")
    assert list(d) == ["x", "é名"]
    assert np.array_equal(d["é名"].asnumpy(), a[:1])


def test_save_single_and_empty(tmp_path: Path) -> None:
    mx.nd.save(tmp_path / "s.nd", mx.nd.ones((2,)))
    (one,) = mx.nd.load(tmp_path / "s.nd")
    assert one.asnumpy().tolist() == [1.0, 1.0]
    mx.nd.save(tmp_path / "e.nd", [])
    assert mx.nd.load(tmp_path / "e.nd") == []


def test_load_frombuffer_and_save_tobuffer() -> None:
    buf = mx.nd.save_tobuffer({"w": mx.nd.arange(4)})
    assert mx.nd.load_frombuffer(buf)["w"].asnumpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_save_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(MXNetError, match="keys must be str"):
        mx.nd.save(tmp_path / "x", {1: mx.nd.ones(1)})
    with pytest.raises(MXNetError, match="must be an NDArray"):
        mx.nd.save(tmp_path / "x", [np.ones(2)])
    with pytest.raises(MXNetError, match="save: data must be"):
        mx.nd.save(tmp_path / "x", "nope")


# -- older layouts ------------------------------------------------------------------------------

def _header(n: int) -> bytes:
    return struct.pack("<QQQ", 0x112, 0, n)


def test_load_v1_and_legacy_layouts() -> None:
    v1 = struct.pack("<II2q", 0xF993FAC8, 2, 1, 2) + struct.pack("<iii", 1, 0, 4) + struct.pack("<2i", 7, -8)
    legacy = struct.pack("<I2I", 2, 2, 1) + struct.pack("<iii", 1, 0, 1) + struct.pack("<2d", 0.5, 2.5)
    buf = _header(2) + v1 + legacy + struct.pack("<Q", 0)
    a, b = mx.nd.load_frombuffer(buf)
    assert a.dtype is np.int32 and a.asnumpy().tolist() == [[7, -8]]
    assert b.dtype is np.float64 and b.asnumpy().tolist() == [[0.5], [2.5]]


# -- corrupt files -------------------------------------------------------------------------------

def _one_array(**over: int) -> bytes:
    f = {"magic": 0xF993FAC9, "stype": 0, "ndim": 1, "dim": 2, "dev": 1, "flag": 0}
    f.update(over)
    return (struct.pack("<IiIq", f["magic"], f["stype"], f["ndim"], f["dim"])
            + struct.pack("<iii", f["dev"], 0, f["flag"]) + struct.pack("<2f", 1, 2))


@pytest.mark.parametrize("buf, message", [
    (b"", "too short"),
    (struct.pack("<QQQ", 0x113, 0, 0) + struct.pack("<Q", 0), "magic 0x113"),
    (_header(1) + _one_array(magic=0xDEADBEEF) + struct.pack("<Q", 0), "unknown magic number 0xDEADBEEF"),
    (_header(1) + _one_array(stype=1) + struct.pack("<Q", 0), "invalid device"),   # dense, read as sparse
    (_header(1) + _one_array(stype=2) + struct.pack("<Q", 0), "invalid device"),
    (_header(1) + _one_array(stype=7) + struct.pack("<Q", 0), "unknown storage type 7"),
    (_header(1) + _one_array(flag=12) + struct.pack("<Q", 0), "unknown dtype flag 12"),
    (_header(1) + _one_array(dev=9) + struct.pack("<Q", 0), "invalid device"),
    (_header(1) + _one_array(dim=-2) + struct.pack("<Q", 0), "negative dimension"),
    (_header(1) + _one_array(dim=1 << 40) + struct.pack("<Q", 0), "truncated"),
    (_header(1) + _one_array(ndim=1 << 30), "declares 1073741824 dimensions"),
    (_header(1) + _one_array(ndim=0), "no shape"),
    (_header(1 << 60) + _one_array(), "array count"),
    (_header(1) + _one_array(), "name count"),  # names section missing
    (_header(1) + _one_array() + struct.pack("<Q", 2), "does not match the array count"),
    (_header(1) + _one_array() + struct.pack("<QQ", 1, 1 << 50), "name 0"),
    (_header(1) + _one_array() + struct.pack("<QQ", 1, 2) + b"\xff\xfe", "not valid UTF-8"),
    (_header(2) + _one_array() + _one_array() + struct.pack("<QQ", 2, 1) + b"a" + struct.pack("<Q", 1) + b"a",
     "duplicate"),
    (_header(1) + _one_array() + struct.pack("<Q", 0) + b"junk", "unexpected bytes"),
])
def test_corrupt_buffers_raise_format_error(buf: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        mx.nd.load_frombuffer(buf)


def test_every_truncation_of_a_real_file_is_rejected(tmp_path: Path) -> None:
    data = DICT_FILE.read_bytes()
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            mx.nd.load_frombuffer(data[:cut])
    path = tmp_path / "cut.nd"
    path.write_bytes(data[:100])
    with pytest.raises(FormatError, match=r"cut\.nd.*truncated"):
        mx.nd.load(path)


def test_random_bytes_never_crash() -> None:
    rng = np.random.default_rng(1)
    data = bytearray(DICT_FILE.read_bytes())
    for _ in range(300):
        mutated = bytearray(data)
        for pos in rng.integers(0, len(data), size=3):
            mutated[pos] = int(rng.integers(0, 256))
        try:
            mx.nd.load_frombuffer(bytes(mutated))
        except FormatError:
            pass


# -- pickle --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8"])
def test_pickle_round_trip(dtype: str) -> None:
    a = mx.nd.array(np.arange(6).reshape(2, 3), dtype=dtype)
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, mx.nd.NDArray) and b is not a
    assert b.dtype is a.dtype is np.dtype(dtype).type and b.shape == (2, 3) and b.context == mx.cpu()
    assert np.array_equal(b.asnumpy(), np.arange(6).reshape(2, 3).astype(dtype))
    assert b._data.flags.c_contiguous and b._data.flags.writeable


def test_pickle_of_a_view_and_bad_state() -> None:
    a = mx.nd.array([[1, 2], [3, 4]])
    b = pickle.loads(pickle.dumps(a[1]))
    assert b.asnumpy().tolist() == [3.0, 4.0]
    c = mx.nd.zeros((1,))
    with pytest.raises(MXNetError, match="does not fit"):
        c.__setstate__({"shape": (3,), "dtype": "float32", "data": b"\0" * 4, "ctx": ("cpu", 0)})
