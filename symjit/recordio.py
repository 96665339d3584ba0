"""``mx.recordio``: MXNet's RecordIO files (``.rec``) and their index (``.idx``).

The format (dmlc-core's, which MXNet's ``im2rec`` writes): a file is a sequence of records;
each starts with the magic number ``0xced7230a`` and a word whose top 3 bits are a continuation
flag and low 29 bits the payload length (both little-endian uint32), then the payload padded with
zeros to a multiple of 4 bytes. A payload that contains the magic number at a 4-byte-aligned
position is written as several parts (flags 1 = first, 2 = middle, 3 = last; 0 = whole), split at
those positions with the magic itself left out; a reader joins the parts with the magic between
them. An index file has one ``key<TAB>offset`` line per record (``MXIndexedRecordIO``).

A record of an image set holds an ``IRHeader`` (``flag`` uint32, ``label`` float32, ``id`` and
``id2`` uint64; 24 bytes) then the image bytes; with ``flag > 0`` the header's label is 0 and
``flag`` float32 labels follow the header (:func:`pack`/:func:`unpack`).

Reading never executes anything: payloads are bytes, images are decoded by OpenCV (the ``image``
extra), as in MXNet.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), 'x.rec')
>>> w = MXRecordIO(path, 'w'); w.write(b'hello'); w.write(pack(IRHeader(0, 3.0, 7, 0), b'img')); w.close()
>>> r = MXRecordIO(path, 'r'); r.read(), unpack(r.read()); r.close()
(b'hello', (HeaderRecord(flag=0, label=3.0, id=7, id2=0), b'img'))
"""
from __future__ import annotations

import os
import struct
from collections import namedtuple
from typing import Any

import numpy as np

from .base import FormatError, MXNetError, ParamError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img",
           "scan_offsets"]

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LEN_MASK = (1 << 29) - 1
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)

IRHeader = namedtuple("HeaderRecord", ["flag", "label", "id", "id2"])
"""The header of an image record: ``flag`` (number of extra labels), ``label``, ``id``, ``id2``."""


def _aligned_magic(buf: bytes) -> list[int]:
    """The 4-byte-aligned offsets where ``buf`` holds the magic number."""
    n = len(buf) // 4
    if n == 0:
        return []
    words = np.frombuffer(buf, dtype="<u4", count=n)
    return [int(i) * 4 for i in np.flatnonzero(words == MAGIC)]


class MXRecordIO:
    """Sequential reading (``flag='r'``) or writing (``'w'``) of a RecordIO file.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'y.rec')
    >>> with MXRecordIO(path, 'w') as w:
    ...     w.write(b'a' * 5)
    >>> with MXRecordIO(path, 'r') as r:
    ...     [r.read(), r.read()]
    [b'aaaaa', None]
    """

    def __init__(self, uri: str | os.PathLike, flag: str):
        if flag not in ("r", "w"):
            raise ParamError(f"MXRecordIO: flag must be 'r' or 'w', got {flag!r}")
        self.uri, self.flag = os.fspath(uri), flag
        self.is_open = False
        self._file: Any = None
        self.open()

    def open(self) -> None:
        """Open the file (at its start for reading; truncated for writing)."""
        try:
            self._file = open(self.uri, "rb" if self.flag == "r" else "wb")
        except OSError as exc:
            raise MXNetError(f"MXRecordIO: cannot open {self.uri!r} for "
                             f"{'reading' if self.flag == 'r' else 'writing'}: {exc}") from exc
        self.writable = self.flag == "w"
        self.is_open = True

    def close(self) -> None:
        """Close the file."""
        if self.is_open:
            self._file.close()
            self.is_open = False

    def __enter__(self) -> MXRecordIO:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def reset(self) -> None:
        """Back to the start (reading) or start again (writing)."""
        self.close()
        self.open()

    def _need(self, mode: str, op: str) -> None:
        if not self.is_open:
            raise MXNetError(f"MXRecordIO.{op}: {self.uri!r} is closed")
        if self.flag != mode:
            raise MXNetError(f"MXRecordIO.{op}: {self.uri!r} is open for "
                             f"{'reading' if self.flag == 'r' else 'writing'}")

    def tell(self) -> int:
        """The byte offset of the next record."""
        return self._file.tell()

    def write(self, buf: bytes) -> None:
        """Append one record holding ``buf``."""
        self._need("w", "write")
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise ParamError(f"MXRecordIO.write: buf must be bytes, got {type(buf).__name__}")
        buf = bytes(buf)
        cuts = _aligned_magic(buf)
        starts = [0] + [c + 4 for c in cuts]
        ends = cuts + [len(buf)]
        for k, (a, b) in enumerate(zip(starts, ends)):
            cflag = 0 if len(starts) == 1 else 1 if k == 0 else 3 if k == len(starts) - 1 else 2
            part = buf[a:b]
            if len(part) > _LEN_MASK:
                raise MXNetError(f"MXRecordIO.write: a record part of {len(part)} bytes exceeds the "
                                 f"format's limit of {_LEN_MASK} bytes")
            self._file.write(_MAGIC_BYTES + struct.pack("<I", (cflag << 29) | len(part)) + part
                             + b"\0" * (-len(part) % 4))

    def _read_part(self) -> tuple[int, bytes] | None:
        at = self._file.tell()
        head = self._file.read(8)
        if not head:
            return None
        if len(head) < 8:
            raise FormatError(f"MXRecordIO.read: {self.uri!r} ends inside a record header at byte {at}")
        magic, word = struct.unpack("<II", head)
        if magic != MAGIC:
            raise FormatError(f"MXRecordIO.read: {self.uri!r} has no record at byte {at} (magic "
                              f"{magic:#010x}, expected {MAGIC:#010x})")
        length = word & _LEN_MASK
        data = self._file.read(length + (-length % 4))
        if len(data) < length:
            raise FormatError(f"MXRecordIO.read: {self.uri!r} ends inside the record at byte {at} "
                              f"({len(data)} of {length} bytes)")
        return word >> 29, data[:length]

    def read(self) -> bytes | None:
        """The next record's bytes, or ``None`` at the end of the file."""
        self._need("r", "read")
        first = self._read_part()
        if first is None:
            return None
        cflag, data = first
        if cflag == 0:
            return data
        if cflag != 1:
            raise FormatError(f"MXRecordIO.read: {self.uri!r}: a record continues a record that did "
                              "not start")
        parts = [data]
        while True:
            nxt = self._read_part()
            if nxt is None or nxt[0] not in (2, 3):
                raise FormatError(f"MXRecordIO.read: {self.uri!r} ends inside a multi-part record")
            parts.append(nxt[1])
            if nxt[0] == 3:
                return _MAGIC_BYTES.join(parts)


