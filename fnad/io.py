"""Save and load pytrees of arrays in the safetensors format, without pickle.

File layout (https://github.com/huggingface/safetensors):
    8 bytes      N, the header length, unsigned little-endian
    N bytes      a JSON object: {name: {"dtype": "F32", "shape": [..],
                 "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
    the rest     the tensors' bytes, little-endian, C order, back to back; offsets
                 count from the start of this section.
fnad stores the pytree's structure as JSON in ``__metadata__["fnad.tree"]``: dicts,
lists, tuples, namedtuples, None, Python scalars (bool, int, float, str) and array
leaves, which refer to tensors by name. A file without that entry (written by another
safetensors library) loads as a flat dict from tensor name to array.

Writes are atomic: the bytes go to a temporary file in the same directory, which is
fsynced and then renamed over `path`, so a crash leaves the old file or the new one,
never half of one.
"""
import json
import math
import os
import sys
import tempfile

import numpy as np

from .array import Array
from .errors import FileFormatError  # noqa: F401 (re-exported as fnad.io.FileFormatError)
from .tree_util import tree_flatten, _registry

_DTYPE_CODES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
    "F16": np.float16, "F32": np.float32, "F64": np.float64,
}
_CODE_OF = {np.dtype(t): code for code, t in _DTYPE_CODES.items()}
_TREE_KEY = "fnad.tree"
_FORMAT_VERSION = 1


# --------------------------------------------------------------------------- save

def save(path, tree, metadata=None):
    """Write the pytree `tree` to `path` as safetensors. `metadata`: optional extra
    {str: str} entries for the header's ``__metadata__``."""
    tensors = []            # (name, numpy array), in leaf order
    structure = _encode(tree, (), tensors, set())
    meta = {_TREE_KEY: json.dumps({"version": _FORMAT_VERSION, "tree": structure},
                                  separators=(",", ":"))}
    for k, v in (metadata or {}).items():
        if not (isinstance(k, str) and isinstance(v, str)) or k == _TREE_KEY:
            raise ValueError(f"fnad.io.save: metadata must map str to str and may not "
                             f"use the key {_TREE_KEY!r}; got {k!r}: {v!r}")
        meta[k] = v
    header = {"__metadata__": meta}
    offset = 0
    for name, value in tensors:
        header[name] = {"dtype": _CODE_OF[value.dtype.newbyteorder("=")],
                        "shape": list(value.shape),
                        "data_offsets": [offset, offset + value.nbytes]}
        offset += value.nbytes
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)     # the spec's 8-byte alignment
    _write_atomically(path, header_bytes, [v for _, v in tensors])


def _write_atomically(path, header_bytes, arrays):
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(len(header_bytes).to_bytes(8, "little"))
            f.write(header_bytes)
            for a in arrays:
                _write_tensor(f, a)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def _mode_for(path):
    try:
        return os.stat(path).st_mode & 0o7777      # overwriting: keep the file's mode
    except OSError:
        return 0o666 & ~_umask()


def _umask():
    # Reading the umask with os.umask() means setting it, which races with other
    # threads; Linux shows it in /proc instead.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _write_tensor(f, array):
    f.write(array.reshape(-1).view(np.uint8).data)


