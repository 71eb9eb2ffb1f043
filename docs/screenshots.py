"""Screenshots of the built site with headless Chromium (the home page, the entry of
fnad.grad, a guide), saved as docs/screenshots/*.png for the README and reviewers.

    python -m fnad.docs && python docs/screenshots.py [--browser chromium]

Needs a Chromium or Chrome binary (`chromium`, `chromium-browser`, `google-chrome`);
nothing else. Each shot is checked to be a PNG of the requested size.
"""
import argparse
import pathlib
import shutil
import struct
import subprocess
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
HTML = HERE / "_build" / "html"
SHOTS = [("home.png", "index.html", (1280, 900)),
         ("grad.png", "api/fnad.html#fnad.grad", (1280, 1000)),
         ("guide.png", "guides/transforms.html", (1280, 900))]
# Headless Chromium draws a blank page when a screenshot's URL scrolls to a fragment, so
# an entry is shot from a copy of its page (next to it, so its styles load) in which a
# style rule hides the module's other entries and its summary table.
FOCUS = """<style>dl.py {{ display: none; }} table.autosummary {{ display: none; }}
dl.py:has([id="{0}"]) {{ display: block; }}</style></head>"""


def _browser(name=None):
    for candidate in [name] if name else ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(candidate)
        if path:
            return path
    raise SystemExit("no Chromium found: install chromium or pass --browser")


def _png_size(path):
    header = path.read_bytes()[:24]
    if header[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path} is not a PNG")
    return struct.unpack(">II", header[16:24])


def shoot(browser, page, out, size):
    path, _, anchor = page.partition("#")
    path = HTML / path
    if anchor:
        focused = path.with_name(f"_screenshot_{path.name}")
        focused.write_text(path.read_text().replace("</head>", FOCUS.format(anchor), 1))
        path = focused
    try:
        _run(browser, path.as_uri(), out, size)
    finally:
        if anchor:
            path.unlink()
    if _png_size(out) != size:
        raise SystemExit(f"{out}: expected {size}, got {_png_size(out)}")


def _run(browser, url, out, size):
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--virtual-time-budget=10000",
                        f"--user-data-dir={profile}",
                        f"--window-size={size[0]},{size[1]}", f"--screenshot={out}", url],
                       check=True, capture_output=True, timeout=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", help="the Chromium binary (default: found on PATH)")
    args = parser.parse_args()
    if not (HTML / "index.html").exists():
        raise SystemExit("build the site first: python -m fnad.docs")
    browser = _browser(args.browser)
    for name, page, size in SHOTS:
        shoot(browser, page, HERE / "screenshots" / name, size)
        print(f"docs/screenshots/{name}: {page}")


if __name__ == "__main__":
    main()
