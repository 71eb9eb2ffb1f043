"""fnad.io against crashes, protected and linked targets, and hostile files: SIGKILLs
mid-save, the cleanup of crashed saves' temporary files, permissions, symlinks,
malformed tree descriptions, duplicate keys, shapes beyond numpy, and namedtuples that
must not import or run anything."""
import collections
import json
import os
import queue
import random
import re
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types

import numpy as np
import pytest

from fnad import io

POSIX = os.name == "posix"
pytestmark = pytest.mark.skipif(not POSIX, reason="POSIX processes, modes and links")
TEMP = re.compile(r"\A\.(?P<name>.*)\.fnad-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-"
                  r"(?P<rand>[a-z0-9_]{8})\.tmp\Z")


def _temporaries(directory, pid=None):
    return sorted(n for n in os.listdir(directory)
                  if (m := TEMP.match(n)) and (pid is None or int(m["pid"]) == pid))


def _write_raw(path, header, body):
    text = json.dumps(header).encode() if isinstance(header, dict) else header
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


# --------------------------------------------------------------------------- SIGKILL

# Imports fnad once, then forks one saver per request: each saver writes checkpoints
# {"step": s, "w": full(n, s)} back to back until it is killed (or 100 saves, or its
# parent is gone), and the helper reaps it and says so.
_SAVER = r"""
import os, sys, time
import numpy as np
from fnad import io
path, n = sys.argv[1], int(sys.argv[2])
tree = lambda step: {"step": step, "w": np.full(n, step, np.float32)}
t0 = time.perf_counter()
io.save(path, tree(0))
print(time.perf_counter() - t0, flush=True)
helper = os.getpid()
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        for step in range(int(line), int(line) + 100):
            if os.getppid() != helper:
                break
            io.save(path, tree(step))
        os._exit(0)
    print(pid, flush=True)
    os.waitpid(pid, 0)
    print("reaped", flush=True)
"""


class _Lines:
    """Lines of a pipe, read by a thread, so that each read can time out."""

    def __init__(self, pipe):
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in pipe], daemon=True).start()

    def next(self, timeout=120):
        try:
            return self.lines.get(timeout=timeout).strip()
        except queue.Empty:
            pytest.fail("the saver process stopped answering")


def _wait_until(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.001)


