"""fnad.datasets: the bundled digits, IDX files and the MNIST directory loader."""
import gzip
import hashlib
import os
import struct
import tracemalloc

import numpy as np
import pytest

from fnad import datasets
from fnad.datasets import FileFormatError

# scikit-learn's digits: images per class 0..9.
SKLEARN_DIGIT_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


# --------------------------------------------------------------------------- digits

def test_digits_file_is_the_scikit_learn_file_with_its_license():
    with open(datasets.DIGITS_PATH, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert digest == "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
    license_path = os.path.join(os.path.dirname(datasets.DIGITS_PATH), "DIGITS_LICENSE.txt")
    text = open(license_path).read()
    assert "BSD 3-Clause License" in text and "scikit-learn developers" in text
    assert "Alpaydin" in text


def test_load_digits_shapes_ranges_and_counts():
    images, labels = datasets.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32
    assert labels.shape == (1797,) and labels.dtype == np.int32
    assert images.min() == 0.0 and images.max() == 1.0
    # pixels are counts 0..16 scaled by 1/16
    np.testing.assert_array_equal(images * 16, np.round(images * 16))
    assert np.bincount(labels).tolist() == SKLEARN_DIGIT_COUNTS
    assert labels[:10].tolist() == list(range(10))
    first_row_of_first_zero = [0, 0, 5, 13, 9, 1, 0, 0]
    assert (images[0, 0] * 16).tolist() == first_row_of_first_zero


def test_load_digits_returns_fresh_arrays():
    images, labels = datasets.load_digits()
    images[:] = 5
    labels[:] = 5
    images2, labels2 = datasets.load_digits()
    assert images2.max() == 1.0 and np.bincount(labels2).tolist() == SKLEARN_DIGIT_COUNTS


def test_digits_split_is_stratified_disjoint_and_deterministic():
    train_x, train_y = datasets.digits("train")
    test_x, test_y = datasets.digits("test")
    assert len(train_y) + len(test_y) == 1797
    assert abs(len(test_y) - 0.2 * 1797) <= 10
    test_counts = np.bincount(test_y, minlength=10)
    for c, total in enumerate(SKLEARN_DIGIT_COUNTS):
        assert test_counts[c] == round(0.2 * total)
    # disjoint and covering: the multiset of images is the full data set
    all_x, _ = datasets.load_digits()
    key = lambda xs: sorted(x.tobytes() for x in xs)  # noqa: E731
    assert key(np.concatenate([train_x, test_x])) == key(all_x)
    again_x, again_y = datasets.digits("test")
    np.testing.assert_array_equal(again_x, test_x)
    other_x, _ = datasets.digits("test", seed=1)
    assert not np.array_equal(other_x, test_x)


def test_digits_fractions_and_errors():
    x, y = datasets.digits("test", test_fraction=0.5)
    assert abs(len(y) - 898) <= 10
    assert len(datasets.digits("test", test_fraction=0.0)[1]) == 0
    assert len(datasets.digits("train", test_fraction=0.0)[1]) == 1797
    with pytest.raises(ValueError, match="split"):
        datasets.digits("validation")
    with pytest.raises(ValueError, match="test_fraction"):
        datasets.digits("train", test_fraction=1.5)


# --------------------------------------------------------------------------- IDX

IDX_CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C,
             np.float32: 0x0D, np.float64: 0x0E}


def write_idx(path, array, compress=False):
    """Write an IDX file by the format's definition, independently of the loader."""
    array = np.asarray(array)
    header = bytes([0, 0, IDX_CODES[array.dtype.type], array.ndim])
    header += b"".join(struct.pack(">i", d) for d in array.shape)
    payload = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(payload)
    return payload


