"""The on-disk kernel cache, shared by every backend.

Generated kernel modules are written to a cache directory and compiled with Numba's
own disk cache, so a later process loads machine code instead of compiling. Files
there are treated as hostile input:

* The directory ($FNAD_CACHE_DIR/kernels, else $XDG_CACHE_HOME/fnad/kernels, else
  ~/.cache/fnad/kernels) is created with mode 0700. One that belongs to another user,
  is writable by group or others, is not a directory or cannot be written is not used:
  one warning through `logging`, then kernels are compiled in memory (their modules
  are never written, Numba's cache is off). pip and ccache refuse such directories too.
* Each module `<name>.py` has a record `<name>.sum`: the SHA-256 of the source and of
  the Numba index and data files of its functions, taken when Numba saved them. The
  record is written (with fsync, then renamed into place) before the source, so a
  source without a record was not written by fnad.
* A module is never executed from the file: the source fnad generated is compiled in
  memory and the file only has to hold the same bytes, which Numba's cache needs
  (it keys its index on the file's contents). A file with other bytes (truncated,
  empty, garbled, or planted at the predictable name) is replaced; Numba files whose
  checksum is not the recorded one are deleted before Numba unpickles them, and
  compiled again. Each repair logs one warning (Numba files merely unrecorded, left
  by a process killed between Numba's save and fnad's record, go quietly). The
  checksums catch damage; the directory checks keep other users from writing there.
* The directory has a size limit (config.compilation_cache_max_size, 1 GiB by
  default; FNAD_CACHE_MAX_SIZE sets it for a process). After fnad has written past its
  estimate of the limit, the least recently used modules (a module's record is touched
  whenever a process loads it) are deleted until the cache is at 3/4 of the limit.
"""
import hashlib
import json
import linecache
import logging
import os
import sys
import tempfile
import threading
import time
import types

from .. import config

log = logging.getLogger("fnad.cache")

_RECORD_FORMAT = 1
_RECORD_MAX_BYTES = 1 << 16
_NUMBA_SUFFIXES = (".nbi", ".nbc")
_lock = threading.RLock()       # loading a loop module loads its kernels' modules
# For records and the size estimate, taken after Numba's compiler lock by the hook on
# its saves: whoever holds it only reads and writes files, so the two cannot deadlock.
_files_lock = threading.RLock()
_checked = {}                   # directory -> None if usable, else why not
_usage = {"directory": None, "estimate": None, "writes": 0}
# Numba's tmp files and ours are left behind only by killed processes.
_STALE_TMP_SECONDS = 3600
# Rescan the directory every so many writes, to see what other processes added.
_RESCAN_EVERY = 256


def location():
    """The cache directory fnad would use, whether or not it is usable."""
    root = os.environ.get("FNAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "fnad")
    return os.path.join(root, "kernels")


def cache_dir():
    """The cache directory, created if needed; None when there is none to use (the
    size limit is 0, or the directory is unsafe or unwritable: then warned once)."""
    if config.compilation_cache_max_size == 0:
        return None
    path = location()
    if path not in _checked:
        with _lock:
            if path not in _checked:
                _checked[path] = problem = _check_directory(path)
                if problem:
                    log.warning("fnad kernel cache: %s; compiling kernels in memory "
                                "without a disk cache (set FNAD_CACHE_DIR to a private "
                                "directory)", problem)
    return None if _checked[path] else path


def describe_problem(path=None):
    """Why the cache directory `path` (default: the current one) cannot be used, or
    None. Checks afresh, creating nothing that is not there."""
    path = path or location()
    for p in (os.path.dirname(path), path):
        if os.path.lexists(p):
            problem = _unsafe(p)
            if problem:
                return problem
    return None


def _check_directory(path):
    root = os.path.dirname(path)
    try:
        os.makedirs(os.path.dirname(root), exist_ok=True)
        for p in (root, path):
            if os.path.lexists(p) and not os.path.isdir(p):
                return f"the cache directory {p} is not a directory"
            if not os.path.isdir(p):
                os.mkdir(p, 0o700)
    except OSError as err:
        return f"cannot create the cache directory {path} ({err.strerror or err})"
    for p in (root, path):
        problem = _unsafe(p)
        if problem:
            return problem
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return f"the cache directory {path} is not writable ({err.strerror or err})"
    return None


def _unsafe(path):
    """Why `path` must not hold code fnad will run, or None."""
    try:
        st = os.stat(path)
    except OSError as err:
        return f"cannot read the cache directory {path} ({err.strerror or err})"
    if not os.path.isdir(path):
        return f"the cache directory {path} is not a directory"
    if os.name != "posix":      # no owners or group/other bits to go by
        return None
    uid = os.geteuid()
    if st.st_uid != uid:
        return (f"the cache directory {path} belongs to user id {st.st_uid}, not to this "
                f"user ({uid})")
    if st.st_mode & 0o022:
        return (f"the cache directory {path} is writable by group or others "
                f"(mode {st.st_mode & 0o777:o})")
    return None


# --------------------------------------------------------------------------- loading

_helper_digests = {}


def helpers_digest(modules):
    """A digest of the source of the modules generated code calls into, computed once
    per process. Numba's disk cache keys a module's machine code on that module's own
    file, while the helpers it calls are compiled into it: generated headers carry this
    digest, so that a helper changed by a new fnad version changes the header text,
    hence the module name, and stale machine code is never loaded."""
    key = tuple(m.__name__ for m in modules)
    digest = _helper_digests.get(key)
    if digest is None:
        h = hashlib.sha1()
        for m in modules:
            h.update(_module_source(m))
        digest = _helper_digests[key] = h.hexdigest()[:20]
    return digest


def _module_source(module):
    try:
        with open(module.__file__, "rb") as f:
            return f.read()
    except (OSError, TypeError):
        # Unreadable source: a digest new in each process recompiles rather than risk
        # another version's machine code.
        return os.urandom(16)


def import_generated(text, prefix):
    """The module of generated source `text`, named `<prefix>_<hash of text>`: any
    change to the source or its options makes a new module, never a stale one. The
    module stays in sys.modules (Numba resolves a cached kernel's globals through its
    module's name), and its source is written to the cache directory, so Numba's disk
    cache serves later processes."""
    name = f"{prefix}_{hashlib.sha1(text.encode()).hexdigest()[:20]}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            directory = cache_dir()
            module = _load(name, text, directory) if directory else _in_memory(name, text)
            sys.modules[name] = module
    return module


def _in_memory(name, text):
    # Generated sources spell Numba's disk cache as cache=True; without a directory
    # there is nowhere for it to go.
    text = text.replace("cache=True", "cache=False")
    filename = f"<fnad generated {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    return _execute(name, text, filename)


def _execute(name, text, filename):
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(text, filename, "exec"), module.__dict__)
    return module


