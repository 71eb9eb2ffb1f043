"""python -m fnad.docs [--strict] [--doctest] [--clean] [--out DIR]: build the site."""
import argparse

from .build import build


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fnad.docs", description=__doc__)
    parser.add_argument("--out", help="HTML folder (default docs/_build/html)")
    parser.add_argument("--strict", action="store_true", help="warnings are errors (CI)")
    parser.add_argument("--doctest", action="store_true",
                        help="also run every >>> example in the docstrings and pages")
    parser.add_argument("--clean", action="store_true", help="rebuild every page")
    args = parser.parse_args(argv)
    out = build(args.out, strict=args.strict, doctest=args.doctest, clean=args.clean)
    print(f"built {out}/index.html")


if __name__ == "__main__":
    main()