@pytest.mark.parametrize("dtype", list(IDX_CODES), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gzip"])
@pytest.mark.parametrize("shape", [(5,), (3, 4, 2), (0, 2)])
def test_idx_round_trip(tmp_path, dtype, compress, shape):
    rng = np.random.default_rng(0)
    array = (rng.normal(size=shape) * 60).astype(dtype)
    path = tmp_path / ("x.idx.gz" if compress else "x.idx")
    write_idx(path, array, compress)
    out = datasets.load_idx(path)
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    assert out.shape == shape
    np.testing.assert_array_equal(out, array)


def test_idx_gzip_is_detected_by_content_not_name(tmp_path):
    write_idx(tmp_path / "plain-name", np.arange(4, dtype=np.uint8), compress=True)
    np.testing.assert_array_equal(datasets.load_idx(tmp_path / "plain-name"), np.arange(4))


def test_idx_bad_magic(tmp_path):
    payload = write_idx(tmp_path / "ok", np.arange(6, dtype=np.uint8))
    for bad in (b"\x01" + payload[1:], payload[:2] + b"\x0a" + payload[3:]):
        (tmp_path / "bad").write_bytes(bad)
        with pytest.raises(FileFormatError, match="bad magic") as info:
            datasets.load_idx(tmp_path / "bad")
        assert info.value.path == str(tmp_path / "bad")
    (tmp_path / "bad").write_bytes(b"PK\x03\x04 not idx at all")
    with pytest.raises(FileFormatError, match="bad magic"):
        datasets.load_idx(tmp_path / "bad")


@pytest.mark.parametrize("keep", [0, 3, 6, 10, -1])
def test_idx_truncated(tmp_path, keep):
    payload = write_idx(tmp_path / "ok", np.arange(12, dtype=np.int32).reshape(3, 4))
    (tmp_path / "bad").write_bytes(payload[:keep] if keep >= 0 else payload[:keep])
    with pytest.raises(FileFormatError, match="truncated"):
        datasets.load_idx(tmp_path / "bad")


def test_idx_trailing_bytes_and_broken_gzip(tmp_path):
    payload = write_idx(tmp_path / "ok", np.arange(4, dtype=np.uint8))
    (tmp_path / "long").write_bytes(payload + b"\0")
    with pytest.raises(FileFormatError, match="corrupted"):
        datasets.load_idx(tmp_path / "long")
    (tmp_path / "gz").write_bytes(gzip.compress(payload)[:-12])
    with pytest.raises(FileFormatError, match="gzip"):
        datasets.load_idx(tmp_path / "gz")


# --------------------------------------------------------------------------- MNIST

def _fake_mnist(directory, n_train=5, n_test=3, compress=True, dotted=False):
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        sep = "." if dotted else "-"
        suffix = ".gz" if compress else ""
        write_idx(os.path.join(directory, f"{split}-images{sep}idx3-ubyte{suffix}"),
                  images, compress)
        write_idx(os.path.join(directory, f"{split}-labels{sep}idx1-ubyte{suffix}"),
                  labels, compress)
        arrays[split] = (images, labels)
    return arrays


@pytest.mark.parametrize("compress, dotted", [(True, False), (False, False), (False, True)])
def test_load_mnist(tmp_path, compress, dotted):
    raw = _fake_mnist(tmp_path, compress=compress, dotted=dotted)
    (train_x, train_y), (test_x, test_y) = datasets.load_mnist(tmp_path)
    assert train_x.shape == (5, 28, 28) and test_x.shape == (3, 28, 28)
    assert train_x.dtype == np.float32 and train_y.dtype == np.int32
    assert 0.0 <= train_x.min() and train_x.max() <= 1.0
    np.testing.assert_allclose(train_x * 255, raw["train"][0])
    np.testing.assert_array_equal(test_y, raw["t10k"][1])


def test_load_mnist_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="train images.*train-images-idx3-ubyte"):
        datasets.load_mnist(tmp_path)
    _fake_mnist(tmp_path, compress=False)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(2, np.uint8))
    with pytest.raises(FileFormatError, match="expected 3 labels"):
        datasets.load_mnist(tmp_path)


