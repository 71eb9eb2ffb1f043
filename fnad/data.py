"""Mini-batch iteration over arrays, optionally shuffled and prefetched.

``batches(data, batch_size, key)`` walks once through `data` — an array or a pytree
of arrays sharing a leading example axis — and yields batches of the same structure
whose leaves are fnad Arrays. Every example appears exactly once per pass (the last
batch is smaller unless ``drop_last``). The order is a function of `key` alone: an int
seed or an fnad.random key, so a training run is reproducible; shuffle each epoch
differently by passing a new key (``fnad.random.split``) or seed (``seed + epoch``)::

    for epoch in range(10):
        for x, y in fnad.data.batches((images, labels), 128, key=epoch):
            params, opt_state = step(params, opt_state, x, y)

The permutation comes from numpy's Generator seeded with the key's uint32 words (an
int seed stands for ``fnad.random.key(seed)``), so it does not depend on how
fnad.random draws numbers. With ``prefetch=k`` a background thread
gathers up to k batches ahead (numpy work and copies to a GPU only, never fnad
operations, so it cannot interfere with a transform running in the main thread).
Leaves on a GPU give batches on that GPU (gathered from a host copy).

``shard=(index, count)`` gives process `index` of `count` its part of each epoch, as
PyTorch's DistributedSampler does: every process draws the same permutation (the
same `key` everywhere), then takes every count-th example of it starting at `index`,
so the shards are disjoint, equally sized, and their union is the epoch. When count
does not divide the number of examples n, ``pad_shards=True`` (the default) repeats
the permutation's first examples to fill the last round (each process gets
ceil(n / count) examples; those few are seen twice in the epoch) and
``pad_shards=False`` leaves out the permutation's last n % count examples (each gets
floor(n / count); those are not seen this epoch, a different few each epoch)::

    shard = (fnad.distributed.process_index(), fnad.distributed.process_count())
    for x, y in fnad.data.batches((images, labels), 64, key=epoch, shard=shard): ...

`batch_size` is then the per-process batch size.
"""
import queue
import threading
from typing import Any, Sequence

import numpy as np

from .array import CPU, Array
from .backend import device_put
from . import dtypes
from . import random as fnad_random
from .errors import ShapeError
from .tree_util import tree_flatten, tree_unflatten
from .typing import PyTree


def batches(data: PyTree, batch_size: int, key: Any = None, *, drop_last: bool = False,
            prefetch: int = 0, shard: tuple[int, int] | None = None, pad_shards: bool = True
           ) -> "Batches":
    """An iterator over mini-batches of `data` (one pass).

    data:       an array or a pytree of arrays, all with the same leading axis length.
    batch_size: examples per batch.
    key:        None (the data's own order), an int seed, or an fnad.random key.
    drop_last:  leave out the final batch when it would be smaller than batch_size.
    prefetch:   batches a background thread prepares ahead (0: none, no thread).
    shard:      (index, count): only this process's part of the pass (see the module
                docstring); None: all of it.
    pad_shards: with shard, fill the last round by repeating examples (True) or leave
                the remainder out (False).

    Each batch has `data`'s structure, with Arrays. A given key shuffles: pass a new one
    (or seed) each epoch.

    >>> xs, ys = fnp.arange(10.0), fnp.arange(10)
    >>> for bx, by in fnad.data.batches((xs, ys), 4, key=0):
    ...     print(by)
    [4 6 2 7]
    [3 5 9 0]
    [8 1]
    >>> [b.shape for b in fnad.data.batches(xs, 4, drop_last=True)]
    [(4,), (4,)]
    """
    leaves, treedef = tree_flatten(data)
    arrays = [_as_numpy(leaf, i, treedef) for i, leaf in enumerate(leaves)]
    # Leaves on a GPU are gathered on the host and their batches put back there.
    places = [leaf.device if isinstance(leaf, Array) and leaf.device != CPU else None
              for leaf in leaves]
    n = _num_examples(arrays, treedef)
    batch_size = _check_count(batch_size, "batches", "batch_size", 1)
    prefetch = _check_count(prefetch, "batches", "prefetch", 0)
    _check_flag(drop_last, "batches", "drop_last")
    order = np.arange(n) if key is None else _permutation(n, key)
    if shard is not None:
        _check_flag(pad_shards, "batches", "pad_shards")
        order = shard_indices(order, shard, pad_shards)
        n = len(order)
    stop = n - n % batch_size if drop_last else n
    bounds = [(i, min(i + batch_size, n)) for i in range(0, stop, batch_size)]
    return Batches(arrays, places, treedef, order, bounds, prefetch)