def _fsync_directory(directory):
    # Makes the rename itself durable; not possible on every platform (Windows).
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _encode(x, path, tensors, names):
    """The JSON description of the subtree x; array leaves are appended to tensors."""
    if isinstance(x, (Array, np.ndarray, np.generic)):     # first: np.float64 is a float
        kind = "fnad" if isinstance(x, Array) else ("numpy" if isinstance(x, np.ndarray)
                                                    else "numpy_scalar")
        value = np.asarray(x)
        if value.dtype.newbyteorder("=") not in _CODE_OF:
            raise TypeError(f"fnad.io.save: the leaf at {_describe_path(path)} has dtype "
                            f"{value.dtype}, which safetensors cannot store; supported: "
                            + ", ".join(sorted(str(d) for d in _CODE_OF)))
        value = value.astype(value.dtype.newbyteorder("<"), order="C", copy=False)
        name = _unique_name(path, names)
        tensors.append((name, value))
        return {"t": "array", "name": name, "kind": kind}
    if x is None:
        return {"t": "none"}
    if isinstance(x, bool):
        return {"t": "bool", "v": x}
    if isinstance(x, int):
        return {"t": "int", "v": str(x)}        # a string: JSON readers lose big ints
    if isinstance(x, float):
        return {"t": "float", "v": float.hex(x)}    # exact, and covers nan and inf
    if isinstance(x, str):
        return {"t": "str", "v": x}
    if type(x) is dict or (isinstance(x, dict) and type(x) not in _registry):
        keys = list(x)
        for k in keys:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"fnad.io.save: dict keys must be str or int; the dict at "
                                f"{_describe_path(path)} has the key {k!r}")
        keys = sorted(keys, key=lambda k: (isinstance(k, str), k))
        return {"t": "dict", "keys": [[type(k).__name__, k] for k in keys],
                "c": [_encode(x[k], path + (k,), tensors, names) for k in keys]}
    if isinstance(x, tuple) and hasattr(type(x), "_fields") and type(x) not in _registry:
        cls = type(x)
        return {"t": "namedtuple", "module": cls.__module__, "name": cls.__qualname__,
                "fields": list(cls._fields),
                "c": [_encode(v, path + (f,), tensors, names)
                      for f, v in zip(cls._fields, x)]}
    if type(x) in (list, tuple):
        return {"t": type(x).__name__,
                "c": [_encode(v, path + (i,), tensors, names) for i, v in enumerate(x)]}
    raise TypeError(f"fnad.io.save: cannot store the {type(x).__name__} at "
                    f"{_describe_path(path)}; save dicts, lists, tuples, namedtuples, None, "
                    f"Python scalars and arrays (convert custom pytree nodes to dicts)")


def _unique_name(path, names):
    name = ".".join(str(p) for p in path) or "value"
    if name in names or name == "__metadata__":
        i = 1
        while f"{name}#{i}" in names:
            i += 1
        name = f"{name}#{i}"
    names.add(name)
    return name


def _describe_path(path):
    return "the root" if not path else "".join(f"[{p!r}]" for p in path)


# --------------------------------------------------------------------------- load

def load(path, like=None):
    """Read a pytree written by `save`. With `like` (a template pytree), check that the
    file holds the same structure with leaves of the same shapes and dtypes, and return
    it in the template's own container types."""
    with open(path, "rb") as f:
        data = f.read()
    header, body_start = _read_header(path, data)
    arrays = _read_tensors(path, header, data, body_start)
    meta = header.get("__metadata__") or {}
    if _TREE_KEY in meta:
        tree = _decode_structure(path, meta[_TREE_KEY], arrays)
    else:
        tree = {name: Array(a) for name, a in arrays.items()}
    if like is not None:
        tree = _match_template(path, tree, like)
    return tree


def _read_header(path, data):
    if len(data) < 8:
        raise FileFormatError(path, f"truncated: {len(data)} bytes, too short to hold the "
                                    f"8-byte header length of a safetensors file")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise FileFormatError(path, f"truncated or not a safetensors file: the header "
                                    f"length says {n} bytes but only {len(data) - 8} follow")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise FileFormatError(path, f"corrupted header: not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise FileFormatError(path, f"corrupted header: expected a JSON object, got "
                                    f"{type(header).__name__}")
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and
                                 all(isinstance(v, str) for v in meta.values())):
        raise FileFormatError(path, "corrupted header: __metadata__ must map str to str")
    return header, 8 + n


