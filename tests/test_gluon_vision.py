"""mx.gluon.data.vision: the datasets reading small files written here in the published formats
(MNIST's IDX files, CIFAR's binary batches, RecordIO image records, folders and lists of PNG
files), and the transforms against numpy references."""
from __future__ import annotations

import gzip
import struct
import tarfile

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError, MXNetError
from symjit.gluon.data import DataLoader, vision
from symjit.gluon.data.vision import transforms as T

cv2 = pytest.importorskip("cv2")


def _idx(path, magic, array, gz=True):
    raw = struct.pack(">I", magic) + struct.pack(">" + "I" * array.ndim, *array.shape) + array.tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(raw)


@pytest.mark.parametrize("cls,gz", [(vision.MNIST, True), (vision.FashionMNIST, False)])
def test_mnist_files(tmp_path, cls, gz):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 5, dtype=np.uint8)
    sfx = ".gz" if gz else ""
    _idx(tmp_path / f"t10k-images-idx3-ubyte{sfx}", 2051, images, gz)
    _idx(tmp_path / f"t10k-labels-idx1-ubyte{sfx}", 2049, labels, gz)
    ds = cls(str(tmp_path), train=False)
    assert len(ds) == 5
    x, y = ds[3]
    assert x.shape == (28, 28, 1) and x.dtype == np.uint8 and y.dtype == np.int32
    np.testing.assert_array_equal(x.asnumpy()[:, :, 0], images[3])
    assert int(y) == labels[3]
    t = cls(str(tmp_path), train=False, transform=lambda d, lab: (d.astype("float32") / 255, lab + 100))
    assert int(t[0][1]) == labels[0] + 100 and t[0][0].dtype == np.float32
    with pytest.raises(MXNetError, match=r"train-images-idx3-ubyte\.gz, train-labels-idx1-ubyte\.gz in"):
        cls(str(tmp_path))
    _idx(tmp_path / f"t10k-labels-idx1-ubyte{sfx}", 2051, labels, gz)
    with pytest.raises(FormatError, match="magic number 2049"):
        cls(str(tmp_path), train=False)


def _cifar_rows(rng, n, labels):
    images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    lab = rng.integers(0, 20, (n, labels), dtype=np.uint8)
    return images, lab, np.concatenate([lab, images.reshape(n, -1)], axis=1).tobytes()


def test_cifar10_from_files_in_a_subfolder_and_from_the_archive(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "a" / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    expected = []
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        images, lab, raw = _cifar_rows(rng, 2, 1)
        (folder / name).write_bytes(raw)
        expected.append((name, images, lab))
    train = vision.CIFAR10(str(tmp_path / "a"))
    assert len(train) == 10
    x, y = train[9]
    np.testing.assert_array_equal(x.asnumpy(), expected[4][1][1].transpose(1, 2, 0))
    assert int(y) == expected[4][2][1, 0]
    with tarfile.open(tmp_path / "cifar-10-binary.tar.gz", "w:gz") as tar:
        for name, _, _ in expected:
            tar.add(folder / name, arcname=f"cifar-10-batches-bin/{name}")
    test = vision.CIFAR10(str(tmp_path), train=False)
    np.testing.assert_array_equal(test[1][0].asnumpy(), expected[5][1][1].transpose(1, 2, 0))
    with pytest.raises(MXNetError, match="test_batch.bin"):
        vision.CIFAR10(str(tmp_path / "b"), train=False)


def test_cifar100_coarse_and_fine_labels(tmp_path):
    images, lab, raw = _cifar_rows(np.random.default_rng(2), 3, 2)
    (tmp_path / "train.bin").write_bytes(raw)
    coarse, fine = vision.CIFAR100(str(tmp_path)), vision.CIFAR100(str(tmp_path), fine_label=True)
    assert [int(coarse[i][1]) for i in range(3)] == lab[:, 0].tolist()
    assert [int(fine[i][1]) for i in range(3)] == lab[:, 1].tolist()
    np.testing.assert_array_equal(fine[2][0].asnumpy(), images[2].transpose(1, 2, 0))
    (tmp_path / "test.bin").write_bytes(raw[:-5])
    with pytest.raises(FormatError, match="3074-byte records"):
        vision.CIFAR100(str(tmp_path), train=False)


def _png(img):
    ok, buf = cv2.imencode(".png", img[:, :, ::-1])
    assert ok
    return buf.tobytes()


def test_image_record_folder_and_list_datasets(tmp_path):
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (4 + i, 6, 3), dtype=np.uint8) for i in range(4)]
    rec = tmp_path / "imgs.rec"
    w = mx.recordio.MXIndexedRecordIO(str(tmp_path / "imgs.idx"), str(rec), "w")
    for i, img in enumerate(imgs):
        w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i * 2), i, 0), _png(img)))
    w.close()
    ds = vision.ImageRecordDataset(str(rec))
    for i in range(4):
        x, y = ds[i]
        np.testing.assert_array_equal(x.asnumpy(), imgs[i])
        assert y == i * 2
    batches = list(DataLoader(ds.transform_first(T.Resize((6, 4))), 2, num_workers=2))
    assert [b[0].shape for b in batches] == [(2, 4, 6, 3)] * 2 and batches[1][1].asnumpy().tolist() == [4, 6]
    gray = vision.ImageRecordDataset(str(rec), flag=0)[0][0]
    assert gray.shape == (4, 6, 1)

    for cls, k in (("cat", 0), ("ant", 1), ("ant", 2)):
        (tmp_path / "tree" / cls).mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / cls / f"{k}.png").write_bytes(_png(imgs[k]))
    (tmp_path / "tree" / "ant" / "notes.txt").write_text("not an image")
    (tmp_path / "tree" / "README").write_text("")
    with pytest.warns(UserWarning, match="ignoring"):
        folder = vision.ImageFolderDataset(str(tmp_path / "tree"))
    assert folder.synsets == ["ant", "cat"] and [lab for _, lab in folder.items] == [0, 0, 1]
    np.testing.assert_array_equal(folder[2][0].asnumpy(), imgs[0])

    (tmp_path / "tree.lst").write_text("0\t1\ttree/ant/1.png\n1\t5\t6\ttree/cat/0.png\n")
    listed = vision.ImageListDataset(str(tmp_path), "tree.lst")
    x, y = listed[1]
    np.testing.assert_array_equal(x.asnumpy(), imgs[0])
    assert y.asnumpy().tolist() == [5.0, 6.0]
    entries = vision.ImageListDataset(str(tmp_path / "tree"), [[3, "ant/2.png"]])
    assert entries[0][1].asnumpy().tolist() == [3.0] and entries[0][0].shape == imgs[2].shape
    with pytest.raises(MXNetError, match="imglist"):
        vision.ImageListDataset(str(tmp_path), None)


