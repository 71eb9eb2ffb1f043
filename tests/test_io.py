"""fnad.io: safetensors round trips, the file layout, corruption errors, templates and
atomic writes."""
import collections
import json
import os
import struct

import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad import io, optim
from fnad.errors import FnadError
from fnad.tree_util import tree_leaves, tree_structure

Pair = collections.namedtuple("Pair", ["first", "second"])

ALL_DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
              np.uint64, np.int64, np.float16, np.float32, np.float64]


def _tree():
    rng = np.random.default_rng(0)
    return {
        "params": {"w": jnp.asarray(rng.normal(size=(3, 4)).astype(np.float32)),
                   "b": jnp.zeros(4)},
        "layers": [np.arange(6, dtype=np.int64).reshape(2, 3), (np.float64(2.5), None)],
        "pair": Pair(np.array(True), np.zeros((0, 3), np.float16)),
        "scalars": [1, -2 ** 70, 0.1, float("inf"), True, "text", None],
        "state": optim.adam(0.1).init({"w": jnp.zeros((2, 2))}),
    }


def _assert_same(a, b):
    assert tree_structure(a) == tree_structure(b)
    for x, y in zip(tree_leaves(a), tree_leaves(b)):
        assert type(x) is type(y), (x, y)
        if isinstance(x, (fnad.Array, np.ndarray, np.generic)):
            assert np.asarray(x).dtype == np.asarray(y).dtype
            assert np.asarray(x).shape == np.asarray(y).shape
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:
            assert x == y


def _header(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), n, data


def _write_raw(path, header, body):
    text = json.dumps(header).encode() if isinstance(header, dict) else header
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


# --------------------------------------------------------------------------- round trips

def test_round_trip_nested_tree(tmp_path):
    tree = _tree()
    io.save(tmp_path / "t.safetensors", tree)
    _assert_same(io.load(tmp_path / "t.safetensors"), tree)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4)])
def test_round_trip_every_dtype_and_shape(tmp_path, dtype, shape):
    rng = np.random.default_rng(1)
    value = (rng.normal(size=shape) * 50).astype(dtype)
    path = tmp_path / "x.safetensors"
    io.save(path, {"x": value, "fx": jnp.asarray(value)})
    out = io.load(path)
    _assert_same(out, {"x": value, "fx": jnp.asarray(value)})


def test_round_trip_single_leaf_and_empty_tree(tmp_path):
    io.save(tmp_path / "a", jnp.arange(3))
    out = io.load(tmp_path / "a")
    assert isinstance(out, fnad.Array) and out.dtype == np.int32
    io.save(tmp_path / "b", {})
    assert io.load(tmp_path / "b") == {}
    io.save(tmp_path / "c", None)
    assert io.load(tmp_path / "c") is None


def test_non_contiguous_and_big_endian_inputs(tmp_path):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    tree = {"t": base.T, "s": base[::2, 1::2], "be": np.arange(3, dtype=">i4")}
    io.save(tmp_path / "x", tree)
    out = io.load(tmp_path / "x")
    np.testing.assert_array_equal(out["t"], base.T)
    np.testing.assert_array_equal(out["s"], base[::2, 1::2])
    np.testing.assert_array_equal(out["be"], [0, 1, 2])
    assert out["be"].dtype == np.dtype("<i4")


def test_namedtuple_classes_come_back(tmp_path):
    state = optim.adamw(1e-3).init({"w": jnp.ones(3)})
    io.save(tmp_path / "s", state)
    out = io.load(tmp_path / "s")
    assert type(out[0]) is optim.ScaleByAdamState
    _assert_same(out, state)


def test_layout_is_safetensors(tmp_path):
    path = tmp_path / "x.safetensors"
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    io.save(path, {"w": w, "b": np.array([7], np.int16)}, metadata={"note": "hello"})
    header, n, data = _header(path)
    assert n % 8 == 0
    assert header["__metadata__"]["note"] == "hello"
    assert isinstance(header["__metadata__"]["fnad.tree"], str)
    body = data[8 + n:]
    assert header["b"] == {"dtype": "I16", "shape": [1], "data_offsets": [0, 2]}
    assert header["w"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [2, 26]}
    assert len(body) == 26
    np.testing.assert_array_equal(np.frombuffer(body[2:26], "<f4").reshape(2, 3), w)


