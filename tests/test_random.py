"""fnad.random: the Threefry hash against published answers, JAX's numbers, the
distributions' statistics, and agreement of eager, jit and vmap."""
import math

import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad import random
from fnad.errors import DTypeError, ShapeError

N = 100_000
KEY = random.key(0)


def u32(*words):
    return np.array(words, np.uint32)


def normal_cdf(x):
    return 0.5 * (1 + np.vectorize(math.erf)(np.asarray(x, np.float64) / math.sqrt(2)))


def ks_distance(samples, cdf):
    """Kolmogorov-Smirnov statistic of the samples against a continuous cdf."""
    x = np.sort(np.asarray(samples, np.float64))
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


KS_LIMIT = 1.95 / math.sqrt(N)      # rejects a correct sampler with p ~ 0.001


# --------------------------------------------------------------------------- the hash

@pytest.mark.parametrize("key, counter, expected", [
    # Random123's known-answer vectors for threefry2x32 with 20 rounds (kat_vectors).
    ((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
])
def test_threefry_known_answers(key, counter, expected):
    y0, y1 = random.threefry2x32(*(u32(w) for w in key + counter))
    assert (int(y0[0]), int(y1[0])) == expected


def test_threefry_broadcasts_and_checks_dtypes():
    counters = u32(0, 0xffffffff)
    y0, y1 = random.threefry2x32(u32(0xffffffff), u32(0xffffffff), counters, counters)
    assert y0.shape == (2,) and (int(y0[1]), int(y1[1])) == (0x1cb996fc, 0xbb002be7)
    with pytest.raises(DTypeError, match="uint32"):
        random.threefry2x32(np.int32(0), u32(0), u32(0), u32(0))


def test_agrees_with_jax_bit_for_bit():
    # Values printed by JAX 0.10 (threefry2x32, partitionable layout, the default).
    assert random.split(KEY).tolist() == [[1797259609, 2579123966], [928981903, 3453687069]]
    assert random.split(random.key(42), 3).tolist() == [
        [1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]]
    assert random.fold_in(KEY, 3).tolist() == [2467461003, 3840466878]
    assert random.bits(KEY, (4,)).tolist() == [4070199207, 4202968722, 1427181096, 2012915765]
    np.testing.assert_array_equal(
        random.uniform(KEY, (4,)),
        np.array([0.947667, 0.9785799, 0.33229148, 0.46866846], np.float32))
    assert random.randint(KEY, (6,), 0, 100).tolist() == [89, 0, 12, 73, 71, 47]
    assert random.permutation(KEY, 8).tolist() == [0, 1, 5, 6, 4, 3, 2, 7]
    np.testing.assert_allclose(random.normal(KEY, (4,)),
                               [1.622642159, 2.02526474, -0.43359443, -0.07861735], rtol=1e-5)


# --------------------------------------------------------------------------- keys

def test_key_from_seeds():
    assert random.key(0).dtype == np.uint32 and random.key(0).shape == (2,)
    assert random.key(42).tolist() == [0, 42]
    assert random.PRNGKey(2 ** 40 + 5).tolist() == [256, 5]
    assert random.key(-1).tolist() == [0xffffffff, 0xffffffff]
    assert random.key(np.int32(-1)).tolist() == [0, 0xffffffff]
    assert random.key(np.int64(2 ** 40 + 5)).tolist() == [256, 5]
    assert random.key(2 ** 64 - 1).tolist() == [0xffffffff, 0xffffffff]
    with pytest.raises(OverflowError):
        random.key(2 ** 64)
    with pytest.raises(DTypeError):
        random.key(1.5)


@pytest.mark.parametrize("bad, error", [
    (0, DTypeError),                                        # a seed, not a key
    (np.zeros(2, np.int32), DTypeError),
    (np.zeros(2, np.float32), DTypeError),
    (np.zeros(3, np.uint32), ShapeError),
    (np.zeros((4, 2), np.uint32), ShapeError),
])
def test_bad_keys_raise(bad, error):
    for draw in (lambda k: random.normal(k, (3,)), random.split,
                 lambda k: random.fold_in(k, 1), lambda k: random.randint(k, (), 0, 3)):
        with pytest.raises(error, match="key"):
            draw(bad)


def test_same_key_same_numbers_split_and_fold_in_differ():
    np.testing.assert_array_equal(random.normal(KEY, (50,)), random.normal(random.key(0), (50,)))
    keys = random.split(KEY, 4)
    assert len({tuple(k.tolist()) for k in keys}) == 4
    draws = [np.asarray(random.uniform(k, (20,))) for k in keys]
    assert all(not np.array_equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1:])
    assert not np.array_equal(random.uniform(keys[0], (20,)), random.uniform(KEY, (20,)))
    folded = [random.fold_in(KEY, d).tolist() for d in range(5)]
    assert len({tuple(f) for f in folded}) == 5
    # fold_in(key, d) is the d-th split key, as in JAX's partitionable layout
    assert folded[3] == random.split(KEY, 4)[3].tolist()
    assert random.split(KEY, (2, 3)).shape == (2, 3, 2)


# --------------------------------------------------------------------------- statistics

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_statistics(dtype):
    x = np.asarray(random.normal(KEY, (N,), dtype))
    assert x.dtype == dtype and np.all(np.isfinite(x))
    assert abs(x.mean()) < 0.015 and abs(x.std() - 1) < 0.01
    assert ks_distance(x, normal_cdf) < KS_LIMIT


def test_uniform_statistics():
    x = np.asarray(random.uniform(KEY, (N,)))
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005
    assert ks_distance(x, lambda t: t) < KS_LIMIT
    y = np.asarray(random.uniform(KEY, (N,), np.float64, minval=-2.0, maxval=3.0))
    assert y.dtype == np.float64 and y.min() >= -2 and y.max() < 3
    assert ks_distance(y, lambda t: (t + 2) / 5) < KS_LIMIT
    lo = jnp.array([0.0, 10.0, -5.0])
    z = np.asarray(random.uniform(KEY, (1000, 3), minval=lo, maxval=lo + 1))
    assert np.all((z >= np.asarray(lo)) & (z < np.asarray(lo) + 1))
    h = np.asarray(random.uniform(KEY, (1000,), np.float16))
    assert h.dtype == np.float16 and h.min() >= 0 and h.max() < 1


def test_bernoulli_rate():
    b = np.asarray(random.bernoulli(KEY, 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.006
    p = jnp.array([0.0, 0.5, 1.0])
    rows = np.asarray(random.bernoulli(KEY, p, (2000, 3)))
    assert not rows[:, 0].any() and rows[:, 2].all() and abs(rows[:, 1].mean() - 0.5) < 0.05
    assert random.bernoulli(KEY, p).shape == (3,)
    assert random.bernoulli(KEY).shape == ()


def test_randint_range_and_coverage():
    x = np.asarray(random.randint(KEY, (N,), -3, 7))
    assert x.dtype == np.int32 and x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    expected = N / 10
    assert np.sum((counts - expected) ** 2 / expected) < 30      # chi-square, 9 dof
    full = np.asarray(random.randint(KEY, (5000,), 0, 256, np.uint8))
    assert full.dtype == np.uint8 and len(np.unique(full)) == 256
    assert np.all(np.asarray(random.randint(KEY, (10,), 5, 5)) == 5)    # empty range: minval
    big = np.asarray(random.randint(KEY, (1000,), -2 ** 40, 2 ** 50, np.int64))
    assert big.dtype == np.int64 and big.min() >= -2 ** 40 and big.max() < 2 ** 50
    assert big.max() > 2 ** 48                       # really draws from the wide range
    hi = jnp.array([1, 10, 100])
    per_column = np.asarray(random.randint(KEY, (500, 3), 0, hi))
    assert np.all(per_column < np.asarray(hi)) and per_column[:, 2].max() > 50


def test_truncated_normal_bounds_and_mean():
    lower, upper = -1.0, 2.0
    x = np.asarray(random.truncated_normal(KEY, lower, upper, (N,)))
    assert x.dtype == np.float32 and x.min() > lower and x.max() < upper
    phi = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    mass = normal_cdf(upper) - normal_cdf(lower)
    assert abs(x.mean() - (phi(lower) - phi(upper)) / mass) < 0.01
    assert ks_distance(x, lambda t: (normal_cdf(t) - normal_cdf(lower)) / mass) < KS_LIMIT
    tail = np.asarray(random.truncated_normal(KEY, 3.0, np.inf, (1000,), np.float64))
    assert tail.dtype == np.float64 and tail.min() > 3 and np.all(np.isfinite(tail))
    narrow = np.asarray(random.truncated_normal(KEY, 0.5, 0.5 + 1e-6, (1000,)))
    assert narrow.min() > 0.5 and narrow.max() < 0.5 + 1e-6
    assert random.truncated_normal(KEY, jnp.zeros(3), 1.0).shape == (3,)


def test_gumbel_and_exponential_means():
    assert abs(float(jnp.mean(random.gumbel(KEY, (N,)))) - 0.5772157) < 0.02
    e = np.asarray(random.exponential(KEY, (N,)))
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.015


# --------------------------------------------------------------------------- permutations

def test_permutation_is_a_permutation():
    for n in (1, 10, 3000):          # 3000 takes two sorting rounds
        p = np.asarray(random.permutation(KEY, n))
        assert sorted(p.tolist()) == list(range(n))
    assert not np.array_equal(random.permutation(KEY, 100), np.arange(100))
    x = jnp.arange(12.0).reshape(3, 4)
    cols = np.asarray(random.permutation(KEY, x, axis=1))
    assert sorted(cols[0].tolist()) == [0, 1, 2, 3]
    np.testing.assert_array_equal(cols - np.arange(0, 12, 4)[:, None], np.tile(cols[0], (3, 1)))
    rows = np.asarray(random.permutation(random.key(3), x, axis=1, independent=True))
    assert all(sorted(r.tolist()) == sorted(np.asarray(x)[i].tolist()) for i, r in enumerate(rows))
    with pytest.raises(DTypeError):
        random.permutation(KEY, jnp.array(2.5))


def test_choice():
    draws = np.asarray(random.choice(KEY, 10, (7,), replace=False))
    assert len(set(draws.tolist())) == 7 and draws.min() >= 0 and draws.max() < 10
    a = jnp.arange(20.0).reshape(10, 2)
    rows = np.asarray(random.choice(KEY, a, (4,), replace=False))
    assert rows.shape == (4, 2) and len({tuple(r) for r in rows.tolist()}) == 4
    assert random.choice(KEY, a, (3, 5), axis=1).shape == (10, 3, 5)
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    freq = np.bincount(np.asarray(random.choice(KEY, 4, (20000,), p=jnp.asarray(p))), minlength=4)
    np.testing.assert_allclose(freq / 20000, p, atol=0.015)
    weighted = np.asarray(random.choice(KEY, 4, (3,), replace=False, p=jnp.asarray(p)))
    assert len(set(weighted.tolist())) == 3
    with pytest.raises(ValueError, match="larger sample"):
        random.choice(KEY, 3, (4,), replace=False)
    with pytest.raises(ShapeError):
        random.choice(KEY, 4, (2,), p=jnp.ones(3) / 3)


def test_categorical_follows_softmax():
    logits = np.array([1.0, 0.0, -1.0, 2.0], np.float32)
    probs = np.exp(logits) / np.exp(logits).sum()
    n = 50_000
    draws = np.asarray(random.categorical(KEY, jnp.asarray(logits), shape=(n,)))
    counts = np.bincount(draws, minlength=4)
    assert np.sum((counts - n * probs) ** 2 / (n * probs)) < 20    # chi-square, 3 dof
    batch = jnp.asarray(np.log(np.array([[0.9, 0.1], [0.1, 0.9]], np.float32)))
    cols = np.asarray(random.categorical(KEY, batch, axis=0, shape=(5000, 2)))
    assert cols.shape == (5000, 2)
    assert abs(cols[:, 0].mean() - 0.1) < 0.02 and abs(cols[:, 1].mean() - 0.9) < 0.02
    assert random.categorical(KEY, batch).shape == (2,)


# --------------------------------------------------------------------------- transforms

def test_jit_gives_the_eager_numbers():
    assert np.array_equal(fnad.jit(lambda k: random.normal(k, (100,)))(KEY),
                          random.normal(KEY, (100,)))
    draws = lambda k: (random.uniform(k, (30,), minval=-1.0, maxval=2.0),
                       random.randint(k, (30,), -5, 17),
                       random.truncated_normal(k, -1.0, 0.5, (30,)),
                       random.gumbel(k, (30,)),
                       random.permutation(k, 9),
                       random.split(k, 3),
                       random.fold_in(k, 5))
    for eager, staged in zip(draws(KEY), fnad.jit(draws)(KEY)):
        np.testing.assert_array_equal(eager, staged)


def test_vmap_over_keys():
    keys = random.split(KEY, 5)
    batched = fnad.vmap(lambda k: random.normal(k, (3,)))(keys)
    assert batched.shape == (5, 3)
    np.testing.assert_array_equal(batched, np.stack([random.normal(k, (3,)) for k in keys]))
    # keys along axis 1, and a nested vmap over a grid of keys
    by_column = fnad.vmap(lambda k: random.uniform(k, (2,)), in_axes=1)(keys.T)
    np.testing.assert_array_equal(by_column, fnad.vmap(lambda k: random.uniform(k, (2,)))(keys))
    grid = random.split(KEY, (2, 3))
    nested = fnad.vmap(fnad.vmap(lambda k: random.randint(k, (4,), 0, 9)))(grid)
    np.testing.assert_array_equal(nested[1, 2], random.randint(grid[1, 2], (4,), 0, 9))
    both = fnad.jit(fnad.vmap(lambda k: random.split(k)))(keys)
    np.testing.assert_array_equal(both[3], random.split(keys[3]))


def test_vmap_over_seeds_data_and_parameters():
    np.testing.assert_array_equal(fnad.vmap(random.key)(jnp.arange(3)),
                                  [[0, 0], [0, 1], [0, 2]])
    folded = fnad.vmap(lambda d: random.fold_in(KEY, d))(jnp.arange(4))
    np.testing.assert_array_equal(folded, random.split(KEY, 4))
    lows = jnp.array([0.0, 10.0])
    shifted = fnad.vmap(lambda lo: random.uniform(KEY, (3,), minval=lo, maxval=lo + 1))(lows)
    np.testing.assert_array_equal(shifted[1], random.uniform(KEY, (3,), minval=10.0, maxval=11.0))


def test_gradients_flow_through_parameters_not_bits():
    noise = random.normal(KEY, (5,))
    g = fnad.grad(lambda mu: jnp.sum(mu + random.normal(KEY, (5,)) * mu))(2.0)
    np.testing.assert_allclose(g, 5 + float(jnp.sum(noise)), rtol=1e-5)
    # d/dmaxval of mean(uniform(minval=0, maxval=m)) is the mean of the unit draws
    unit = random.uniform(KEY, (1000,))
    dm = fnad.grad(lambda m: jnp.mean(random.uniform(KEY, (1000,), minval=0.0, maxval=m)))(3.0)
    np.testing.assert_allclose(dm, float(jnp.mean(unit)), rtol=1e-5)


# --------------------------------------------------------------------------- errors

def test_argument_errors():
    with pytest.raises(ShapeError, match="broadcast"):
        random.uniform(KEY, (4,), minval=jnp.zeros(3))
    with pytest.raises(DTypeError):
        random.uniform(KEY, (2,), np.int32)
    with pytest.raises(DTypeError):
        random.normal(KEY, (2,), np.uint8)
    with pytest.raises(DTypeError):
        random.randint(KEY, (2,), 0, 3, np.float32)
    with pytest.raises(DTypeError):
        random.bits(KEY, (2,), np.int32)
    with pytest.raises(DTypeError, match="floating"):
        random.bernoulli(KEY, jnp.array([1, 0]))
    with pytest.raises(ShapeError):
        random.normal(KEY, (-1,))
