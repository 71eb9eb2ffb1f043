"""Small datasets for demos and tests, and loaders for standard file formats.

Bundled: the 8x8 handwritten digits (1,797 images of the digits 0-9; pixel counts
0..16), the test set of the UCI "Optical Recognition of Handwritten Digits" data by
E. Alpaydin and C. Kaynak (1998), as scikit-learn ships it in
sklearn/datasets/data/digits.csv.gz (BSD 3-Clause License, Copyright (c) 2007-2026 The
scikit-learn developers). Attribution and the license text: DIGITS_LICENSE.txt, next
to this file.

Loaders: `load_idx` reads one IDX file (the MNIST format); `load_mnist` reads the four
standard MNIST (or Fashion-MNIST) files from a directory.

Every function returns numpy arrays: fnad operations accept them, and fnad.data.batches
turns them into batches of fnad Arrays.
"""
import functools
import gzip
import math
import os
import zlib
from typing import Any

import numpy as np

from ..io import FileFormatError

__all__ = ["load_digits", "digits", "load_idx", "load_mnist", "FileFormatError"]

_HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS_PATH = os.path.join(_HERE, "digits.csv.gz")
NUM_DIGITS = 1797


# --------------------------------------------------------------------------- digits

@functools.lru_cache(maxsize=1)
def _digits_table():
    with gzip.open(DIGITS_PATH, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int32)
    if table.shape != (NUM_DIGITS, 65):
        raise FileFormatError(DIGITS_PATH, f"expected {NUM_DIGITS} rows of 64 pixels and a "
                                           f"label, got a table of shape {table.shape}")
    table.flags.writeable = False
    return table


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 digits: (images float32 [1797, 8, 8] in [0, 1], labels int32 [1797]).

    numpy arrays, read from the copy bundled with fnad (no download).

    >>> images, labels = fnad.datasets.load_digits()
    >>> images.shape, images.dtype, labels[:5]
    ((1797, 8, 8), dtype('float32'), array([0, 1, 2, 3, 4], dtype=int32))
    """
    table = _digits_table()
    images = table[:, :64].reshape(-1, 8, 8).astype(np.float32) / np.float32(16)
    return images, table[:, 64].astype(np.int32)


def digits(split: str = "train", test_fraction: float = 0.2, seed: int = 0
          ) -> tuple[np.ndarray, np.ndarray]:
    """The train or test part of a stratified split of the digits: each class
    contributes round(test_fraction * its count) images to "test" and the rest to
    "train", chosen by `seed`, so the two splits of one seed are disjoint and cover
    the data. Returns (images, labels) as `load_digits` does, in the original order."""
    if split not in ("train", "test"):
        raise ValueError(f"digits: split must be 'train' or 'test', got {split!r}")
    if not 0 <= test_fraction <= 1:
        raise ValueError(f"digits: test_fraction must lie in [0, 1], got {test_fraction}")
    images, labels = load_digits()
    rng = np.random.default_rng(seed)
    in_test = np.zeros(len(labels), bool)
    for c in range(10):
        members = np.flatnonzero(labels == c)
        chosen = rng.permutation(members)[:int(round(test_fraction * len(members)))]
        in_test[chosen] = True
    keep = in_test if split == "test" else ~in_test
    return images[keep], labels[keep]


# --------------------------------------------------------------------------- IDX / MNIST

# The IDX format (http://yann.lecun.com/exdb/mnist/): the magic number's third byte
# codes the element type, its fourth the number of dimensions; then one big-endian
# int32 per dimension, then the data, big-endian, in C order.
_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
              0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


# The size limit of load_idx by default: far above MNIST (47 MB) and the largest IDX
# sets in common use (EMNIST ByClass, 547 MB), far below what a small hostile gzip file
# could otherwise expand to.
MAX_IDX_BYTES = 2 ** 30
_CHUNK = 1 << 26      # the first read buffer: all of MNIST's largest file


def load_idx(path: str | os.PathLike[str], max_bytes: int = MAX_IDX_BYTES) -> np.ndarray:
    """The array stored in the IDX file `path` (gzip-compressed or not, judged by its
    content), with native byte order. A file whose header declares more than
    `max_bytes` bytes of data raises FileFormatError before anything is decompressed
    or allocated; a larger trusted file needs a larger `max_bytes` (None: no limit).
    Decompression stops one byte past the declared size, so no file expands beyond
    it."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw) if gzipped else raw
        try:
            return _read_idx(path, stream, max_bytes)
        except (OSError, EOFError, zlib.error) as e:
            if not gzipped:
                raise
            raise FileFormatError(path, f"truncated or corrupted gzip data ({e})") from None