@pytest.mark.slow_sweep
def test_sigkill_at_random_moments_of_large_saves(tmp_path):
    # 32 MiB per checkpoint (the probe used 256 MiB) keeps 20 kills to seconds.
    n = 8 * 2 ** 20
    path = tmp_path / "ckpt.safetensors"
    helper = subprocess.Popen([sys.executable, "-c", _SAVER, str(path), str(n)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        lines = _Lines(helper.stdout)
        save_seconds = float(lines.next())
        rng = random.Random(11)
        killed_mid_save = 0
        for kill in range(1, 21):
            helper.stdin.write(f"{kill * 1000}\n")
            helper.stdin.flush()
            pid = int(lines.next())
            _wait_until(lambda: _temporaries(tmp_path, pid))        # a save has begun
            time.sleep(rng.uniform(0, 1.5 * save_seconds))
            os.kill(pid, signal.SIGKILL)
            assert lines.next() == "reaped"
            left = _temporaries(tmp_path)
            # Each saver's first save removed the temporary file of the one killed before.
            assert len(left) <= 1, left
            killed_mid_save += len(left)
            out = io.load(path)
            step = out["step"]
            assert step == 0 or 1000 <= step < (kill + 1) * 1000
            assert out["w"].shape == (n,) and bool((np.asarray(out["w"]) == step).all())
        # Saves run back to back, so nearly every kill lands inside one; without any,
        # the cleanup below would not have been exercised.
        assert killed_mid_save >= 1
    finally:
        helper.kill()
        helper.wait()
    io.save(path, {"step": -1})
    assert _temporaries(tmp_path) == [] and os.listdir(tmp_path) == [path.name]
    assert io.load(path) == {"step": -1}


# --------------------------------------------------------------------------- temporaries

# A process that crashes inside a save: its temporary file stays behind.
_CRASHER = r"""
import os, sys
import numpy as np
from fnad import io
io._write_tensor = lambda f, a: os._exit(3)
io.save(sys.argv[1], {"w": np.ones(4)})
"""


@pytest.fixture(scope="module")
def crashed_name(tmp_path_factory):
    directory = tmp_path_factory.mktemp("crash")
    result = subprocess.run([sys.executable, "-c", _CRASHER, str(directory / "ckpt")])
    assert result.returncode == 3
    (name,) = os.listdir(directory)
    assert TEMP.match(name)["name"] == "ckpt"
    return name


def _named(name, pid=None, host=None):
    m = TEMP.match(name)
    return (f".{m['name']}.fnad-{host or m['host']}-{pid or m['pid']}-"
            f"{m['rand']}.tmp")


def _make(directory, name, mtime=None):
    (directory / name).write_bytes(b"partial")
    if mtime is not None:
        os.utime(directory / name, (mtime, mtime))
    return name


def test_crashed_saves_temporary_is_removed_by_the_next_save(tmp_path, crashed_name):
    dead = _make(tmp_path, crashed_name)
    elsewhere = _make(tmp_path, _named(crashed_name).replace(".ckpt.", ".other.", 1))
    io.save(tmp_path / "ckpt", {"a": np.ones(2)})
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]         # both names, same directory
    assert dead != elsewhere


def test_temporaries_of_live_processes_are_kept(tmp_path, crashed_name):
    mine = _make(tmp_path, _named(crashed_name, pid=os.getpid()))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        theirs = _make(tmp_path, _named(crashed_name, pid=sleeper.pid))
        io.save(tmp_path / "ckpt", {"a": np.ones(2)})
        assert sorted(os.listdir(tmp_path)) == sorted(["ckpt", mine, theirs])
    finally:
        sleeper.kill()
        sleeper.wait()


def test_temporary_older_than_the_live_process_with_its_pid_is_removed(tmp_path,
                                                                       crashed_name):
    # The pid was reused: the process now holding it started after the file's last write.
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        _make(tmp_path, _named(crashed_name, pid=sleeper.pid), mtime=time.time() - 86400)
        io.save(tmp_path / "ckpt", {"a": np.ones(2)})
        assert os.listdir(tmp_path) == ["ckpt"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_temporary_of_a_zombie_is_removed(tmp_path, crashed_name):
    child = subprocess.Popen(["true"])
    try:
        _wait_until(lambda: open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1]
                    .split()[0] == "Z")
        _make(tmp_path, _named(crashed_name, pid=child.pid))
        io.save(tmp_path / "ckpt", {"a": np.ones(2)})
        assert os.listdir(tmp_path) == ["ckpt"]
    finally:
        child.wait()


def test_other_files_are_never_removed(tmp_path, crashed_name):
    dead_pid = TEMP.match(crashed_name)["pid"]
    keep = [_make(tmp_path, _named(crashed_name, host="0123abcd")),   # another host
            _make(tmp_path, f".ckpt.{dead_pid}.tmp"),                  # other programs
            _make(tmp_path, ".ckpt.k2j4h5g6.tmp"),
            _make(tmp_path, crashed_name[1:]),
            _make(tmp_path, crashed_name + ".bak"),
            _make(tmp_path, _named(crashed_name, pid=9999999999))]         # no such pid
    os.mkdir(tmp_path / _named(crashed_name, pid=int(dead_pid) + 1))
    os.symlink("/nonexistent", tmp_path / _named(crashed_name, pid=int(dead_pid) + 2))
    before = sorted(os.listdir(tmp_path))
    io.save(tmp_path / "ckpt", {"a": np.ones(2)})
    assert sorted(os.listdir(tmp_path)) == sorted(before + ["ckpt"])
    assert len(keep) == 6


# --------------------------------------------------------------------------- permissions

def test_write_protected_file_raises_permission_error(tmp_path):
    # Tests often run as root, whom the OS lets write anything; the mode is honoured.
    path = tmp_path / "ckpt"
    io.save(path, {"a": np.zeros(2)})
    before = path.read_bytes()
    os.chmod(path, 0o444)
    with pytest.raises(PermissionError, match="write-protected.*-r--r--r--"):
        io.save(path, {"a": np.ones(2)})
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    os.chmod(path, 0o644)
    io.save(path, {"a": np.ones(2)})
    np.testing.assert_array_equal(io.load(path)["a"], np.ones(2))


@pytest.mark.skipif(not POSIX or os.geteuid() != 0, reason="needs root to switch users")
def test_other_users_file_in_a_shared_directory_is_not_replaced():
    # The directory lets anyone create files, so a rename could replace root's file;
    # the user may not write the file itself, so save must refuse.
    directory = tempfile.mkdtemp()
    try:
        os.chmod(directory, 0o777)
        path = os.path.join(directory, "ckpt")
        io.save(path, {"a": np.zeros(2)})
        before = open(path, "rb").read()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                io.save(path, {"a": np.ones(2)})
            except PermissionError:
                code = 0
            except BaseException:
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert open(path, "rb").read() == before and os.listdir(directory) == ["ckpt"]
    finally:
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)


