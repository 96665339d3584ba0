"""mx.image functions and augmenters, mx.io.ImageRecordIter and mx.image.ImageIter on RecordIO
files made here with MXNet's layout (IRHeader, flag, label, id)."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")
rio = mx.recordio
R = np.random.default_rng(2)


def make_rec(tmp_path, images, labels, name="d", fmt=".png", index=False):
    rec = str(tmp_path / f"{name}.rec")
    idx = str(tmp_path / f"{name}.idx")
    w = rio.MXIndexedRecordIO(idx, rec, "w") if index else rio.MXRecordIO(rec, "w")
    for i, (img, label) in enumerate(zip(images, labels)):
        s = rio.pack_img(rio.IRHeader(0, label, i, 0), img[:, :, ::-1] if img.ndim == 3 else img, img_fmt=fmt)
        w.write_idx(i, s) if index else w.write(s)
    w.close()
    return rec, idx


# -- functions -------------------------------------------------------------------------------------
def test_decode_resize_crop():
    rgb = R.integers(0, 256, (10, 14, 3), dtype=np.uint8)
    buf = rio.pack_img(rio.IRHeader(0, 0, 0, 0), rgb[:, :, ::-1], img_fmt=".png")
    _, payload = rio.unpack(buf)
    img = mx.image.imdecode(payload)
    assert img.dtype == np.uint8 and img.shape == (10, 14, 3)
    np.testing.assert_array_equal(img.asnumpy(), rgb)                   # RGB by default
    np.testing.assert_array_equal(mx.image.imdecode(payload, to_rgb=False).asnumpy(), rgb[:, :, ::-1])
    assert mx.image.imdecode(payload, flag=0).shape == (10, 14, 1)
    assert mx.image.imresize(img, 7, 5).shape == (5, 7, 3)
    assert mx.image.resize_short(img, 5).shape == (5, 7, 3)
    out, box = mx.image.center_crop(img, (6, 4))
    assert box == (4, 3, 6, 4)
    np.testing.assert_array_equal(out.asnumpy(), rgb[3:7, 4:10])
    np.testing.assert_array_equal(mx.image.fixed_crop(img, 1, 2, 3, 4).asnumpy(), rgb[2:6, 1:4])
    mx.random.seed(5)
    a, box_a = mx.image.random_crop(img, (4, 4))
    mx.random.seed(5)
    b, box_b = mx.image.random_crop(img, (4, 4))
    assert box_a == box_b and np.array_equal(a.asnumpy(), b.asnumpy())
    x0, y0, w, h = box_a
    np.testing.assert_array_equal(a.asnumpy(), rgb[y0:y0 + h, x0:x0 + w])
    norm = mx.image.color_normalize(img, mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(norm.asnumpy(), (rgb - np.array([1, 2, 3])) / 2, rtol=1e-6)
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    with pytest.raises(MXNetError, match="does not fit"):
        mx.image.fixed_crop(img, 10, 0, 5, 5)


def test_augmenters():
    img = R.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(1.0)(img), img[:, ::-1])
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(0.0)(img), img)
    gray = np.repeat(R.integers(0, 256, (6, 6, 1)), 3, axis=2).astype(np.uint8)
    np.testing.assert_allclose(mx.image.SaturationJitterAug(0.5)(gray), gray, atol=1e-3)
    flat = np.full((5, 5, 3), 90, np.uint8)
    np.testing.assert_allclose(mx.image.ContrastJitterAug(0.5)(flat), flat, atol=1e-3)
    assert np.allclose(mx.image.BrightnessJitterAug(0.0)(img), img)
    g = mx.image.RandomGrayAug(1.0)(img)
    assert np.allclose(g[..., 0], g[..., 1]) and np.allclose(g[..., 1], g[..., 2])
    np.testing.assert_allclose(mx.image.HueJitterAug(0.0)(img), img, atol=1e-3)
    out = mx.image.ColorNormalizeAug([10, 20, 30], [2, 4, 5])(img)
    np.testing.assert_allclose(out, (img - np.array([10, 20, 30])) / np.array([2, 4, 5]), rtol=1e-6)
    nd_out = mx.image.CastAug()(mx.nd.array(img, dtype="uint8"))
    assert isinstance(nd_out, mx.nd.NDArray) and nd_out.dtype == np.float32
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_resize=True, rand_mirror=True,
                                    brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                                    rand_gray=0.1, mean=True, std=True)
    names = [type(a).__name__ for a in augs]
    assert names == ["ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug",
                     "HueJitterAug", "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    x = img
    for a in augs:
        x = a(x)
    assert x.shape == (8, 8, 3) and x.dtype == np.float32
    assert '"resizeaug"' in augs[0].dumps()
    with pytest.raises(MXNetError, match="rand_resize needs rand_crop"):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)


# -- ImageRecordIter -------------------------------------------------------------------------------
def colored(n, h=8, w=8):
    """Image i is the constant color (10 i, 10 i + 1, 10 i + 2)."""
    return [np.broadcast_to(np.array([10 * i, 10 * i + 1, 10 * i + 2], np.uint8), (h, w, 3)).copy()
            for i in range(n)]


def test_image_record_iter_values_labels_padding(tmp_path):
    rec, _ = make_rec(tmp_path, colored(5), [float(i) for i in range(5)])
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 6, 6), batch_size=2, mean_r=1, mean_g=2,
                               mean_b=3, std_r=2, std_g=2, std_b=2, scale=0.5)
    assert it.provide_data[0].shape == (2, 3, 6, 6) and it.provide_label[0].shape == (2,)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 1]
    labels = np.concatenate([b.label[0].asnumpy() for b in batches])
    assert labels.tolist() == [0, 1, 2, 3, 4, 0]
    data = np.concatenate([b.data[0].asnumpy() for b in batches])
    want = (np.array([10, 11, 12]) - np.array([1, 2, 3])) / 2 * 0.5
    np.testing.assert_allclose(data[1], np.broadcast_to(want[:, None, None], (3, 6, 6)), rtol=1e-6)
    it.reset()
    assert len(list(it)) == 3
    it.close()
    drop = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, round_batch=False)
    assert len(list(drop)) == 2
    u8 = next(mx.io.ImageRecordUInt8Iter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2))
    assert u8.data[0].dtype == np.uint8 and u8.data[0].asnumpy()[1, :, 0, 0].tolist() == [10, 11, 12]
    gray = next(mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(1, 8, 8), batch_size=1))
    assert gray.data[0].shape == (1, 1, 8, 8)


def test_image_record_iter_augmentation_is_seeded_not_threaded(tmp_path):
    images = [R.integers(0, 256, (12, 16, 3), dtype=np.uint8) for _ in range(6)]
    rec, idx = make_rec(tmp_path, images, list(range(6)), index=True)

    def run(threads, seed=3):
        it = mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 8, 8), batch_size=3,
                                   rand_crop=True, rand_mirror=True, shuffle=True, seed=seed, resize=10,
                                   preprocess_threads=threads)
        out = [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]
        it.close()
        return out

    one, four = run(1), run(4)
    for (d1, l1), (d4, l4) in zip(one, four):
        np.testing.assert_array_equal(d1, d4)
        np.testing.assert_array_equal(l1, l4)
    assert sorted(np.concatenate([lb for _, lb in one]).tolist()) == list(range(6))
    other = run(4, seed=4)
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(one, other))


def test_image_record_iter_parts_label_width_errors(tmp_path):
    rec, _ = make_rec(tmp_path, colored(4), [[i, 10 + i] for i in range(4)])
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, label_width=2,
                               num_parts=2, part_index=1)
    b = next(it)
    assert b.label[0].asnumpy().tolist() == [[2, 12], [3, 13]]
    with pytest.raises(MXNetError, match=r"\['max_rotate_angle'\] are not supported"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, max_rotate_angle=10)
    with pytest.raises(MXNetError, match="has 2 labels but label_width is 3"):
        next(mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, label_width=3))
    bad = str(tmp_path / "bad.rec")
    with rio.MXRecordIO(bad, "w") as w:
        w.write(rio.pack(rio.IRHeader(0, 1.0, 0, 0), b"not an image"))
    with pytest.raises(MXNetError, match="sample 0: .*not an image"):
        next(mx.io.ImageRecordIter(path_imgrec=bad, data_shape=(3, 8, 8), batch_size=1))


def test_image_iter_from_list_and_rec(tmp_path):
    entries = []
    for i, img in enumerate(colored(3, 10, 10)):
        (tmp_path / f"im{i}.png").write_bytes(rio.encode_image(img[:, :, ::-1], img_fmt=".png"))
        entries.append([float(i), f"im{i}.png"])
    it = mx.image.ImageIter(2, (3, 8, 8), imglist=entries, path_root=str(tmp_path),
                            aug_list=[mx.image.CenterCropAug((8, 8)), mx.image.CastAug()])
    b = next(it)
    assert b.data[0].shape == (2, 3, 8, 8) and b.label[0].asnumpy().tolist() == [0, 1]
    assert b.data[0].asnumpy()[1, :, 0, 0].tolist() == [10, 11, 12]
    (tmp_path / "l.lst").write_text("".join(f"{i}\t{i}\tim{i}.png\n" for i in range(3)))
    from_lst = mx.image.ImageIter(3, (3, 8, 8), path_imglist=str(tmp_path / "l.lst"), path_root=str(tmp_path))
    assert next(from_lst).label[0].asnumpy().tolist() == [0, 1, 2]
    rec, _ = make_rec(tmp_path, colored(3, 10, 10), [0, 1, 2], name="r")
    from_rec = mx.image.ImageIter(3, (3, 8, 8), path_imgrec=rec, rand_crop=True, rand_mirror=True)
    assert next(from_rec).data[0].shape == (3, 3, 8, 8)
    with pytest.raises(MXNetError, match="exactly one of"):
        mx.image.ImageIter(2, (3, 8, 8))
    empty = mx.image.ImageIter(2, (3, 8, 8), imglist=[], rand_crop=True, mean=True)   # an empty epoch
    assert list(empty) == [] and empty.num_image == 0


def _det_rec(path):
    """Five 20x30 random images with 1, 2, 3, 1, 2 boxes (the file MXNet 1.9.1 read below)."""
    w = mx.recordio.MXRecordIO(str(path), "w")
    rng = np.random.default_rng(0)
    for i in range(5):
        img = rng.integers(0, 255, (20, 30, 3)).astype(np.uint8)
        objs = []
        for k in range(i % 3 + 1):
            objs += [k, 0.1, 0.2, 0.5 + 0.1 * k, 0.6]
        w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, np.array([2, 5] + objs, np.float32), i, 0), img,
                                     img_fmt=".png"))
    w.close()


def test_image_det_record_iter_matches_mxnet(tmp_path):
    """Labels and pixels as MXNet 1.9.1's ImageDetRecordIter gave them for this file (recorded)."""
    path = tmp_path / "det.rec"
    _det_rec(path)
    it = mx.io.ImageDetRecordIter(path_imgrec=str(path), data_shape=(3, 16, 16), batch_size=2)
    assert it.provide_label[0].shape == (2, 21) and it.provide_label[0].name == "softmax_label"
    b = next(it)
    pad = [-1.0] * 10
    np.testing.assert_allclose(b.label[0].asnumpy(), [
        [3, 16, 16, 7, 2, 5, 0, 0.1, 0.2, 0.5, 0.6] + pad,
        [3, 16, 16, 12, 2, 5, 0, 0.1, 0.2, 0.5, 0.6, 1, 0.1, 0.2, 0.6, 0.6] + pad[:5]], rtol=1e-6)
    np.testing.assert_array_equal(b.data[0].asnumpy()[0, :, 0, :3], [[81, 106, 219], [135, 53, 142],
                                                                      [141, 77, 135]])
    flipped = next(mx.io.ImageDetRecordIter(path_imgrec=str(path), data_shape=(3, 16, 16), batch_size=2,
                                            rand_mirror_prob=1.0, label_pad_width=20, label_pad_value=-2))
    label = flipped.label[0].asnumpy()
    assert label.shape == (2, 24) and (label[0, 11:] == -2).all()
    np.testing.assert_allclose(label[1, 4:16], [2, 5, 0, 0.5, 0.2, 0.9, 0.6, 1, 0.4, 0.2, 0.9, 0.6],
                               rtol=1e-6)
    np.testing.assert_array_equal(flipped.data[0].asnumpy(), b.data[0].asnumpy()[:, :, :, ::-1])
    batches = list(mx.io.ImageDetRecordIter(path_imgrec=str(path), data_shape=(3, 16, 16), batch_size=2))
    assert len(batches) == 3 and batches[-1].pad == 1


def test_image_det_record_iter_errors(tmp_path):
    path = tmp_path / "det.rec"
    _det_rec(path)
    with pytest.raises(MXNetError, match=r"rand_crop_prob.*not supported"):
        mx.io.ImageDetRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2,
                                 rand_crop_prob=0.5)
    with pytest.raises(MXNetError, match="label_pad_width 10 is shorter than the longest label"):
        mx.io.ImageDetRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2,
                                 label_pad_width=10)
    with pytest.raises(MXNetError, match="unknown arguments"):
        mx.io.ImageDetRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2, rand_mirror=True)
    bad = tmp_path / "bad.rec"
    w = mx.recordio.MXRecordIO(str(bad), "w")
    w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, np.array([2, 5, 0, 0.1, 0.2], np.float32), 0, 0),
                                 np.zeros((4, 4, 3), np.uint8), img_fmt=".png"))
    w.close()
    with pytest.raises(MXNetError, match="record 0 .*malformed"):
        mx.io.ImageDetRecordIter(path_imgrec=str(bad), data_shape=(3, 8, 8), batch_size=1)