def _load(name, text, directory):
    entry = _Entry(directory, name, text.encode())
    try:
        record = entry.verified_source()
        module = _execute(name, text, entry.source_path)
    except OSError as err:
        _give_up(directory, err)
        return _in_memory(name, text)
    except RuntimeError as err:
        # Numba finds no cache locator when the file vanished between our write and
        # its look (another process evicting it): this module goes without the cache.
        log.debug("fnad kernel cache: %s compiled in memory (%s)", name, err)
        return _in_memory(name, text)
    entry.caches = list(_numba_caches(module))
    try:
        entry.verify_numba(record)
    except OSError as err:
        _give_up(directory, err)
    for cache in entry.caches:
        _record_after_saves(cache, entry)
    return module


def _give_up(directory, err):
    with _files_lock:
        if not _checked.get(directory):
            _checked[directory] = str(err)
            log.warning("fnad kernel cache: writing to %s failed (%s); compiling kernels "
                        "in memory from now on", directory, getattr(err, "strerror", None) or err)


def _numba_caches(module):
    """The Numba disk caches of the module's compiled functions."""
    for value in list(vars(module).values()):
        cache = getattr(value, "_cache", None)
        if hasattr(cache, "cache_path") and hasattr(cache, "save_overload"):
            yield cache


def _record_after_saves(cache, entry):
    save = cache.save_overload

    def save_and_record(sig, data):
        # A disk that fills up, or turns read-only, under a running process costs the
        # disk cache, not the kernel Numba has just compiled.
        try:
            save(sig, data)
            entry.record_numba()
        except OSError as err:
            _give_up(entry.directory, err)
    cache.save_overload = save_and_record


def _numba_files(cache, module_name, also=()):
    """The names of the index and data files Numba keeps for one function `cache`
    serves: <base>.nbi and <base>.<n>.nbc, numbered from 1, where Numba's base name
    starts with the module's name and a dot; plus the names in `also` of that base."""
    path = cache.cache_path
    base = getattr(getattr(cache, "_impl", None), "filename_base", None)
    if not isinstance(base, str) or not base.startswith(module_name + "."):
        # Not the layout this module knows: every file of the module's name.
        prefix = module_name + "."
        try:
            listing = os.listdir(path)
        except OSError:
            listing = []
        return {f for f in listing if f.startswith(prefix) and f.endswith(_NUMBA_SUFFIXES)}
    names = {f for f in also if f.startswith(base + ".")}
    if os.path.exists(os.path.join(path, base + ".nbi")):
        names.add(base + ".nbi")
    n = 1
    while os.path.exists(os.path.join(path, f"{base}.{n}.nbc")):
        names.add(f"{base}.{n}.nbc")
        n += 1
    return {f for f in names if os.path.exists(os.path.join(path, f))}