def shard_indices(order: Sequence[int] | np.ndarray, shard: tuple[int, int], pad: bool = True
                 ) -> Any:
    """Shard `index` of `count` of the example order `order` (DistributedSampler's
    rule: padded or truncated to a multiple of count, then every count-th entry)."""
    index, count = _check_shard(shard)
    n = len(order)
    if pad:
        total = -(-n // count) * count
        if total > n:
            order = np.concatenate([order] * -(-total // n))[:total]
    else:
        order = order[:n - n % count]
    return order[index::count]


def _check_shard(shard):
    if not (isinstance(shard, tuple) and len(shard) == 2):
        raise TypeError(f"batches: shard must be a pair (index, count), e.g. "
                        f"(fnad.distributed.process_index(), fnad.distributed.process_count())"
                        f", got {shard!r}")
    count = _check_count(shard[1], "batches", "shard count", 1)
    index = _check_count(shard[0], "batches", "shard index", 0)
    if index >= count:
        raise ValueError(f"batches: shard index {index} out of range for {count} shards")
    return index, count


def num_batches(num_examples: int, batch_size: int, drop_last: bool = False) -> int:
    """How many batches `batches` yields for num_examples examples."""
    num_examples = _check_count(num_examples, "num_batches", "num_examples", 0)
    batch_size = _check_count(batch_size, "num_batches", "batch_size", 1)
    _check_flag(drop_last, "num_batches", "drop_last")
    full, rest = divmod(num_examples, batch_size)
    return full + (1 if rest and not drop_last else 0)


class Batches:
    """The iterator `batches` returns: has a len(), and stops its prefetch thread
    when closed, exhausted, used as a context manager, or garbage collected."""

    def __init__(self, arrays, places, treedef, order, bounds, prefetch):
        self._arrays, self._places, self._treedef = arrays, places, treedef
        self._order, self._bounds = order, bounds
        self._prefetch = prefetch
        self._next = 0                  # index of the next batch (no prefetch)
        self._queue = self._thread = None
        self._stop = threading.Event()
        self._closed = False

    def __len__(self):
        return len(self._bounds)

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        if not self._prefetch:
            if self._next >= len(self._bounds):
                self._closed = True
                raise StopIteration
            begin, end = self._bounds[self._next]
            self._next += 1
            return _gather(self._arrays, self._places, self._treedef,
                           self._order[begin:end])
        if self._thread is None:
            self._start()
        item = self._queue.get()
        if item is _DONE:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.error
        return item

    def _start(self):
        self._queue = queue.Queue(maxsize=self._prefetch)
        # The thread gets what it needs, not `self`, so that dropping the iterator
        # lets it be collected (and __del__ stop the thread).
        self._thread = threading.Thread(
            target=_produce, name="fnad.data.batches prefetch", daemon=True,
            args=(self._arrays, self._places, self._treedef, self._order, self._bounds,
                  self._queue, self._stop))
        self._thread.start()

    def close(self):
        """Stop iterating and stop the prefetch thread."""
        self._closed = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self._stop.set()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


_DONE = object()


def _produce(arrays, places, treedef, order, bounds, out, stop):
    """The prefetch thread: put each batch, then _DONE (or a _Failure) on `out`."""
    try:
        for begin, end in bounds:
            batch = _gather(arrays, places, treedef, order[begin:end])
            if stop.is_set() or not _put(out, batch, stop):
                return
        _put(out, _DONE, stop)
    except BaseException as e:  # noqa: BLE001 (handed to the consumer, who re-raises it)
        _put(out, _Failure(e), stop)


def _put(out, item, stop):
    """Put item on the bounded queue unless the consumer has stopped listening."""
    while not stop.is_set():
        try:
            out.put(item, timeout=0.05)
            return True
        except queue.Full:
            pass
    return False


def _gather(arrays, places, treedef, indices):
    # Fancy indexing copies, so the batch never aliases the caller's (mutable) arrays.
    return tree_unflatten(treedef, [
        Array(np.take(a, indices, axis=0)) if device is None
        else device_put(np.take(a, indices, axis=0), device)
        for a, device in zip(arrays, places)])


def _check_count(value, fn, name, minimum):
    """value as a Python int >= minimum. A bool or float is refused rather than
    truncated: batch_size=True or 32.5 is a mistake, not a batch size."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{fn}: {name} must be an int, got {value!r} of type "
                        f"{type(value).__name__}")
    if value < minimum:
        bound = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"{fn}: {name} must be {bound}, got {value}")
    return int(value)


def _check_flag(value, fn, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {name} must be True or False, got {value!r} of type "
                        f"{type(value).__name__}")


def _as_numpy(leaf, index, treedef):
    if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
        raise TypeError(f"batches: every leaf of data must be an array; leaf {index} of "
                        f"{treedef} is a {type(leaf).__name__}")
    value = np.asarray(leaf)
    if value.ndim == 0:
        raise ShapeError(f"batches: leaf {index} of {treedef} is a scalar; every leaf needs "
                         f"a leading example axis")
    dtypes.check_supported(value.dtype, f"leaf {index} of the data")
    return value


def _num_examples(arrays, treedef):
    if not arrays:
        raise ValueError("batches: data holds no arrays")
    sizes = [a.shape[0] for a in arrays]
    if len(set(sizes)) > 1:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ShapeError(f"batches: the leaves of {treedef} must share their leading "
                         f"(example) axis; got shapes {shapes}")
    return sizes[0]


def _permutation(n, key):
    """A permutation of range(n) determined by `key` (an int seed or an fnad key)."""
    if isinstance(key, bool):
        raise TypeError("batches: key must be None, an int seed or an fnad.random key, "
                        "not a bool")
    if isinstance(key, (int, np.integer)):
        if not 0 <= key < 2 ** 64:
            raise ValueError(f"batches: an int seed must lie in [0, 2**64), got {key}")
        # The words of fnad.random.key(seed), so key=seed and key=key(seed) agree.
        words = [int(key) >> 32, int(key) & 0xFFFFFFFF]
    else:
        words = _key_words(key)
    return np.random.default_rng(np.random.SeedSequence(words)).permutation(n)


def _key_words(key):
    value = getattr(key, "_value", None)
    if value is None or value.dtype.kind not in "iu":
        try:
            key = fnad_random.key_data(key)     # typed keys carry their words inside
        except (AttributeError, TypeError, ValueError):
            pass
        value = np.asarray(key)
    if value.dtype.kind not in "iu" or value.size == 0:
        raise TypeError(f"batches: key must be None, an int seed or an fnad.random key "
                        f"(an array of unsigned ints); got {type(key).__name__} of dtype "
                        f"{value.dtype}")
    # SeedSequence wants non-negative ints; 64 bits hold any fnad key word.
    return [int(w) % 2 ** 64 for w in value.ravel()]