def _read_tensors(path, header, data, body_start):
    body_len = len(data) - body_start
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, begin, end = _check_entry(path, name, info)
        entries.append((begin, end, name, dtype, shape))
    entries.sort(key=lambda e: (e[0], e[1]))
    expected = 0
    for begin, end, name, dtype, shape in entries:
        if begin != expected:
            raise FileFormatError(
                path, f"offsets out of range: tensor {name!r} starts at byte {begin} of the "
                      f"data section, but the previous tensor ends at {expected} (tensors "
                      f"must be contiguous, without gaps or overlaps)")
        expected = end
    if expected > body_len:
        raise FileFormatError(path, f"truncated: the header describes {expected} bytes of "
                                    f"tensor data but the file holds {body_len}")
    if expected < body_len:
        raise FileFormatError(path, f"corrupted: {body_len - expected} bytes after the last "
                                    f"tensor are not described by the header")
    arrays = {}
    for begin, end, name, dtype, shape in entries:
        raw = np.frombuffer(data, dtype=dtype.newbyteorder("<"), count=math.prod(shape),
                            offset=body_start + begin)
        arrays[name] = raw.astype(dtype).reshape(shape)     # a native-order copy
    return arrays


def _check_entry(path, name, info):
    if not (isinstance(info, dict) and {"dtype", "shape", "data_offsets"} <= set(info)):
        raise FileFormatError(path, f"corrupted header: the entry for tensor {name!r} needs "
                                    f"'dtype', 'shape' and 'data_offsets', got {info!r}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if code not in _DTYPE_CODES:
        raise FileFormatError(path, f"dtype mismatch: tensor {name!r} has dtype {code!r}, "
                                    f"which fnad does not read; known: "
                                    + ", ".join(_DTYPE_CODES))
    if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
        raise FileFormatError(path, f"corrupted header: tensor {name!r} has shape {shape!r}; "
                                    f"expected a list of non-negative ints")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))
            and offsets[0] <= offsets[1]):
        raise FileFormatError(path, f"offsets out of range: tensor {name!r} has data_offsets "
                                    f"{offsets!r}; expected [begin, end] with "
                                    f"0 <= begin <= end")
    dtype = np.dtype(_DTYPE_CODES[code])
    nbytes = math.prod(shape) * dtype.itemsize
    if offsets[1] - offsets[0] != nbytes:
        raise FileFormatError(path, f"dtype mismatch: tensor {name!r} of dtype {code} and "
                                    f"shape {tuple(shape)} needs {nbytes} bytes, but its "
                                    f"data_offsets {offsets} span {offsets[1] - offsets[0]}")
    return dtype, tuple(shape), offsets[0], offsets[1]


def _is_count(x):
    return type(x) is int and x >= 0


def _decode_structure(path, text, arrays):
    try:
        doc = json.loads(text)
        node = doc["tree"]
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        raise FileFormatError(path, f"corrupted header: the {_TREE_KEY!r} metadata is not "
                                    f"a valid tree description ({e})") from None
    used = set()
    try:
        tree = _decode(node, arrays, used)
    except (KeyError, TypeError, ValueError, IndexError, RecursionError) as e:
        raise FileFormatError(path, f"corrupted header: bad tree description ({e})") from None
    unused = set(arrays) - used
    if unused:
        raise FileFormatError(path, f"corrupted header: tensors {sorted(unused)} are not "
                                    f"part of the stored tree")
    return tree


def _decode(node, arrays, used):
    t = node["t"]
    if t == "none":
        return None
    if t == "bool":
        return bool(node["v"])
    if t == "int":
        return int(node["v"])
    if t == "float":
        return float.fromhex(node["v"])
    if t == "str":
        return str(node["v"])
    if t == "array":
        name = node["name"]
        if name not in arrays:
            raise KeyError(f"the tree refers to a tensor {name!r} that the header lacks")
        used.add(name)
        value = arrays[name]
        kind = node.get("kind", "fnad")
        if kind == "numpy":
            return value
        if kind == "numpy_scalar":
            return value[()]
        return Array(value)
    children = [_decode(c, arrays, used) for c in node["c"]]
    if t == "list":
        return children
    if t == "tuple":
        return tuple(children)
    if t == "dict":
        keys = [int(v) if kind == "int" else str(v) for kind, v in node["keys"]]
        return dict(zip(keys, children))
    if t == "namedtuple":
        return _namedtuple_class(node["module"], node["name"], node["fields"])(*children)
    raise ValueError(f"unknown node type {t!r}")