def scan_offsets(uri: str | os.PathLike) -> list[int]:
    """The byte offsets of every record of a RecordIO file (read from the headers only).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 's.rec')
    >>> with MXRecordIO(path, 'w') as w:
    ...     w.write(b'abc'); w.write(b'defgh')
    >>> scan_offsets(path)
    [0, 12]
    """
    offsets, where = [], os.fspath(uri)
    try:
        size = os.path.getsize(where)
        f = open(where, "rb")
    except OSError as exc:
        raise MXNetError(f"recordio: cannot read {where!r}: {exc}") from exc
    with f:
        pos = 0
        while pos < size:
            head = f.read(8)
            if len(head) < 8:
                raise FormatError(f"recordio: {where!r} ends inside a record header at byte {pos}")
            magic, word = struct.unpack("<II", head)
            if magic != MAGIC:
                raise FormatError(f"recordio: {where!r} has no record at byte {pos} (magic {magic:#010x})")
            if word >> 29 in (0, 1):
                offsets.append(pos)
            length = word & _LEN_MASK
            pos += 8 + length + (-length % 4)
            if pos > size:
                raise FormatError(f"recordio: {where!r} ends inside the record at byte {offsets[-1]}")
            f.seek(pos)
    return offsets


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index (``idx_path``: ``key<TAB>offset`` lines) for random access.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> w = MXIndexedRecordIO(os.path.join(d, 'z.idx'), os.path.join(d, 'z.rec'), 'w')
    >>> for i in range(3):
    ...     w.write_idx(i, str(i).encode())
    >>> w.close()
    >>> r = MXIndexedRecordIO(os.path.join(d, 'z.idx'), os.path.join(d, 'z.rec'), 'r')
    >>> r.read_idx(2), r.keys
    (b'2', [0, 1, 2])
    """

    def __init__(self, idx_path: str | os.PathLike, uri: str | os.PathLike, flag: str, key_type: type = int):
        self.idx_path, self.key_type = os.fspath(idx_path), key_type
        self.idx: dict[Any, int] = {}
        self.keys: list[Any] = []
        self._fidx: Any = None
        super().__init__(uri, flag)

    def open(self) -> None:
        """Open the record file and read (or start) the index."""
        super().open()
        self.idx, self.keys = {}, []
        if self.flag == "w":
            self._fidx = open(self.idx_path, "w")
            return
        try:
            with open(self.idx_path) as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise MXNetError(f"MXIndexedRecordIO: cannot read the index {self.idx_path!r}: {exc}") from exc
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            fields = line.strip().split("\t")
            try:
                key, offset = self.key_type(fields[0]), int(fields[1])
            except (ValueError, IndexError):
                raise FormatError(f"MXIndexedRecordIO: index {self.idx_path!r} line {n} is not "
                                  f"'key<TAB>offset': {line[:80]!r}") from None
            self.idx[key] = offset
            self.keys.append(key)

    def close(self) -> None:
        """Close the record file and the index."""
        if self.is_open and self._fidx is not None:
            self._fidx.close()
            self._fidx = None
        super().close()

    def seek(self, idx: Any) -> None:
        """Move to the record of key ``idx``."""
        self._need("r", "seek")
        if idx not in self.idx:
            raise MXNetError(f"MXIndexedRecordIO.seek: key {idx!r} is not in the index {self.idx_path!r}")
        self._file.seek(self.idx[idx])

    def read_idx(self, idx: Any) -> bytes | None:
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append ``buf`` as the record of key ``idx``."""
        self._need("w", "write_idx")
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self._fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