def test_file_from_another_writer_loads_as_flat_dict(tmp_path):
    body = np.array([1.5, -2.0], "<f8").tobytes() + np.array([3], "<u1").tobytes()
    _write_raw(tmp_path / "f", {"a.weight": {"dtype": "F64", "shape": [2],
                                             "data_offsets": [0, 16]},
                                "n": {"dtype": "U8", "shape": [], "data_offsets": [16, 17]}},
               body)
    out = io.load(tmp_path / "f")
    assert sorted(out) == ["a.weight", "n"]
    np.testing.assert_array_equal(np.asarray(out["a.weight"]), [1.5, -2.0])
    assert isinstance(out["n"], fnad.Array) and int(out["n"]) == 3


# --------------------------------------------------------------------------- templates

def test_load_like_template(tmp_path):
    tree = _tree()
    io.save(tmp_path / "t", tree)
    _assert_same(io.load(tmp_path / "t", like=tree), tree)


def test_namedtuple_of_unknown_class_is_recreated_and_template_restores_it(tmp_path):
    Local = collections.namedtuple("Local", ["x", "y"])      # not reachable by name
    tree = Local(np.ones(2), [np.zeros(1)])
    io.save(tmp_path / "t", tree)
    out = io.load(tmp_path / "t")
    assert type(out) is not Local and type(out).__name__ == "Local"
    assert out._fields == ("x", "y")
    restored = io.load(tmp_path / "t", like=tree)
    assert type(restored) is Local
    _assert_same(restored, tree)


@pytest.mark.parametrize("change, match", [
    (lambda t: {**t, "extra": np.zeros(1)}, "structure mismatch"),
    (lambda t: {**t, "params": {"w": jnp.zeros((3, 5)), "b": t["params"]["b"]}},
     r"shape mismatch at \['params'\]\['w'\].*float32\[3, 4\].*float32\[3, 5\]"),
    (lambda t: {**t, "params": {"w": t["params"]["w"], "b": jnp.zeros(4, jnp.float64)}},
     r"dtype mismatch at \['params'\]\['b'\]"),
    (lambda t: {**t, "scalars": ["one"] + t["scalars"][1:]}, "type mismatch"),
])
def test_load_like_mismatch(tmp_path, change, match):
    tree = _tree()
    io.save(tmp_path / "t", tree)
    with pytest.raises(io.FileFormatError, match=match):
        io.load(tmp_path / "t", like=change(tree))


# --------------------------------------------------------------------------- corrupt files

def _saved(tmp_path):
    path = tmp_path / "good.safetensors"
    io.save(path, {"w": np.arange(6, dtype=np.float32), "b": np.ones(2, np.int64)})
    return path


@pytest.mark.parametrize("keep, match", [
    (0, "truncated"), (5, "truncated"), (20, "truncated"), (-1, "truncated"),
    (-8, "truncated")])
def test_truncated_file(tmp_path, keep, match):
    data = _saved(tmp_path).read_bytes()
    bad = tmp_path / "bad"
    bad.write_bytes(data[:keep] if keep >= 0 else data[:len(data) + keep])
    with pytest.raises(io.FileFormatError, match=match) as info:
        io.load(bad)
    assert str(bad) in str(info.value) and info.value.path == str(bad)


def test_corrupted_header_json(tmp_path):
    data = bytearray(_saved(tmp_path).read_bytes())
    data[8] = ord("[") if data[8] != ord("[") else ord("{")
    data[12] = 0xFF
    bad = tmp_path / "bad"
    bad.write_bytes(bytes(data))
    with pytest.raises(io.FileFormatError, match="corrupted header"):
        io.load(bad)