@pytest.mark.skipif(not POSIX or os.geteuid() != 0, reason="needs root to give files away")
def test_overwrite_keeps_owner_and_mode(tmp_path):
    path = tmp_path / "ckpt"
    io.save(path, {"a": np.zeros(2)})
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o640)
    io.save(path, {"a": np.ones(2)})
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o640)


# --------------------------------------------------------------------------- symlinks

def test_symlink_is_written_through(tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "ckpt"
    io.save(target, {"a": np.zeros(2)})
    os.chmod(target, 0o600)
    link = tmp_path / "link"
    os.symlink(os.path.join("real", "ckpt"), link)          # relative, another directory
    io.save(link, {"a": np.ones(3)})
    assert os.path.islink(link) and os.readlink(link) == os.path.join("real", "ckpt")
    np.testing.assert_array_equal(io.load(target)["a"], np.ones(3))
    np.testing.assert_array_equal(io.load(link)["a"], np.ones(3))
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]
    assert os.listdir(real_dir) == ["ckpt"]


def test_dangling_symlink_creates_its_target(tmp_path):
    os.symlink("made", tmp_path / "link")
    io.save(tmp_path / "link", [np.arange(3)])
    assert os.path.islink(tmp_path / "link")
    np.testing.assert_array_equal(io.load(tmp_path / "made")[0], np.arange(3))


def test_symlink_to_write_protected_file_raises(tmp_path):
    io.save(tmp_path / "ckpt", {"a": np.zeros(2)})
    os.chmod(tmp_path / "ckpt", 0o444)
    os.symlink("ckpt", tmp_path / "link")
    with pytest.raises(PermissionError):
        io.save(tmp_path / "link", {"a": np.ones(2)})
    assert os.path.islink(tmp_path / "link")
    np.testing.assert_array_equal(io.load(tmp_path / "ckpt")["a"], np.zeros(2))


def test_symlink_loop_directory_and_fifo_are_refused(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(OSError, match="symbolic links"):
        io.save(tmp_path / "a", [1])
    os.mkdir(tmp_path / "d")
    os.symlink("d", tmp_path / "to_dir")
    for p in (tmp_path / "d", tmp_path / "to_dir"):
        with pytest.raises(IsADirectoryError):
            io.save(p, [1])
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        io.save(tmp_path / "fifo", [1])
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "d", "fifo", "to_dir"]
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


# --------------------------------------------------------------------------- tree metadata

X = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
ARR = {"t": "array", "name": "x", "kind": "numpy"}


def _with_tree(path, tree_text):
    _write_raw(path, {"__metadata__": {"fnad.tree": tree_text}, "x": X}, b"\0" * 8)


def _doc(tree, **top):
    return json.dumps({"version": 1, "tree": tree, **top})


def _list(*nodes):
    return {"t": "list", "c": [ARR, *nodes]}