def _namedtuple_class(module, qualname, fields):
    """The namedtuple class that was saved, if its module is already imported (loading
    never imports code); otherwise a new namedtuple class with the same name and fields."""
    cls = sys.modules.get(module)
    for part in qualname.split("."):
        cls = getattr(cls, part, None)
    if isinstance(cls, type) and issubclass(cls, tuple) and \
            list(getattr(cls, "_fields", ())) == list(fields):
        return cls
    from collections import namedtuple
    return namedtuple(qualname.split(".")[-1].replace("<", "_").replace(">", "_"), fields)


def _match_template(path, tree, like):
    leaves, treedef = tree_flatten(tree)
    like_leaves, like_def = tree_flatten(like)
    if _shape_of(treedef) != _shape_of(like_def):
        raise FileFormatError(path, f"structure mismatch: the file holds {treedef}, the "
                                    f"template is {like_def}")
    out = []
    for i, (got, want) in enumerate(zip(leaves, like_leaves)):
        if _is_array(want) or _is_array(got):
            g, w = np.asarray(got), np.asarray(want)
            if g.shape != w.shape or g.dtype != w.dtype.newbyteorder("="):
                what = "shape" if g.dtype == w.dtype.newbyteorder("=") else "dtype"
                raise FileFormatError(
                    path, f"{what} mismatch at {_leaf_path(like_def, i)}: the file holds "
                          f"{g.dtype}{list(g.shape)}, the template {w.dtype}{list(w.shape)}")
            got = Array(g) if isinstance(want, Array) else (
                g[()] if isinstance(want, np.generic) else
                g if isinstance(want, np.ndarray) else got)
        elif type(got) is not type(want):
            raise FileFormatError(path, f"type mismatch at {_leaf_path(like_def, i)}: the "
                                        f"file holds a {type(got).__name__}, the template a "
                                        f"{type(want).__name__}")
        out.append(got)
    return like_def.unflatten(out)


def _shape_of(treedef):
    """A treedef with namedtuple classes replaced by their field names and dict
    subclasses by dict, so a tree whose namedtuple class had to be re-created (or an
    OrderedDict that loaded as a dict) still matches the template's."""
    node_type, aux = treedef.node_type, treedef.aux
    if isinstance(node_type, type) and issubclass(node_type, tuple) and \
            hasattr(node_type, "_fields"):
        node_type = ("namedtuple", tuple(node_type._fields))
    elif isinstance(node_type, type) and issubclass(node_type, dict):
        node_type, aux = dict, aux[1]
    return (node_type, aux, tuple(_shape_of(c) for c in treedef.children))


def _is_array(x):
    return isinstance(x, (Array, np.ndarray, np.generic))


def _leaf_path(treedef, index):
    """A readable path to the leaf numbered `index` of treedef."""
    def walk(td, prefix, counter):
        if td.node_type is None:
            if counter[0] == index:
                return prefix or "the root"
            counter[0] += 1
            return None
        if isinstance(td.node_type, type) and issubclass(td.node_type, dict):
            labels = [f"[{k!r}]" for k in td.aux[1]]
        elif hasattr(td.node_type, "_fields"):
            labels = [f".{f}" for f in td.node_type._fields]
        else:
            labels = [f"[{i}]" for i in range(len(td.children))]
        for label, child in zip(labels, td.children):
            found = walk(child, prefix + label, counter)
            if found is not None:
                return found
        return None
    return walk(treedef, "", [0])
