"""python -m fnad.cache info|clear: describe or empty the kernel disk cache."""
import argparse
import sys

from ..kernels import disk_cache


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m fnad.cache",
        description="Describe or empty fnad's kernel disk cache ($FNAD_CACHE_DIR/kernels, "
                    "else ~/.cache/fnad/kernels). The size limit is FNAD_CACHE_MAX_SIZE "
                    "bytes (default 1 GiB).")
    parser.add_argument("command", choices=("info", "clear"))
    args = parser.parse_args(argv)
    state = disk_cache.info()
    if args.command == "clear":
        if state["problem"]:
            print(f"not clearing: {state['problem']}", file=sys.stderr)
            return 1
        print(f"removed {disk_cache.clear()} entries from {state['directory']}")
        return 0
    limit = state["limit"]
    print(f"directory: {state['directory']}")
    status = "unusable: " + state["problem"] if state["problem"] else \
        "ok" if state["exists"] else "ok (not created yet)"
    print(f"status:    {status}")
    print(f"entries:   {state['entries']}")
    print(f"size:      {_size(state['bytes'])} ({state['bytes']} bytes)")
    print(f"limit:     {'none' if limit < 0 else 'disk cache off' if limit == 0 else _size(limit)}"
          f"{'' if limit <= 0 else f' ({limit} bytes)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
