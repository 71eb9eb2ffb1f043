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

Writing. The bytes go to a temporary file in the target's directory, which is fsynced,
renamed over the target, and then the directory is fsynced: a crash leaves the old file
or the new one, never half of one. The temporary file is named
``.<name>.fnad-<host>-<pid>-<random>.tmp`` (<host>: a hash of the host name and PID
namespace). Each save first deletes the temporary files in its directory that a crashed
save left behind: those matching that pattern, made on this host, whose process is gone
(no such pid, a zombie, or a pid that was reused by a process started after the file
was last written). Files of live processes, of other hosts and of other programs are
never touched. The target is treated as ``open(path, "w")`` would treat it, but
atomically: a symlink is followed and the file it points to is replaced (the link stays;
a dangling link creates its target), a directory or other non-regular file is refused,
and a file without write permission raises PermissionError. Root, whom the OS lets write
anything, is refused too when the file has no write bit at all (mode 0444): a
write-protected checkpoint is protected from every user. Overwriting keeps the file's
mode (and its owner, where the OS allows).

Loading treats the file as hostile: every header field is checked (duplicate JSON keys,
dtypes, shapes numpy can represent, contiguous offsets within the file) and so is the
tree description (version, node types, each node's keys and value types, key counts);
anything else raises FileFormatError. Loading never imports a module and never runs
code named by the file: a namedtuple comes back as its original class only when that
class is already imported, is reachable from ``sys.modules[module]`` through plain
``__dict__`` lookups (no module ``__getattr__``), is a direct tuple subclass and has
exactly the stored fields; the instance is then made with ``tuple.__new__`` (no
``__new__`` of the class runs). Otherwise the node becomes an instance of a new
``collections.namedtuple`` with the stored type name and fields.
"""
import collections
import errno
import hashlib
import json
import keyword
import math
import os
import re
import reprlib
import stat
import sys
import tempfile

import ml_dtypes
import numpy as np

from .array import Array
from .errors import FileFormatError  # noqa: F401 (re-exported as fnad.io.FileFormatError)
from .tree_util import PyTree, is_registered_node, tree_flatten

_DTYPE_CODES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
    "F16": np.float16, "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64,
}
_CODE_OF = {np.dtype(t): code for code, t in _DTYPE_CODES.items()}
_TREE_KEY = "fnad.tree"
_FORMAT_VERSION = 1
_INTP_MAX = np.iinfo(np.intp).max
_EFFECTIVE_IDS = os.access in os.supports_effective_ids
_short = reprlib.Repr()
_short.maxstring = _short.maxother = 80


# --------------------------------------------------------------------------- save

def save(path: str | os.PathLike[str], tree: PyTree, metadata: dict[str, str] | None = None
         ) -> None:
    """Write the pytree `tree` to `path` as safetensors. `metadata`: optional extra
    {str: str} entries for the header's ``__metadata__``. A symlink at `path` is
    written through (its target is replaced, the link kept); a target without write
    permission raises PermissionError, also for root when it has no write bit at all.
    Temporary files of earlier crashed saves in the same directory are deleted (see the
    module docstring for the exact rule).

    The file is written whole to a temporary name and renamed, so a crash never leaves
    a half-written checkpoint. Differences from pickle-based checkpoints: only arrays,
    Python scalars, strings, None and the standard containers are stored, and loading
    runs no code.

    >>> fnad.io.save("checkpoint.safetensors", {"w": fnp.arange(3.0), "step": 7})
    >>> fnad.io.load("checkpoint.safetensors")
    {'step': 7, 'w': Array([0., 1., 2.], dtype=float32)}
    """
    tensors = []            # (name, numpy array), in leaf order
    structure = _encode(tree, (), tensors, set())
    meta = {_TREE_KEY: json.dumps({"version": _FORMAT_VERSION, "tree": structure},
                                  separators=(",", ":"))}
    for k, v in (metadata or {}).items():
        if not (isinstance(k, str) and isinstance(v, str)) or k == _TREE_KEY:
            raise ValueError(f"fnad.io.save: metadata must map str to str and may not "
                             f"use the key {_TREE_KEY!r}; got {k!r}: {v!r}")
        meta[k] = v
    header: dict[str, dict] = {"__metadata__": meta}
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
    target = _writable_target(os.fspath(path))
    directory = os.path.dirname(target)
    _remove_stale_temporaries(directory)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp", prefix=_temp_prefix(target))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(len(header_bytes).to_bytes(8, "little"))
            f.write(header_bytes)
            for a in arrays:
                _write_tensor(f, a)
            f.flush()
            os.fsync(f.fileno())
        _copy_ownership_and_mode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def _writable_target(path):
    """The absolute path of the regular file that `open(path, "w")` would write, after
    checking that it may be written."""
    target = os.path.realpath(path)
    if os.path.islink(target):      # realpath stops at a symlink loop
        raise OSError(errno.ELOOP, f"fnad.io.save: too many levels of symbolic links "
                                   f"resolving {path!r}", path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "fnad.io.save: the path is a directory",
                                path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "fnad.io.save: the path is not a regular file (a "
                                    "device, FIFO or socket); save to a file", path)
    if st.st_mode & 0o222 == 0 or not os.access(target, os.W_OK,
                                                 effective_ids=_EFFECTIVE_IDS):
        raise PermissionError(errno.EACCES, f"fnad.io.save: the file is write-protected "
                                            f"(mode {stat.filemode(st.st_mode)}); make it "
                                            f"writable or save elsewhere", path)
    return target


def _copy_ownership_and_mode(target, tmp):
    try:
        st = os.stat(target)
    except FileNotFoundError:
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        return
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except OSError:
            pass        # only root may give a file away; the new file is then ours
    os.chmod(tmp, st.st_mode & 0o7777)      # after chown, which clears setuid bits


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


# --------------------------------------------------------------------------- temporaries

def _host_tag():
    """Which pid numbering a pid in a temporary file's name belongs to: two hosts
    sharing a directory (NFS), or two containers with their own PID namespaces, must not
    judge each other's processes dead."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return hashlib.sha256(f"{os.uname().nodename}\0{namespace}".encode()).hexdigest()[:8]


_HOST = _host_tag()
_TEMP_NAME = re.compile(r"\A\..*\.fnad-(?P<host>[0-9a-f]{8})-(?P<pid>[1-9][0-9]{0,9})-"
                        r"[a-z0-9_]{8}\.tmp\Z", re.DOTALL)
_CLOCK_SLACK_S = 60     # wall-clock steps between a process's start and its writes


def _temp_prefix(target):
    # The name is cut short so the temporary's name stays within NAME_MAX.
    return f".{os.path.basename(target)[:64]}.fnad-{_HOST}-{os.getpid()}-"


def _remove_stale_temporaries(directory):
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or match["host"] != _HOST:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and _creator_gone(int(match["pid"]), st.st_mtime):
                os.unlink(entry.path)
        except OSError:
            pass        # gone already (a concurrent save cleaned it), or not ours to delete


def _creator_gone(pid, last_write):
    """Whether the process that wrote a file last at `last_write` (a time.time()) under
    the pid `pid` has ended. Unsure means no."""
    if os.name != "posix":
        return False    # Windows' os.kill(pid, 0) would end the process, not probe it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass            # alive, another user's
    except (OSError, OverflowError):     # OverflowError: a pid beyond the C int range
        return False
    state, started = _process_state_and_start(pid)
    if state in ("Z", "X"):
        return True     # ended, not yet reaped: it writes nothing more
    return started is not None and started > last_write + _CLOCK_SLACK_S


def _process_state_and_start(pid):
    """(state letter, start time as a time.time()) of a Linux process, from /proc;
    (None, None) where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        ticks = os.sysconf("SC_CLK_TCK")
        return fields[0], boot + int(fields[19]) / ticks
    except (OSError, ValueError, IndexError, StopIteration):
        return None, None


# --------------------------------------------------------------------------- encoding

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
    if type(x) is dict or (isinstance(x, dict) and not is_registered_node(type(x))):
        keys = list(x)
        for k in keys:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"fnad.io.save: dict keys must be str or int; the dict at "
                                f"{_describe_path(path)} has the key {k!r}")
        keys = sorted(keys, key=lambda k: (isinstance(k, str), k))
        return {"t": "dict", "keys": [[type(k).__name__, k] for k in keys],
                "c": [_encode(x[k], path + (k,), tensors, names) for k in keys]}
    if isinstance(x, tuple) and hasattr(type(x), "_fields") and not is_registered_node(type(x)):
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

def load(path: str | os.PathLike[str], like: PyTree = None) -> PyTree:
    """Read a pytree written by `save`. With `like` (a template pytree), check that the
    file holds the same structure with leaves of the same shapes and dtypes, and return
    it in the template's own container types. Any defect of the file raises
    FileFormatError; loading imports nothing and runs no code the file names."""
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


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs):
    # Python's json keeps the last of two equal keys; a file naming a tensor or a tree
    # field twice is ambiguous, so it is refused.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _DuplicateKey(f"the key {_short.repr(twice)} appears twice in one object")
    return obj


def _parse_json(text):
    return json.loads(text, object_pairs_hook=_unique_keys)


def _read_header(path, data):
    if len(data) < 8:
        raise FileFormatError(path, f"truncated: {len(data)} bytes, too short to hold the "
                                    f"8-byte header length of a safetensors file")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise FileFormatError(path, f"truncated or not a safetensors file: the header "
                                    f"length says {n} bytes but only {len(data) - 8} follow")
    try:
        header = _parse_json(data[8:8 + n].decode("utf-8"))
    except _DuplicateKey as e:
        raise FileFormatError(path, f"corrupted header: {e}") from None
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
        try:
            raw = np.frombuffer(data, dtype=dtype.newbyteorder("<"),
                                count=math.prod(shape), offset=body_start + begin)
            arrays[name] = raw.astype(dtype).reshape(shape)     # a native-order copy
        except ValueError as e:     # a safety net under _check_entry's checks
            raise FileFormatError(path, f"corrupted header: tensor {name!r} of shape "
                                        f"{_short.repr(shape)} cannot be read ({e})") from None
    return arrays


def _check_entry(path, name, info):
    if not (isinstance(info, dict) and {"dtype", "shape", "data_offsets"} <= set(info)):
        raise FileFormatError(path, f"corrupted header: the entry for tensor {name!r} needs "
                                    f"'dtype', 'shape' and 'data_offsets', got "
                                    f"{_short.repr(info)}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(code, str) or code not in _DTYPE_CODES:
        raise FileFormatError(path, f"dtype mismatch: tensor {name!r} has dtype "
                                    f"{_short.repr(code)}, which fnad does not read; known: "
                                    + ", ".join(_DTYPE_CODES))
    if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
        raise FileFormatError(path, f"corrupted header: tensor {name!r} has shape "
                                    f"{_short.repr(shape)}; expected a list of "
                                    f"non-negative ints")
    dtype = np.dtype(_DTYPE_CODES[code])
    # numpy's own limits, checked here so that no shape reaches numpy to fail there.
    if len(shape) > 64 or math.prod(d for d in shape if d) * dtype.itemsize > _INTP_MAX:
        raise FileFormatError(path, f"corrupted header: tensor {name!r} has shape "
                                    f"{_short.repr(shape)}, beyond what numpy can hold "
                                    f"(at most 64 dimensions, and at most 2**63 - 1 bytes "
                                    f"counting only the nonzero dimensions)")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))
            and offsets[0] <= offsets[1]):
        raise FileFormatError(path, f"offsets out of range: tensor {name!r} has data_offsets "
                                    f"{_short.repr(offsets)}; expected [begin, end] with "
                                    f"0 <= begin <= end")
    nbytes = math.prod(shape) * dtype.itemsize
    if offsets[1] - offsets[0] != nbytes:
        raise FileFormatError(path, f"dtype mismatch: tensor {name!r} of dtype {code} and "
                                    f"shape {tuple(shape)} needs {nbytes} bytes, but its "
                                    f"data_offsets {offsets} span {offsets[1] - offsets[0]}")
    return dtype, tuple(shape), offsets[0], offsets[1]


def _is_count(x):
    return type(x) is int and x >= 0


# --------------------------------------------------------------------------- the tree

class _BadTree(ValueError):
    def __init__(self, where, message):
        super().__init__(f"at {_describe_path(where)}: {message}")


def _decode_structure(path, text, arrays):
    reader = _TreeReader(arrays)
    try:
        doc = _parse_json(text)
        tree = reader.read(_check_document(doc), ())
    except _BadTree as e:
        raise FileFormatError(path, f"corrupted header: bad tree description {e}") from None
    except (ValueError, RecursionError) as e:
        raise FileFormatError(path, f"corrupted header: the {_TREE_KEY!r} metadata is not "
                                    f"a valid tree description ({e})") from None
    unused = set(arrays) - reader.used
    if unused:
        raise FileFormatError(path, f"corrupted header: tensors {sorted(unused)} are not "
                                    f"part of the stored tree")
    return tree


def _check_document(doc):
    if not (isinstance(doc, dict) and set(doc) == {"version", "tree"}):
        raise _BadTree((), f"expected an object with the keys 'version' and 'tree', got "
                           f"{_short.repr(doc)}")
    version = doc["version"]
    if type(version) is not int:
        raise _BadTree((), f"the format version must be an integer, got {version!r}")
    if version != _FORMAT_VERSION:
        raise _BadTree((), f"format version {version} is unknown; this fnad reads version "
                           f"{_FORMAT_VERSION} (was the file written by a newer fnad?)")
    return doc["tree"]


# The keys each node type has, exactly: a missing or an extra key is a defect.
_NODE_KEYS = {"none": {"t"}, "bool": {"t", "v"}, "int": {"t", "v"}, "float": {"t", "v"},
              "str": {"t", "v"}, "array": {"t", "name", "kind"}, "list": {"t", "c"},
              "tuple": {"t", "c"}, "dict": {"t", "keys", "c"},
              "namedtuple": {"t", "module", "name", "fields", "c"}}
_INT_TEXT = re.compile(r"\A-?(0|[1-9][0-9]*)\Z")
_FLOAT_TEXT = re.compile(r"\A(-?(0x[0-9a-f]+(\.[0-9a-f]+)?p[+-][0-9]+|inf)|nan)\Z")   # float.hex
_ARRAY_KINDS = ("fnad", "numpy", "numpy_scalar")


class _TreeReader:
    """Rebuilds a tree from its description, checking every node; remembers which
    tensors it used and the namedtuple classes it made."""

    def __init__(self, arrays):
        self.arrays, self.used, self.classes = arrays, set(), {}

    def read(self, node, where):
        t = node.get("t") if isinstance(node, dict) else None
        if not (isinstance(t, str) and t in _NODE_KEYS):
            raise _BadTree(where, f"expected a node object with a known 't' (one of "
                                  f"{sorted(_NODE_KEYS)}), got {_short.repr(node)}")
        if set(node) != _NODE_KEYS[t]:
            raise _BadTree(where, f"a {t!r} node has the keys {sorted(node)}; expected "
                                  f"{sorted(_NODE_KEYS[t])}")
        return _NODE_READERS[t](self, node, where)

    def children(self, node, labels, where):
        return [self.read(c, where + (label,)) for label, c in zip(labels, node["c"])]


def _read_leaf(kind, check, expected, convert=lambda v: v):
    def read(reader, node, where):
        v = node["v"]
        if not check(v):
            raise _BadTree(where, f"a {kind!r} node's value must be {expected}, got "
                                  f"{_short.repr(v)}")
        try:
            return convert(v)
        except (ValueError, OverflowError) as e:
            raise _BadTree(where, f"bad {kind!r} value {_short.repr(v)} ({e})") from None
    return read


def _is_int_text(v):
    return type(v) is str and _INT_TEXT.match(v) is not None


def _is_float_text(v):
    return type(v) is str and _FLOAT_TEXT.match(v) is not None


def _is_str(v):
    return type(v) is str


def _read_array(reader, node, where):
    name, kind = node["name"], node["kind"]
    if not (type(name) is str and name in reader.arrays):
        raise _BadTree(where, f"refers to a tensor {_short.repr(name)} that the header "
                              f"lacks")
    if name in reader.used:
        raise _BadTree(where, f"refers to the tensor {name!r} a second time")
    if kind not in _ARRAY_KINDS:
        raise _BadTree(where, f"unknown array kind {_short.repr(kind)}; expected one of "
                              f"{list(_ARRAY_KINDS)}")
    reader.used.add(name)
    value = reader.arrays[name]
    if kind == "numpy":
        return value
    if kind == "numpy_scalar":
        if value.shape != ():
            raise _BadTree(where, f"a numpy scalar refers to the tensor {name!r} of shape "
                                  f"{value.shape}")
        return value[()]
    return Array(value)


def _checked_children(node, count, where):
    if not isinstance(node["c"], list):
        raise _BadTree(where, f"the children 'c' must be a list, got {_short.repr(node['c'])}")
    if count is not None and len(node["c"]) != count:
        raise _BadTree(where, f"{count} names but {len(node['c'])} children")


def _read_sequence(reader, node, where):
    _checked_children(node, None, where)
    children = reader.children(node, range(len(node["c"])), where)
    return children if node["t"] == "list" else tuple(children)


def _read_dict(reader, node, where):
    keys = node["keys"]
    if not (isinstance(keys, list) and all(_is_dict_key(k) for k in keys)):
        raise _BadTree(where, f"dict keys must be a list of ['str', text] and ['int', "
                              f"integer] pairs, got {_short.repr(keys)}")
    keys = [v for _, v in keys]
    if len(set(keys)) != len(keys):
        raise _BadTree(where, f"the dict names a key twice: {_short.repr(keys)}")
    _checked_children(node, len(keys), where)
    return dict(zip(keys, reader.children(node, keys, where)))


def _is_dict_key(k):
    return (isinstance(k, list) and len(k) == 2 and
            ((k[0] == "str" and type(k[1]) is str) or (k[0] == "int" and type(k[1]) is int)))


def _read_namedtuple(reader, node, where):
    module, qualname, fields = node["module"], node["name"], node["fields"]
    if not (type(module) is str and type(qualname) is str and isinstance(fields, list)):
        raise _BadTree(where, "a namedtuple needs a module and a name (strings) and a list "
                              "of field names")
    bad = [f for f in fields if not _is_field_name(f)]
    if bad or len(set(fields)) != len(fields):
        raise _BadTree(where, f"namedtuple fields must be distinct identifiers that are "
                              f"not keywords and do not start with '_', got "
                              f"{_short.repr(fields)}")
    _checked_children(node, len(fields), where)
    key = (module, qualname, tuple(fields))
    if key not in reader.classes:
        reader.classes[key] = (_imported_namedtuple(module, qualname, fields) or
                               _new_namedtuple(qualname, fields, where))
    return tuple.__new__(reader.classes[key], reader.children(node, fields, where))


def _is_field_name(f):
    return (type(f) is str and f.isascii() and f.isidentifier() and
            not keyword.iskeyword(f) and not f.startswith("_"))


def _imported_namedtuple(module, qualname, fields):
    """The class `module.qualname` if it is already imported and is a namedtuple with
    these fields, found through plain __dict__ lookups only, so that no module
    __getattr__ (a lazy import) or descriptor runs; None otherwise."""
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        if type(obj) is type:
            namespace = type.__dict__["__dict__"].__get__(obj)
        elif issubclass(type(obj), type(sys)):
            namespace = type(sys).__dict__["__dict__"].__get__(obj)
        else:
            return None
        obj = namespace.get(part)
    if not (type(obj) is type and obj.__bases__ == (tuple,)):
        return None
    stored = type.__dict__["__dict__"].__get__(obj).get("_fields")
    if type(stored) is tuple and all(type(f) is str for f in stored) and \
            stored == tuple(fields):
        return obj
    return None


def _new_namedtuple(qualname, fields, where):
    name = re.sub(r"\W", "_", qualname.rsplit(".", 1)[-1])
    if not name.isidentifier() or keyword.iskeyword(name):
        name = "_" + name
    try:
        return collections.namedtuple(name, fields)
    except (ValueError, SyntaxError) as e:
        raise _BadTree(where, f"cannot make a namedtuple {name!r} with fields "
                              f"{_short.repr(fields)} ({e})") from None


_NODE_READERS = {
    "none": lambda reader, node, where: None,
    "bool": _read_leaf("bool", lambda v: type(v) is bool, "true or false"),
    "int": _read_leaf("int", _is_int_text, "a string of decimal digits", int),
    "float": _read_leaf("float", _is_float_text, "a float.hex() string",
                        float.fromhex),
    "str": _read_leaf("str", _is_str, "a string"),
    "array": _read_array,
    "list": _read_sequence,
    "tuple": _read_sequence,
    "dict": _read_dict,
    "namedtuple": _read_namedtuple,
}


# --------------------------------------------------------------------------- templates

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