# --- transforms ---------------------------------------------------------------------------------


def _img(h=7, w=5, seed=0, dtype=np.uint8):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3)).astype(dtype)


def test_to_tensor_normalize_cast():
    img = _img()
    t = T.ToTensor()(mx.nd.array(img, dtype="uint8"))
    assert t.dtype == np.float32
    np.testing.assert_allclose(t.asnumpy(), img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    batch = T.ToTensor()(mx.nd.array(np.stack([img, img]), dtype="uint8"))
    assert batch.shape == (2, 3, 7, 5)
    n = T.Normalize(mean=(0.1, 0.2, 0.3), std=(2.0, 1.0, 0.5))(t).asnumpy()
    mean, std = np.array([0.1, 0.2, 0.3])[:, None, None], np.array([2, 1, .5])[:, None, None]
    ref = (img.transpose(2, 0, 1) / 255.0 - mean) / std
    np.testing.assert_allclose(n, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError):
        T.Normalize((0, 1, 2), (1, 1, 1))(mx.nd.ones((4, 2, 2)))
    assert T.Cast("float64")(mx.nd.ones((2,))).dtype == np.float64


def test_resize_crop_and_center_crop_against_opencv_and_slices():
    img = _img(9, 12, 1, np.float32)
    x = mx.nd.array(img)
    np.testing.assert_allclose(T.Resize((6, 4))(x).asnumpy(), cv2.resize(img, (6, 4), interpolation=1),
                               rtol=1e-5, atol=1e-3)
    assert T.Resize(6, keep_ratio=True)(x).shape == (6, 8, 3)
    u8 = _img(9, 12, 2)
    for interp in (0, 1, 2, 3):    # integer images and other interpolations: OpenCV's values
        np.testing.assert_array_equal(T.Resize((5, 7), interpolation=interp)(mx.nd.array(u8, dtype="uint8"))
                                      .asnumpy(), cv2.resize(u8, (5, 7), interpolation=interp))
    batch = mx.nd.array(np.stack([u8] * 2))
    assert T.Resize(6, keep_ratio=True, interpolation=2)(batch).shape == (2, 6, 8, 3)
    with pytest.raises(MXNetError, match="size"):
        T.Resize((1, 2, 3), interpolation=2)(x)
    np.testing.assert_array_equal(T.CropResize(2, 1, 4, 3)(x).asnumpy(), img[1:4, 2:6])
    np.testing.assert_allclose(T.CropResize(2, 1, 4, 3, size=(8, 6))(x).asnumpy(),
                               cv2.resize(img[1:4, 2:6], (8, 6), interpolation=1), rtol=1e-5, atol=1e-3)
    with pytest.raises(MXNetError):
        T.CropResize(10, 0, 5, 5)(x)
    np.testing.assert_array_equal(T.CenterCrop((4, 3))(x).asnumpy(), img[3:6, 4:8])
    out = T.RandomResizedCrop((5, 4), scale=(0.3, 0.6))(mx.nd.array(_img(20, 20), dtype="uint8"))
    assert out.shape == (4, 5, 3) and out.dtype == np.uint8


def test_random_flips_and_color_transforms_stay_within_their_ranges():
    img = _img(6, 4, 2, np.float32)
    x = mx.nd.array(img)
    seen_lr, seen_tb = set(), set()
    for _ in range(12):
        a, b = T.RandomFlipLeftRight()(x).asnumpy(), T.RandomFlipTopBottom()(x).asnumpy()
        assert np.array_equal(a, img) or np.array_equal(a, img[:, ::-1])
        assert np.array_equal(b, img) or np.array_equal(b, img[::-1])
        seen_lr.add(np.array_equal(a, img))
        seen_tb.add(np.array_equal(b, img))
    assert seen_lr == seen_tb == {True, False}
    ratio = T.RandomBrightness(0.3)(x).asnumpy() / np.maximum(img, 1e-6)
    factor = ratio[img > 1].flat[0]
    assert np.allclose(ratio[img > 1], factor, rtol=1e-4) and 0.7 - 1e-5 <= factor <= 1.3 + 1e-5
    for t in (T.RandomContrast(0.2), T.RandomSaturation(0.2), T.RandomHue(0.2),
              T.RandomColorJitter(0.1, 0.1, 0.1, 0.1), T.RandomLighting(0.1)):
        out = t(x)
        assert out.shape == x.shape and out.dtype == np.float32 and np.isfinite(out.asnumpy()).all()
    np.testing.assert_allclose(T.RandomLighting(0.0)(x).asnumpy(), img, rtol=1e-6)
    u8 = _img(6, 4, 3)
    for t in (T.RandomBrightness(0.5), T.RandomColorJitter(0.3, 0.3, 0.3, 0.1)):
        out = t(mx.nd.array(u8, dtype="uint8"))   # computed in float32, rounded back, saturating
        assert out.dtype == np.uint8 and out.shape == u8.shape
    bright = T.RandomBrightness(0.5)(mx.nd.array(u8, dtype="uint8")).asnumpy().astype(float)
    unsaturated = (u8 > 50) & (bright < 255)
    factor = float(np.median(bright[unsaturated] / u8[unsaturated]))
    np.testing.assert_allclose(bright, np.clip(np.rint(u8 * factor), 0, 255), atol=1.01)
    u8 = _img(3, 3, 4)
    gray = (u8.astype(np.float32) @ np.array([0.21, 0.72, 0.07], np.float32)).round()
    np.testing.assert_array_equal(T.RandomGray(1.0)(mx.nd.array(u8, dtype="uint8")).asnumpy(),
                                  np.repeat(gray[..., None], 3, axis=2).astype(np.uint8))
    assert np.array_equal(T.RandomGray(0.0)(mx.nd.array(u8, dtype="uint8")).asnumpy(), u8)


def test_rotations():
    img = np.random.default_rng(5).uniform(size=(2, 5, 5)).astype(np.float32)
    x = mx.nd.array(img)
    for k in range(4):
        np.testing.assert_allclose(T.Rotate(90 * k)(x).asnumpy(), np.rot90(img, k, axes=(1, 2)), atol=1e-5)
    batch = T.Rotate(180)(mx.nd.array(np.stack([img, img])))
    np.testing.assert_allclose(batch.asnumpy()[1], img[:, ::-1, ::-1], atol=1e-5)
    full = mx.nd.ones((1, 8, 8))
    assert T.Rotate(30)(full).asnumpy()[0, 0, 0] == 0
    assert T.Rotate(30, zoom_in=True)(full).asnumpy().min() > 0.99
    with pytest.raises(TypeError, match="float32"):
        T.Rotate(10)(mx.nd.ones((3, 4, 4), dtype="uint8"))
    with pytest.raises(ValueError):
        T.RandomRotation((10, -10))
    np.testing.assert_array_equal(T.RandomRotation((-90, 90), rotate_with_proba=0)(x).asnumpy(), img)
    assert T.RandomRotation((-20, 20))(x).shape == (2, 5, 5)


def test_compose_and_random_apply():
    img = _img(8, 8, 6)
    chain = T.Compose([T.CenterCrop(4), T.ToTensor(), T.Normalize(0.5, 0.5)])
    assert len(chain) == 3 and isinstance(chain[1], T.ToTensor)
    np.testing.assert_allclose(chain(mx.nd.array(img, dtype="uint8")).asnumpy(),
                               (img[2:6, 2:6].transpose(2, 0, 1) / 255.0 - 0.5) / 0.5, rtol=1e-5, atol=1e-6)
    apply = T.RandomApply(T.Compose([T.Cast("float16")]), p=0.5)
    kinds = {apply(mx.nd.ones((1,))).dtype for _ in range(40)}
    assert kinds == {np.dtype("float16").type, np.float32}