class _Entry:
    """One module in the cache: its source file, its record, its Numba files."""

    def __init__(self, directory, name, source):
        self.directory = directory
        self.name = name
        self.source = source
        self.digest = hashlib.sha256(source).hexdigest()
        self.source_path = os.path.join(directory, name + ".py")
        self.record_path = os.path.join(directory, name + ".sum")
        self.caches = []

    def verified_source(self):
        """Make the source file hold exactly this module's source and have a record;
        returns the record (its Numba checksums are trusted only if it was valid)."""
        record, record_problem = _read_record(self.record_path)
        on_disk = _read_at_most(self.source_path, len(self.source) + 1)
        problem = None
        if on_disk is not None and on_disk != self.source:
            if record is None:
                problem = "has no checksum record (not written by fnad): replaced, not run"
            else:
                problem = "does not match its checksum (truncated or corrupt): rebuilt"
        elif record_problem:
            problem = f"has a corrupt checksum record ({record_problem}): rebuilt"
        elif record is not None and record["source"] != self.digest:
            problem = "has a checksum record for other contents: rebuilt"
        if problem:
            log.warning("fnad kernel cache: %s %s", self.source_path, problem)
        if problem or record is None or on_disk is None:
            # A valid record of this source still vouches for Numba's files (they are
            # checked on their own) when only the source file was damaged.
            if record is None or record["source"] != self.digest:
                record = {"format": _RECORD_FORMAT, "source": self.digest,
                          "numba_dir": None, "numba": {}}
            written = self._write_record(record)    # before the source: see the module doc
            if on_disk != self.source:
                _write_atomic(self.source_path, self.source)
                written += len(self.source)
            _note_written(self.directory, written)
        else:
            _touch(self.record_path)
        return record

    def verify_numba(self, record):
        """Delete the Numba files of this module that are not the ones recorded, before
        Numba reads (unpickles) any of them."""
        corrupt, unrecorded = [], []
        for cache in self.caches:
            path = cache.cache_path
            recorded = record["numba"] if record["numba_dir"] == self._where(path) else {}
            files = _numba_files(cache, self.name, recorded)
            bad = [f for f in files
                   if recorded.get(f) != _file_digest(os.path.join(path, f))]
            if bad:
                for f in files:     # an index without its data is no use, and the reverse
                    _remove(os.path.join(path, f))
                corrupt += [os.path.join(path, f) for f in bad if f in recorded]
                unrecorded += [f for f in bad if f not in recorded]
        if corrupt:
            log.warning("fnad kernel cache: Numba's cached code %s does not match its "
                        "checksum (truncated or corrupt): deleted, compiling again",
                        ", ".join(sorted(corrupt)))
        if unrecorded:  # left by a process killed while saving, or by an older fnad
            log.debug("fnad kernel cache: deleted unrecorded Numba files %s", unrecorded)

    def record_numba(self):
        """Record the checksums of the module's Numba files as they are now."""
        with _files_lock:
            files, paths = {}, set()
            for cache in self.caches:
                paths.add(cache.cache_path)
                for f in _numba_files(cache, self.name):
                    digest = _file_digest(os.path.join(cache.cache_path, f))
                    if digest is not None:
                        files[f] = digest
            if len(paths) != 1:     # functions of one file share one cache directory
                return
            path = paths.pop()
            record = {"format": _RECORD_FORMAT, "source": self.digest,
                      "numba_dir": self._where(path), "numba": files}
            written = self._write_record(record)
            sizes = sum(_size(os.path.join(path, f)) for f in files)
        _note_written(self.directory, written + sizes)

    def _where(self, numba_dir):
        """Numba's directory as recorded: relative to the cache directory when inside it
        (so the cache can be moved or copied whole), else absolute."""
        return _relative_to(numba_dir, self.directory)

    def _write_record(self, record):
        data = json.dumps(record, sort_keys=True).encode()
        _write_atomic(self.record_path, data)
        _touch(self.record_path)
        return len(data)


def _relative_to(path, directory):
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    if os.path.commonpath([path, directory]) == directory:
        return os.path.relpath(path, directory)
    return path


def _read_record(path):
    """(record, None), (None, None) when there is none, or (None, why it is invalid)."""
    data = _read_at_most(path, _RECORD_MAX_BYTES)
    if data is None:
        return None, None
    try:
        record = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError):
        return None, "not JSON"
    valid = isinstance(record, dict) and record.get("format") == _RECORD_FORMAT \
        and isinstance(record.get("source"), str) \
        and isinstance(record.get("numba_dir"), (str, type(None))) \
        and isinstance(record.get("numba"), dict) \
        and all(isinstance(k, str) and isinstance(v, str) for k, v in record["numba"].items())
    return (record, None) if valid else (None, "unexpected contents")