BAD_TREES = [
    (json.dumps({"version": 99, "tree": ARR}), "version 99 is unknown"),
    (json.dumps({"version": "1", "tree": ARR}), "version must be an integer"),
    (json.dumps({"version": True, "tree": ARR}), "version must be an integer"),
    (json.dumps({"tree": ARR}), "keys 'version' and 'tree'"),
    (_doc(ARR, extra=1), "keys 'version' and 'tree'"),
    (json.dumps([1, ARR]), "keys 'version' and 'tree'"),
    (_doc(_list({"t": "bool", "v": "false"})), r"at \[1\]: a 'bool' node's value must be "
                                               r"true or false, got 'false'"),
    (_doc(_list({"t": "bool", "v": 0})), "true or false"),
    (_doc(_list({"t": "int", "v": 5})), "decimal digits"),
    (_doc(_list({"t": "int", "v": "5.0"})), "decimal digits"),
    (_doc(_list({"t": "int", "v": "+5"})), "decimal digits"),
    (_doc(_list({"t": "int", "v": "1_000"})), "decimal digits"),
    (_doc(_list({"t": "int", "v": "9" * 5000})), "bad 'int' value"),
    (_doc(_list({"t": "float", "v": 0.5})), "'float' node's value must be a float.hex"),
    (_doc(_list({"t": "float", "v": "abc"})), "must be a float.hex"),
    (_doc(_list({"t": "float", "v": "1.5"})), "must be a float.hex"),
    (_doc(_list({"t": "float", "v": "0x1p+99999"})), "bad 'float' value"),
    (_doc(_list({"t": "str", "v": 3})), "'str' node's value must be a string"),
    (_doc({"t": "dict", "keys": [["str", "a"]], "c": [ARR, {"t": "none"}]}),
     "1 names but 2 children"),
    (_doc({"t": "dict", "keys": [["str", "a"], ["str", "b"], ["int", 3]], "c": [ARR]}),
     "3 names but 1 children"),
    (_doc({"t": "dict", "keys": [["str", "a"], ["str", "a"]], "c": [ARR, {"t": "none"}]}),
     "names a key twice"),
    (_doc({"t": "dict", "keys": [["float", 1.5]], "c": [ARR]}), "dict keys must be"),
    (_doc({"t": "dict", "keys": [["int", "3"]], "c": [ARR]}), "dict keys must be"),
    (_doc({"t": "dict", "keys": [["int", True]], "c": [ARR]}), "dict keys must be"),
    (_doc({"t": "dict", "keys": {"a": 0}, "c": [ARR]}), "dict keys must be"),
    (_doc({"t": "namedtuple", "module": "m", "name": "P", "fields": ["a", "b"],
           "c": [ARR]}), "2 names but 1 children"),
    (_doc({"t": "namedtuple", "module": "m", "name": "P", "fields": "a b", "c": [ARR]}),
     "list of field names"),
    *[(_doc({"t": "namedtuple", "module": "m", "name": "P", "fields": [f], "c": [ARR]}),
       "fields must be distinct identifiers")
      for f in ("class", "_a", "a b", "a);import os#", 1, "")],
    (_doc({"t": "namedtuple", "module": "m", "name": "P", "fields": ["a", "a"],
           "c": [ARR, ARR]}), "fields must be distinct"),
    (_doc({"t": "namedtuple", "module": 1, "name": "P", "fields": ["a"], "c": [ARR]}),
     "module and a name"),
    (_doc({"t": "set", "c": [ARR]}), "known 't'"),
    (_doc({"c": [ARR]}), "known 't'"),
    (_doc(["t", "none"]), "known 't'"),
    (_doc({"t": ["list"], "c": [ARR]}), "known 't'"),
    (_doc(_list({"t": "none", "v": None})), r"'none' node has the keys \['t', 'v'\]"),
    (_doc({"t": "array", "name": "x"}), "expected \\['kind', 'name', 't'\\]"),
    (_doc({"t": "list", "c": {"0": ARR}}), "children 'c' must be a list"),
    (_doc({**ARR, "kind": "pickle"}), "unknown array kind 'pickle'"),
    (_doc(_list(ARR)), "tensor 'x' a second time"),
    (_doc({**ARR, "kind": "numpy_scalar"}), "numpy scalar.*shape \\(2,\\)"),
    (_doc({**ARR, "name": ["x"]}), "lacks"),
    (_doc({"t": "list", "c": []}), r"tensors \['x'\] are not part"),
    ('{"version":1,"version":1,"tree":{"t":"array","name":"x","kind":"numpy"}}',
     "'version' appears twice"),
    ('{"version":1,"tree":{"t":"array","name":"x","name":"x","kind":"numpy"}}',
     "'name' appears twice"),
]