def pack(header: IRHeader, s: bytes) -> bytes:
    """An image record: ``header`` (a label array becomes ``flag`` extra labels) then ``s``.

    >>> unpack(pack(IRHeader(0, [1, 2], 5, 0), b'x'))[0].label.tolist()
    [1.0, 2.0]
    """
    header = IRHeader(*header)
    label = np.asarray(header.label, dtype=np.float32)
    if label.ndim == 0:
        head = struct.pack(_IR_FORMAT, 0, float(label), int(header.id), int(header.id2))
        return head + bytes(s)
    head = struct.pack(_IR_FORMAT, label.size, 0.0, int(header.id), int(header.id2))
    return head + label.astype("<f4").tobytes() + bytes(s)


def unpack(s: bytes) -> tuple[IRHeader, bytes]:
    """``(header, payload)`` of a record made by :func:`pack` (label an array when ``flag > 0``)."""
    if len(s) < _IR_SIZE:
        raise FormatError(f"recordio.unpack: a record of {len(s)} bytes is shorter than the "
                          f"{_IR_SIZE}-byte header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise FormatError(f"recordio.unpack: the header announces {header.flag} labels but the record "
                              f"holds {len(s)} bytes after it")
        header = header._replace(label=np.frombuffer(s[:4 * header.flag], dtype="<f4").copy())
        s = s[4 * header.flag:]
    return header, s


def _cv2() -> Any:
    try:
        import cv2
    except ImportError as exc:
        raise MXNetError("images need OpenCV: pip install 'symjit[image]' (or pip install "
                         "opencv-python-headless)") from exc
    return cv2


def encode_image(img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """``img`` (HxW gray or HxWx3 BGR uint8, as OpenCV holds images) encoded as JPEG or PNG
    (``quality``: JPEG quality, or PNG compression level 0-9)."""
    cv2 = _cv2()
    arr = np.asarray(img)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (1, 3)):
        raise ParamError(f"pack_img: img must be uint8 HxW or HxWx3 (BGR), got {arr.dtype} {arr.shape}")
    fmt = img_fmt.lower()
    if fmt in (".jpg", ".jpeg"):
        params = [cv2.IMWRITE_JPEG_QUALITY, int(quality)]
    elif fmt == ".png":
        params = [cv2.IMWRITE_PNG_COMPRESSION, max(0, min(9, int(quality)))]
    else:
        raise ParamError(f"pack_img: img_fmt must be '.jpg' or '.png', got {img_fmt!r}")
    ok, buf = cv2.imencode(fmt, np.ascontiguousarray(arr), params)
    if not ok:
        raise MXNetError(f"pack_img: OpenCV could not encode an image of shape {arr.shape} as {fmt}")
    return buf.tobytes()


def decode_image(buf: bytes, iscolor: int = -1) -> np.ndarray:
    """Decode JPEG/PNG bytes to a uint8 array with OpenCV (as MXNet does): BGR HxWx3
    (``iscolor=1``), gray HxW (``0``), or as stored (``-1``)."""
    cv2 = _cv2()
    flag = {1: cv2.IMREAD_COLOR, 0: cv2.IMREAD_GRAYSCALE, -1: cv2.IMREAD_UNCHANGED}.get(iscolor)
    if flag is None:
        raise ParamError(f"image decode: iscolor must be -1, 0 or 1, got {iscolor!r}")
    data = np.frombuffer(bytes(buf), dtype=np.uint8)
    img = cv2.imdecode(data, flag) if data.size else None
    if img is None:
        raise FormatError(f"image decode: the {data.size} bytes are not an image OpenCV can read "
                          f"(starting {bytes(buf[:8])!r})")
    return img


def pack_img(header: IRHeader, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """:func:`pack` of ``img`` (BGR or gray uint8) encoded as ``img_fmt``."""
    return pack(header, encode_image(img, quality, img_fmt))


def unpack_img(s: bytes, iscolor: int = -1) -> tuple[IRHeader, np.ndarray]:
    """``(header, image)`` of a record made by :func:`pack_img` (BGR or gray uint8)."""
    header, payload = unpack(s)
    return header, decode_image(payload, iscolor)