def _read_idx(path, stream, max_bytes):
    magic = _read_at_most(stream, 4).tobytes()
    if len(magic) < 4:
        raise FileFormatError(path, f"truncated: {len(magic)} bytes, too short for an IDX "
                                    f"magic number")
    zero, code, ndim = int.from_bytes(magic[:2], "big"), magic[2], magic[3]
    if zero != 0 or code not in _IDX_TYPES:
        raise FileFormatError(path, f"bad magic number 0x{magic.hex()}: not an IDX file "
                                    f"(expected 0x0000 then a type code in "
                                    f"{[hex(c) for c in _IDX_TYPES]} and the rank)")
    dims = _read_at_most(stream, 4 * ndim).tobytes()
    if len(dims) < 4 * ndim:
        raise FileFormatError(path, f"truncated: the header announces {ndim} dimensions but "
                                    f"the file ends after {4 + len(dims)} bytes")
    shape = tuple(int.from_bytes(dims[4 * i:4 * i + 4], "big") for i in range(ndim))
    dtype = _IDX_TYPES[code]
    expected = _declared_bytes(path, shape, dtype, max_bytes)
    data = _read_at_most(stream, expected + 1)
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "corrupted"
        found = f"{len(data)}" if len(data) < expected else "more"
        raise FileFormatError(path, f"{what}: shape {shape} of {dtype.newbyteorder('=')} "
                                    f"needs {expected} data bytes, the file has {found}")
    return data.view(dtype).reshape(shape).astype(dtype.newbyteorder("="), copy=False)


def _declared_bytes(path, shape, dtype, max_bytes):
    """The data size the header declares, after checking it against the limits."""
    if any(d >= 2 ** 31 for d in shape):     # the format's dimensions are signed int32
        raise FileFormatError(path, f"corrupted: shape {shape} has a dimension beyond "
                                    f"2**31 - 1 (negative as the format's int32)")
    if len(shape) > 64 or math.prod(d for d in shape if d) * dtype.itemsize > \
            np.iinfo(np.intp).max:
        raise FileFormatError(path, f"corrupted: shape {shape} is beyond what numpy can "
                                    f"hold (at most 64 dimensions, and at most 2**63 - 1 "
                                    f"bytes counting only the nonzero dimensions)")
    nbytes = math.prod(shape) * dtype.itemsize
    if max_bytes is not None and nbytes > max_bytes:
        raise FileFormatError(path, f"too large: shape {shape} of "
                                    f"{dtype.newbyteorder('=')} declares {nbytes} bytes, "
                                    f"more than max_bytes={max_bytes}; pass a larger "
                                    f"max_bytes to load a file you trust")
    return nbytes


def _read_at_most(stream, n):
    """Up to n bytes of stream as a uint8 array, read (and decompressed) into a buffer
    that grows as data arrives, so that the memory used follows what the file holds,
    not what its header claims."""
    buffer = np.empty(min(n, _CHUNK), np.uint8)
    size = 0
    while size < n:
        if size == len(buffer):
            grown = np.empty(min(n, 2 * len(buffer)), np.uint8)
            grown[:size] = buffer
            buffer = grown
        got = stream.readinto(memoryview(buffer)[size:])
        if not got:
            break
        size += got
    return buffer[:size]


_MNIST_FILES = {
    "train_images": ("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
    "train_labels": ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
    "test_images": ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
    "test_labels": ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"),
}


def load_mnist(directory: str | os.PathLike[str], max_bytes: int = MAX_IDX_BYTES) -> Any:
    """MNIST (or Fashion-MNIST) from the four standard files in `directory`, each raw or
    with a .gz suffix. Returns ((train_images, train_labels), (test_images,
    test_labels)): images float32 [N, 28, 28] scaled to [0, 1], labels int32 [N].
    `max_bytes`: the size limit of each file's data, as in `load_idx`."""
    parts = {}
    for part, names in _MNIST_FILES.items():
        candidates = [os.path.join(directory, n + ext) for n in names for ext in ("", ".gz")]
        found = next((c for c in candidates if os.path.exists(c)), None)
        if found is None:
            raise FileNotFoundError(f"load_mnist: no {part.replace('_', ' ')} file in "
                                    f"{directory}; looked for "
                                    + ", ".join(os.path.basename(c) for c in candidates))
        parts[part] = (found, load_idx(found, max_bytes))
    out = []
    for split in ("train", "test"):
        (image_path, images), (label_path, labels) = (parts[split + "_images"],
                                                      parts[split + "_labels"])
        if images.ndim != 3 or images.dtype != np.uint8:
            raise FileFormatError(image_path, f"expected uint8 images [N, rows, cols], got "
                                              f"{images.dtype}{list(images.shape)}")
        if labels.ndim != 1 or len(labels) != len(images):
            raise FileFormatError(label_path, f"expected {len(images)} labels for the "
                                              f"images in {image_path}, got shape "
                                              f"{labels.shape}")
        out.append((images.astype(np.float32) / np.float32(255), labels.astype(np.int32)))
    return tuple(out)
