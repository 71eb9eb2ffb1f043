"""fnad.data.batches: coverage, determinism, pytree batches, prefetching."""
import gc
import threading
import time

import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad import data
from fnad.errors import ShapeError
from fnad.tree_util import tree_leaves, tree_structure


def _ids(batch_iter):
    return [np.asarray(b) for b in batch_iter]


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "fnad.data.batches prefetch"]


@pytest.mark.parametrize("n", [0, 1, 7, 32, 33])
@pytest.mark.parametrize("batch_size", [1, 5, 32, 40])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("key", [None, 3])
def test_every_example_exactly_once(n, batch_size, drop_last, key):
    x = np.arange(n)
    got = _ids(data.batches(x, batch_size, key=key, drop_last=drop_last))
    sizes = [len(b) for b in got]
    expected_batches = data.num_batches(n, batch_size, drop_last)
    assert len(got) == expected_batches
    assert len(data.batches(x, batch_size, key, drop_last=drop_last)) == expected_batches
    if drop_last:
        assert all(s == batch_size for s in sizes)
        kept = np.concatenate(got) if got else np.array([], int)
        assert len(set(kept.tolist())) == len(kept) == (n // batch_size) * batch_size
    else:
        assert all(s == batch_size for s in sizes[:-1])
        flat = np.concatenate(got) if got else np.array([], int)
        assert sorted(flat.tolist()) == list(range(n))
    if key is None and got:
        np.testing.assert_array_equal(np.concatenate(got), np.arange(sum(sizes)))


def test_batches_are_fnad_arrays_with_data_dtype_and_shape():
    x = np.arange(40, dtype=np.float64).reshape(10, 2, 2)
    batch = next(iter(data.batches(x, 4, key=0)))
    assert isinstance(batch, fnad.Array)
    assert batch.shape == (4, 2, 2) and batch.dtype == np.float64


def test_shuffle_is_deterministic_by_seed_and_differs_across_seeds():
    x = np.arange(100)
    a = np.concatenate(_ids(data.batches(x, 16, key=7)))
    b = np.concatenate(_ids(data.batches(x, 16, key=7)))
    c = np.concatenate(_ids(data.batches(x, 16, key=8)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, x)


def test_fnad_key_words_seed_the_shuffle():
    x = np.arange(50)
    key = jnp.asarray(np.array([0, 42], np.uint32))
    a = np.concatenate(_ids(data.batches(x, 8, key=key)))
    b = np.concatenate(_ids(data.batches(x, 8, key=np.array([0, 42], np.uint32))))
    c = np.concatenate(_ids(data.batches(x, 8, key=jnp.asarray(np.array([0, 43], np.uint32)))))
    np.testing.assert_array_equal(a, b)
    assert sorted(a.tolist()) == list(range(50))
    assert not np.array_equal(a, c)


def test_int_seed_and_fnad_random_key_agree():
    random = pytest.importorskip("fnad.random")
    x = np.arange(64)
    for seed in (0, 5, 2 ** 40 + 3):
        a = np.concatenate(_ids(data.batches(x, 10, key=seed)))
        b = np.concatenate(_ids(data.batches(x, 10, key=random.key(seed))))
        np.testing.assert_array_equal(a, b)
    k1, k2 = random.split(random.key(0))
    assert not np.array_equal(np.concatenate(_ids(data.batches(x, 10, key=k1))),
                              np.concatenate(_ids(data.batches(x, 10, key=k2))))


def test_same_key_same_order_across_leaves_and_calls():
    x = np.arange(30)
    tree = {"x": x, "y": [x * 10, (x.reshape(30, 1) * -1).astype(np.int8)]}
    for batch in data.batches(tree, 7, key=1):
        assert tree_structure(batch) == tree_structure(tree)
        bx = np.asarray(batch["x"])
        np.testing.assert_array_equal(np.asarray(batch["y"][0]), bx * 10)
        np.testing.assert_array_equal(np.asarray(batch["y"][1])[:, 0], -bx)
        assert batch["y"][1].dtype == np.int8


def test_tuple_of_fnad_arrays():
    images = jnp.asarray(np.random.default_rng(0).normal(size=(9, 3)).astype(np.float32))
    labels = jnp.arange(9)
    seen = []
    for x, y in data.batches((images, labels), 4, key=2):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(images)[np.asarray(y)])
        seen.extend(np.asarray(y).tolist())
    assert sorted(seen) == list(range(9))


def test_batches_do_not_alias_the_source():
    x = np.zeros((4, 2))
    batch = next(iter(data.batches(x, 4)))
    x[:] = 1.0
    assert np.all(np.asarray(batch) == 0.0)


@pytest.mark.parametrize("prefetch", [1, 2, 8])
@pytest.mark.parametrize("key", [None, 5])
def test_prefetch_yields_the_same_batches(prefetch, key):
    tree = {"a": np.arange(50), "b": np.arange(100).reshape(50, 2)}
    plain = list(data.batches(tree, 6, key=key))
    fetched = list(data.batches(tree, 6, key=key, prefetch=prefetch))
    assert len(plain) == len(fetched) == 9
    for p, f in zip(plain, fetched):
        for a, b in zip(tree_leaves(p), tree_leaves(f)):
            assert isinstance(b, fnad.Array)
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    time.sleep(0.1)
    assert not _prefetch_threads()


def test_prefetch_propagates_errors(monkeypatch):
    real_gather = data._gather
    calls = []

    def flaky(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("bad batch")
        return real_gather(*args)
    monkeypatch.setattr(data, "_gather", flaky)
    it = data.batches(np.arange(40), 4, prefetch=2)
    assert np.asarray(next(it)).tolist() == [0, 1, 2, 3]
    assert np.asarray(next(it)).tolist() == [4, 5, 6, 7]
    with pytest.raises(RuntimeError, match="bad batch"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)
    time.sleep(0.1)
    assert not _prefetch_threads()


def test_closing_early_stops_the_thread():
    it = data.batches(np.arange(1000), 1, prefetch=2)
    next(it)
    assert len(_prefetch_threads()) == 1
    it.close()
    assert not _prefetch_threads()
    with pytest.raises(StopIteration):
        next(it)


def test_context_manager_stops_the_thread():
    with data.batches(np.arange(1000), 1, prefetch=2) as it:
        next(it)
    assert not _prefetch_threads()


def test_garbage_collection_stops_the_thread():
    it = data.batches(np.arange(1000), 1, prefetch=2)
    next(it)
    del it
    gc.collect()
    for _ in range(100):
        if not _prefetch_threads():
            break
        time.sleep(0.02)
    assert not _prefetch_threads()


def test_breaking_out_of_a_for_loop_then_dropping_the_iterator():
    for i, _ in enumerate(data.batches(np.arange(1000), 1, prefetch=3)):
        if i == 5:
            break
    gc.collect()
    for _ in range(100):
        if not _prefetch_threads():
            break
        time.sleep(0.02)
    assert not _prefetch_threads()


def test_bad_arguments():
    with pytest.raises(ShapeError, match="leading"):
        data.batches({"a": np.zeros(3), "b": np.zeros(4)}, 2)
    with pytest.raises(ShapeError, match="scalar"):
        data.batches(np.float32(1.0), 2)
    with pytest.raises(TypeError, match="must be an array"):
        data.batches([np.zeros(3), 1.5], 2)
    with pytest.raises(ValueError, match="batch_size"):
        data.batches(np.zeros(3), 0)
    with pytest.raises(ValueError, match="prefetch"):
        data.batches(np.zeros(3), 1, prefetch=-1)
    with pytest.raises(ValueError, match="seed"):
        data.batches(np.zeros(3), 1, key=-1)
    with pytest.raises(TypeError, match="key"):
        data.batches(np.zeros(3), 1, key=np.array([0.5]))
    with pytest.raises(ValueError, match="no arrays"):
        data.batches({}, 1)


# --------------------------------------------------------------------------- shards

@pytest.mark.parametrize("n,count,pad", [(12, 4, True), (12, 4, False), (10, 4, True),
                                         (10, 4, False), (3, 4, True)])
def test_shards_partition_each_epoch(n, count, pad):
    x = np.arange(n)
    for epoch in range(2):
        shards = [np.concatenate([np.asarray(b) for b in fnad.data.batches(
            x, 2, key=epoch, shard=(r, count), pad_shards=pad)]) for r in range(count)]
        sizes = {len(s) for s in shards}
        assert sizes == {-(-n // count) if pad else n // count}     # equal shards
        seen = np.concatenate(shards)
        if n % count == 0:          # exactly one epoch, no example twice
            assert sorted(seen.tolist()) == list(range(n))
        elif pad:                   # every example, the padding repeated once
            assert set(seen.tolist()) == set(range(n))
            assert len(seen) - n == count - n % count
        else:                       # no example twice, n % count left out
            assert len(set(seen.tolist())) == len(seen) == n - n % count
        # the same key gives the same permutation everywhere: shard r is every
        # count-th entry of the unsharded order, starting at r
        full = np.concatenate([np.asarray(b) for b in fnad.data.batches(x, n, key=epoch)])
        if n % count == 0:
            for r in range(count):
                assert shards[r].tolist() == full[r::count].tolist()


def test_bad_shards():
    with pytest.raises(TypeError, match="pair"):
        fnad.data.batches(np.arange(4), 2, shard=3)
    with pytest.raises(ValueError, match="out of range"):
        fnad.data.batches(np.arange(4), 2, shard=(2, 2))
    with pytest.raises(ValueError, match="positive"):
        fnad.data.batches(np.arange(4), 2, shard=(0, 0))