def _read_at_most(path, limit):
    """The file's first `limit` bytes, or None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as err:
        log.debug("fnad kernel cache: cannot read %s (%s)", path, err)
        return None


def _file_digest(path):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _write_atomic(path, data):
    """Write, fsync, then rename into place: readers see all of the file or none."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as err:
        log.debug("fnad kernel cache: cannot remove %s (%s)", path, err)


def _touch(path):
    """Mark the file used now, to the nanosecond: the file system's own clock may
    advance only every few milliseconds, too coarse to order kernels by use."""
    now = time.time_ns()
    try:
        os.utime(path, ns=(now, now))
    except OSError:
        pass


def _size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# --------------------------------------------------------------------------- size limit

def _note_written(directory, nbytes):
    """Count bytes this process wrote; once the estimated size passes the limit, evict.
    The estimate is a scan of the directory, redone every _RESCAN_EVERY writes."""
    limit = config.compilation_cache_max_size
    if limit is None or limit < 0:
        return
    with _files_lock:
        if _usage["directory"] != directory or _usage["writes"] % _RESCAN_EVERY == 0:
            _usage["directory"], _usage["estimate"] = directory, _total(_scan(directory))
        _usage["writes"] += 1
        _usage["estimate"] += nbytes
        if _usage["estimate"] > limit:
            _usage["estimate"] = evict(directory, limit * 3 // 4)


def _scan(directory, clean=True):
    """{module name: [last use, [(path, size)...]]} for the cache's modules, in the
    directory and in Numba's cache beside it; with `clean`, stale temporary files are
    deleted."""
    entries = {}
    now = time.time()
    for folder in (directory, os.path.join(directory, "__pycache__")):
        try:
            listing = list(os.scandir(folder))
        except OSError:
            continue
        for item in listing:
            if not item.name.startswith(("fnad_", ".")) or not item.is_file():
                continue
            try:
                st = item.stat()
            except OSError:
                continue
            if item.name.endswith(".tmp") or ".tmp." in item.name:
                if clean and now - st.st_mtime > _STALE_TMP_SECONDS:
                    _remove(item.path)
                continue
            if item.name.startswith("."):
                continue
            name = item.name.split(".", 1)[0]
            entry = entries.setdefault(name, [0, [], None])
            entry[1].append((item.path, st.st_size))
            used = max(st.st_atime_ns, st.st_mtime_ns)
            entry[0] = max(entry[0], used)
            if folder == directory and item.name.endswith(".sum"):
                entry[2] = used
    # A module's last use is its record's (touched at each load), else its newest file.
    return {name: [used if record is None else record, files]
            for name, (used, files, record) in entries.items()}


def _total(entries):
    return sum(size for _, files in entries.values() for _, size in files)


def evict(directory, target):
    """Delete the least recently used modules until the cache holds at most `target`
    bytes; returns the bytes left."""
    entries = _scan(directory)
    total = _total(entries)
    for name, (_, files) in sorted(entries.items(), key=lambda kv: (kv[1][0], kv[0])):
        if total <= target:
            break
        _delete_entry(directory, name, files)
        total -= sum(size for _, size in files)
    return total


def _delete_entry(directory, name, files):
    # The source goes first and the record last: a process loading the module meanwhile
    # sees a record without a source (and writes the source) rather than the reverse.
    record = os.path.join(directory, name + ".sum")
    outside = []
    rec, _ = _read_record(record)
    if rec and rec["numba_dir"] and os.path.isabs(rec["numba_dir"]):
        # (only names Numba gives this module's files: a record is read as hostile)
        outside = [os.path.join(rec["numba_dir"], f) for f in rec["numba"]
                   if os.path.basename(f) == f and f.startswith(name + ".")
                   and f.endswith(_NUMBA_SUFFIXES)]
    paths = [p for p, _ in files]
    sources = [p for p in paths if p.endswith(".py")]
    others = [p for p in paths if p not in sources and p != record]
    for p in sources + others + outside + [record]:
        _remove(p)


def info():
    """A description of the cache: directory, problem, entries, bytes, limit."""
    path = location()
    entries = _scan(path, clean=False) if os.path.isdir(path) else {}
    return {"directory": path, "exists": os.path.isdir(path),
            "problem": describe_problem(path), "entries": len(entries),
            "bytes": _total(entries), "limit": config.compilation_cache_max_size}


def clear():
    """Delete every module of the cache; returns how many there were."""
    path = location()
    if not os.path.isdir(path) or describe_problem(path):
        return 0
    entries = _scan(path)
    for name, (_, files) in entries.items():
        _delete_entry(path, name, files)
    with _files_lock:
        _usage["directory"] = None
    return len(entries)
