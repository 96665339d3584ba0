"""mx.recordio: the byte layout of dmlc's RecordIO (checked against bytes built here from the
format's description), multi-part records, the index, IRHeader packing, images."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError, MXNetError
from symjit.recordio import MAGIC

rio = mx.recordio
MAGIC_B = struct.pack("<I", MAGIC)


def record(payload: bytes, cflag: int = 0) -> bytes:
    return MAGIC_B + struct.pack("<I", (cflag << 29) | len(payload)) + payload + b"\0" * (-len(payload) % 4)


def test_layout_of_plain_and_multipart_records(tmp_path):
    path = str(tmp_path / "a.rec")
    tricky = b"abcd" + MAGIC_B + b"efgh" + MAGIC_B        # the magic at aligned offsets 4 and 12
    unaligned = b"ab" + MAGIC_B + b"cd"                     # ... and at an unaligned offset
    with rio.MXRecordIO(path, "w") as w:
        w.write(b"hello")
        w.write(tricky)
        w.write(unaligned)
        w.write(b"")
    want = (record(b"hello") + record(b"abcd", 1) + record(b"efgh", 2) + record(b"", 3)
            + record(unaligned) + record(b""))
    assert open(path, "rb").read() == want
    r = rio.MXRecordIO(path, "r")
    assert [r.read() for _ in range(5)] == [b"hello", tricky, unaligned, b"", None]
    r.reset()
    assert r.read() == b"hello"
    r.close()


def test_reads_bytes_written_by_the_format(tmp_path):
    path = tmp_path / "b.rec"
    path.write_bytes(record(b"xy", 1) + record(b"z", 3) + record(b"12345678"))
    r = rio.MXRecordIO(str(path), "r")
    assert r.read() == b"xy" + MAGIC_B + b"z" and r.read() == b"12345678" and r.read() is None


@pytest.mark.parametrize("data, match", [
    (b"\0\0\0\0\5\0\0\0hello", "no record at byte 0"),
    (record(b"hello")[:10], "ends inside the record"),
    (record(b"ab", 1), "ends inside a multi-part record"),
    (record(b"ab", 2), "continues a record that did not start"),
    (MAGIC_B[:3], "ends inside a record header"),
])
def test_corrupt_files_are_errors(tmp_path, data, match):
    path = tmp_path / "bad.rec"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=match):
        rio.MXRecordIO(str(path), "r").read()


def test_indexed_random_access(tmp_path):
    idx, rec = str(tmp_path / "c.idx"), str(tmp_path / "c.rec")
    w = rio.MXIndexedRecordIO(idx, rec, "w")
    payloads = {i: bytes([i]) * (i * 3 + 1) for i in range(10)}
    for i, p in payloads.items():
        w.write_idx(i, p)
    w.close()
    lines = open(idx).read().splitlines()
    assert lines[0] == "0\t0" and lines[1] == f"1\t{len(record(payloads[0]))}"
    r = rio.MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == list(range(10))
    for i in (7, 2, 9, 0):
        assert r.read_idx(i) == payloads[i]
    with pytest.raises(MXNetError, match="key 42 is not in the index"):
        r.read_idx(42)
    with pytest.raises(MXNetError, match="open for reading"):
        r.write(b"x")
    (tmp_path / "bad.idx").write_text("0\tzero\n")
    with pytest.raises(FormatError, match="line 1"):
        rio.MXIndexedRecordIO(str(tmp_path / "bad.idx"), rec, "r")


def test_irheader_pack_layout():
    s = rio.pack(rio.IRHeader(0, 2.5, 17, 3), b"payload")
    assert s[:24] == struct.pack("<IfQQ", 0, 2.5, 17, 3) and s[24:] == b"payload"
    header, payload = rio.unpack(s)
    assert header == (0, 2.5, 17, 3) and payload == b"payload"
    multi = rio.pack(rio.IRHeader(0, np.array([1.0, -2.0, 3.5]), 1, 0), b"p")
    assert multi[:24] == struct.pack("<IfQQ", 3, 0.0, 1, 0)
    assert multi[24:36] == np.array([1.0, -2.0, 3.5], "<f4").tobytes()
    header, payload = rio.unpack(multi)
    assert header.flag == 3 and header.label.tolist() == [1.0, -2.0, 3.5] and payload == b"p"
    with pytest.raises(FormatError, match="shorter than the 24-byte header"):
        rio.unpack(b"short")


def test_images_round_trip(tmp_path):
    pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")
    rng = np.random.default_rng(0)
    bgr = rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)
    header, img = rio.unpack_img(rio.pack_img(rio.IRHeader(0, 4.0, 9, 0), bgr, img_fmt=".png"))
    assert header.label == 4.0 and img.shape == (12, 10, 3)
    np.testing.assert_array_equal(img, bgr)                 # PNG is lossless; channels stay BGR
    gray = rng.integers(0, 256, (8, 8), dtype=np.uint8)
    packed = rio.pack_img(rio.IRHeader(0, 0, 0, 0), gray, img_fmt=".png")
    np.testing.assert_array_equal(rio.unpack_img(packed)[1], gray)
    smooth = np.tile(np.linspace(0, 255, 32).astype(np.uint8)[None, :, None], (32, 1, 3))
    _, jpg = rio.unpack_img(rio.pack_img(rio.IRHeader(0, 0, 0, 0), smooth, quality=95))
    assert np.abs(jpg.astype(int) - smooth).max() <= 8
    assert rio.unpack_img(rio.pack_img(rio.IRHeader(0, 0, 0, 0), bgr, img_fmt=".png"), iscolor=0)[1].ndim == 2
    with pytest.raises(FormatError, match="not an image"):
        rio.unpack_img(rio.pack(rio.IRHeader(0, 0, 0, 0), b"garbage"))