@pytest.mark.parametrize("header, match", [
    (b"[1, 2]", "expected a JSON object"),
    ({"x": {"dtype": "F32", "shape": [2]}}, "needs 'dtype', 'shape' and 'data_offsets'"),
    ({"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, "shape"),
    ({"x": {"dtype": "Q8", "shape": [2], "data_offsets": [0, 8]}}, "dtype mismatch.*'Q8'"),
    ({"x": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}},
     "dtype mismatch.*F64.*16 bytes.*span 8"),
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, "offsets out of range"),
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, "offsets out of range"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, "offsets out of range"),
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "y": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, "offsets out of range"),
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, "truncated"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, "not described"),
    ({"__metadata__": {"fnad.tree": "{not json"},
      "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, "tree description"),
    ({"__metadata__": {"fnad.tree": json.dumps({"version": 1, "tree": {
        "t": "array", "name": "zz", "kind": "fnad"}})},
      "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, "'zz'"),
    ({"__metadata__": {"fnad.tree": "[" * 100000 + "]" * 100000},
      "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, "tree description"),
    ({"__metadata__": {"fnad.tree": 3},
      "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, "__metadata__"),
])
def test_corrupt_headers(tmp_path, header, match):
    bad = tmp_path / "bad"
    _write_raw(bad, header, b"\0" * 8)
    with pytest.raises(io.FileFormatError, match=match):
        io.load(bad)


def test_errors_are_fnad_and_value_errors(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\1\2")
    with pytest.raises(FnadError):
        io.load(bad)
    with pytest.raises(ValueError):
        io.load(bad)


def test_unsupported_values_on_save(tmp_path):
    with pytest.raises(TypeError, match="complex128"):
        io.save(tmp_path / "x", {"z": np.ones(2, np.complex128)})
    with pytest.raises(TypeError, match="cannot store the object"):
        io.save(tmp_path / "x", [object()])
    with pytest.raises(TypeError, match="dict keys"):
        io.save(tmp_path / "x", {(1, 2): np.ones(1)})
    with pytest.raises(ValueError, match="metadata"):
        io.save(tmp_path / "x", {}, metadata={"n": 3})
    assert not os.path.exists(tmp_path / "x")


# --------------------------------------------------------------------------- atomic writes

def _listing(directory):
    return sorted(os.listdir(directory))


def test_failure_mid_write_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    old = {"w": np.arange(4, dtype=np.float32)}
    io.save(path, old)
    before = path.read_bytes()
    calls = []

    def failing_write(f, array):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        f.write(array.tobytes())
    monkeypatch.setattr(io, "_write_tensor", failing_write)
    with pytest.raises(OSError, match="disk full"):
        io.save(path, {"a": np.ones(1000), "b": np.ones(1000), "c": np.ones(1000)})
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["ckpt.safetensors"]       # no temporary file left
    _assert_same(io.load(path), old)


def test_failure_before_rename_leaves_no_file(tmp_path, monkeypatch):
    def failing_fsync(fd):
        raise OSError("fsync failed")
    monkeypatch.setattr(io.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="fsync failed"):
        io.save(tmp_path / "new", {"a": np.ones(3)})
    assert _listing(tmp_path) == []


def test_interrupt_mid_write_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    io.save(path, [np.zeros(2)])
    before = path.read_bytes()

    def interrupted(f, array):
        raise KeyboardInterrupt
    monkeypatch.setattr(io, "_write_tensor", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.save(path, [np.ones(2)])
    assert path.read_bytes() == before and _listing(tmp_path) == ["ckpt"]


def test_new_file_gets_umask_mode_and_overwrite_keeps_mode(tmp_path):
    old_umask = os.umask(0o022)
    try:
        io.save(tmp_path / "new", {"a": np.ones(1)})
    finally:
        os.umask(old_umask)
    if os.name == "posix":
        assert os.stat(tmp_path / "new").st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "new", 0o600)
        io.save(tmp_path / "new", {"a": np.ones(2)})
        assert os.stat(tmp_path / "new").st_mode & 0o777 == 0o600


def test_overwrite_replaces_file(tmp_path):
    path = tmp_path / "ckpt"
    io.save(path, {"step": 1})
    io.save(path, {"step": 2, "w": np.ones(2)})
    assert io.load(path)["step"] == 2
    assert _listing(tmp_path) == ["ckpt"]


def test_save_and_load_training_state(tmp_path):
    params = {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    opt = optim.adam(optim.exponential_decay(0.1, 10, 0.5))
    state = opt.init(params)
    grads = {"w": jnp.full((2, 2), 0.5), "b": jnp.ones(2)}
    updates, state = opt.update(grads, state, params)
    params = optim.apply_updates(params, updates)
    io.save(tmp_path / "ckpt", {"params": params, "opt_state": state, "step": 1})
    restored = io.load(tmp_path / "ckpt", like={"params": params, "opt_state": state,
                                                "step": 0})
    _assert_same(restored, {"params": params, "opt_state": state, "step": 1})
    u1, _ = opt.update(grads, state, params)
    u2, _ = opt.update(grads, restored["opt_state"], restored["params"])
    for a, b in zip(tree_leaves(u1), tree_leaves(u2)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