# --------------------------------------------------------------------------- hostile IDX

def _idx_header(code, shape):
    return bytes([0, 0, code, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape)


def _zeros_gzip(prefix, mebibytes):
    """A gzip file holding `prefix` then `mebibytes` MiB of zeros: concatenated gzip
    members, one compressed MiB repeated, so the bomb is made in milliseconds."""
    member = gzip.compress(b"\0" * 2 ** 20, 9)
    return gzip.compress(prefix) + member * mebibytes


def _peak_memory(fn):
    tracemalloc.start()
    try:
        with pytest.raises(FileFormatError) as info:
            fn()
        return tracemalloc.get_traced_memory()[1], info.value
    finally:
        tracemalloc.stop()


def test_idx_gzip_bomb_stops_decompressing_past_the_declared_size(tmp_path):
    bomb = _zeros_gzip(_idx_header(0x08, (10,)) + b"\1" * 10, 600)
    assert len(bomb) < 700 * 2 ** 10                    # ~600 KiB expanding to 600 MiB
    (tmp_path / "bomb").write_bytes(bomb)
    peak, error = _peak_memory(lambda: datasets.load_idx(tmp_path / "bomb"))
    assert "corrupted" in str(error) and "needs 10 data bytes" in str(error)
    assert peak < 64 * 2 ** 20


def test_idx_declaring_more_than_max_bytes_is_refused_before_reading(tmp_path):
    bomb = _zeros_gzip(_idx_header(0x08, (600, 2 ** 20)), 600)
    (tmp_path / "bomb").write_bytes(bomb)
    peak, error = _peak_memory(lambda: datasets.load_idx(tmp_path / "bomb",
                                                         max_bytes=2 ** 29))
    assert "too large" in str(error) and "max_bytes=536870912" in str(error)
    assert peak < 16 * 2 ** 20
    (tmp_path / "big").write_bytes(_idx_header(0x0C, (3, 2 ** 28)))     # 3 GiB, 16 bytes
    with pytest.raises(FileFormatError, match="too large.*3221225472 bytes.*max_bytes"):
        datasets.load_idx(tmp_path / "big")
    assert datasets.MAX_IDX_BYTES == 2 ** 30


def test_idx_max_bytes_admits_files_up_to_the_limit(tmp_path):
    array = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    write_idx(tmp_path / "x", array, compress=True)
    np.testing.assert_array_equal(datasets.load_idx(tmp_path / "x", max_bytes=96), array)
    with pytest.raises(FileFormatError, match="too large"):
        datasets.load_idx(tmp_path / "x", max_bytes=95)


@pytest.mark.parametrize("code, shape, match", [
    (0x08, (0, 2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1), "beyond what numpy can hold"),
    (0x0E, (0, 2 ** 30, 2 ** 30, 2 ** 3), "beyond what numpy can hold"),
    (0x08, (1,) * 65, "64 dimensions"),
    (0x08, (2 ** 31, 1), "beyond 2\\*\\*31 - 1"),
    (0x08, (2 ** 32 - 1,), "beyond 2\\*\\*31 - 1"),
    (0x0E, (2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1), "beyond what numpy"),  # > int64
    (0x0E, (2 ** 31 - 1, 2 ** 20), "too large"),
])
def test_idx_dimensions_that_overflow(tmp_path, code, shape, match):
    (tmp_path / "bad").write_bytes(_idx_header(code, shape))
    with pytest.raises(FileFormatError, match=match):
        datasets.load_idx(tmp_path / "bad")


def test_load_mnist_passes_max_bytes(tmp_path):
    _fake_mnist(tmp_path, compress=True)
    with pytest.raises(FileFormatError, match="too large.*max_bytes=1000"):
        datasets.load_mnist(tmp_path, max_bytes=1000)
    (train_x, _), _ = datasets.load_mnist(tmp_path, max_bytes=5 * 28 * 28)
    assert train_x.shape == (5, 28, 28)