@pytest.mark.parametrize("tree_text, match", BAD_TREES)
def test_malformed_tree_descriptions(tmp_path, tree_text, match):
    _with_tree(tmp_path / "bad", tree_text)
    with pytest.raises(io.FileFormatError, match=match) as info:
        io.load(tmp_path / "bad")
    assert "corrupted header" in str(info.value)


def test_well_formed_hand_written_tree_loads(tmp_path):
    # The validator accepts what save writes, written by hand: a check of the checks.
    tree = {"t": "dict", "keys": [["int", 3], ["str", "a"]],
            "c": [{"t": "tuple", "c": [{"t": "bool", "v": False}, {"t": "int", "v": "-7"},
                                       {"t": "float", "v": "-0x1.8p+1"},
                                       {"t": "float", "v": "nan"}]},
                  {"t": "list", "c": [ARR, {"t": "str", "v": "s"}, {"t": "none"}]}]}
    _with_tree(tmp_path / "ok", _doc(tree))
    out = io.load(tmp_path / "ok")
    assert out[3][:3] == (False, -7, -3.0) and out["a"][1:] == ["s", None]
    assert np.isnan(out[3][3])
    assert type(out[3][0]) is bool and isinstance(out["a"][0], np.ndarray)


def test_duplicate_tensor_key_in_header(tmp_path):
    x = '{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
    _write_raw(tmp_path / "bad", f'{{"x":{x},"x":{x}}}'.encode(), b"\0" * 8)
    with pytest.raises(io.FileFormatError, match="corrupted header: the key 'x' appears "
                                                 "twice"):
        io.load(tmp_path / "bad")


# --------------------------------------------------------------------------- sizes

@pytest.mark.parametrize("entry, body, match", [
    ({"dtype": "F32", "shape": [0, 2 ** 70], "data_offsets": [0, 0]}, b"", "beyond what"),
    ({"dtype": "F32", "shape": [0, 2 ** 62, 4], "data_offsets": [0, 0]}, b"", "beyond"),
    ({"dtype": "U8", "shape": [2 ** 31, 2 ** 31, 0, 2 ** 31], "data_offsets": [0, 0]}, b"",
     "beyond"),
    ({"dtype": "U8", "shape": [1] * 65, "data_offsets": [0, 1]}, b"\0", "64 dimensions"),
    ({"dtype": "U8", "shape": [10 ** 4000], "data_offsets": [0, 1]}, b"\0", "beyond"),
    ({"dtype": "U8", "shape": [2 ** 62, 2], "data_offsets": [0, 2 ** 63]}, b"\0", "beyond"),
    ({"dtype": "F32", "shape": [2 ** 40, 2 ** 20], "data_offsets": [0, 2 ** 62]}, b"\0",
     "truncated"),
    ({"dtype": "F32", "shape": [2 ** 58], "data_offsets": [2 ** 60, 2 ** 61]}, b"\0",
     "offsets out of range"),
    (b'{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1' + b"0" * 5000 + b']}}', b"\0",
     "not valid JSON"),
])
def test_shapes_and_offsets_beyond_numpy_or_the_file(tmp_path, entry, body, match):
    _write_raw(tmp_path / "bad", entry if isinstance(entry, bytes) else {"x": entry}, body)
    with pytest.raises(io.FileFormatError, match=match):
        io.load(tmp_path / "bad")


def test_header_length_beyond_the_file(tmp_path):
    (tmp_path / "bad").write_bytes(struct.pack("<Q", 2 ** 64 - 1) + b"{}")
    with pytest.raises(io.FileFormatError, match="truncated"):
        io.load(tmp_path / "bad")


# --------------------------------------------------------------------------- namedtuples

class _NoImports:
    """A meta path finder that records every import attempted while it is installed."""

    def __init__(self):
        self.attempts = []

    def find_spec(self, name, path=None, target=None):
        self.attempts.append(name)
        return None

    def __enter__(self):
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc):
        sys.meta_path.remove(self)


def _namedtuple_file(path, module, name, fields=("a", "b")):
    node = {"t": "namedtuple", "module": module, "name": name, "fields": list(fields),
            "c": [ARR] + [{"t": "none"}] * (len(fields) - 1)}
    _with_tree(path, _doc(node))


def test_namedtuple_of_a_module_never_imported_imports_nothing(tmp_path):
    module = "fnad_tests_never_imported.sub"
    _namedtuple_file(tmp_path / "f", module, "Outer.Thing")
    with _NoImports() as finder:
        out = io.load(tmp_path / "f")
    assert finder.attempts == []
    assert module not in sys.modules and "fnad_tests_never_imported" not in sys.modules
    assert type(out).__name__ == "Thing" and out._fields == ("a", "b")
    assert out.b is None and isinstance(out.a, np.ndarray)


def test_namedtuple_does_not_trigger_a_lazy_module_getattr(tmp_path, monkeypatch):
    # scipy's lazy submodules (scipy.stats, 543 modules) load through a module
    # __getattr__; loading must not call it.
    calls = []
    lazy = types.ModuleType("fnad_tests_lazy")
    lazy.__getattr__ = lambda name: calls.append(name) or pytest.fail("imported")
    monkeypatch.setitem(sys.modules, "fnad_tests_lazy", lazy)
    _namedtuple_file(tmp_path / "f", "fnad_tests_lazy", "stats.Result")
    with _NoImports() as finder:
        out = io.load(tmp_path / "f")
    assert calls == [] and finder.attempts == []
    assert type(out).__name__ == "Result" and type(out).__module__ != "fnad_tests_lazy"


_CONSTRUCTED = []


class Recorded(tuple):
    """An imported tuple class with namedtuple fields whose constructor has an effect."""
    _fields = ("a", "b")

    def __new__(cls, *args):
        _CONSTRUCTED.append(args)
        return tuple.__new__(cls, args)


Plain = collections.namedtuple("Plain", ["a", "b"])


def test_imported_namedtuple_class_is_reused_without_running_its_code(tmp_path):
    _namedtuple_file(tmp_path / "f", __name__, "Recorded")
    out = io.load(tmp_path / "f")
    assert type(out) is Recorded and _CONSTRUCTED == []
    _namedtuple_file(tmp_path / "g", __name__, "Plain")
    assert type(io.load(tmp_path / "g")) is Plain
    _namedtuple_file(tmp_path / "h", __name__, "Plain", fields=("a", "c"))
    assert type(io.load(tmp_path / "h")) is not Plain          # other fields: a new class
    _namedtuple_file(tmp_path / "i", __name__, "_NoImports")     # not a tuple class
    assert type(io.load(tmp_path / "i")).__name__ == "_NoImports"


@pytest.mark.parametrize("stored, made", [
    ("f.<locals>.P", "P"), ("A<x>", "A_x_"), ("class", "_class"), ("1st", "_1st"),
    ("", "_")])
def test_namedtuple_type_names_are_made_valid(tmp_path, stored, made):
    _namedtuple_file(tmp_path / "f", "fnad_tests_absent", stored)
    assert type(io.load(tmp_path / "f")).__name__ == made


def test_repeated_namedtuple_nodes_share_one_class(tmp_path):
    P = collections.namedtuple("P", ["a"])
    tree = [P(np.ones(1)), P(np.zeros(1))]
    for p in tree:
        p.__class__.__module__ = "fnad_tests_absent"
    io.save(tmp_path / "f", tree)
    out = io.load(tmp_path / "f")
    assert type(out[0]) is type(out[1]) and type(out[0]) is not P
