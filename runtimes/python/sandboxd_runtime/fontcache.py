"""Build matplotlib's font cache once, at build time.

``python3 -m sandboxd_runtime.fontcache DIR`` (or ``build(DIR)``) writes
matplotlib's font list (``fontlist-v*.json``) into DIR. Point ``MPLCONFIGDIR``
at DIR before ``preload()``: matplotlib then loads the list instead of scanning
every font on the system. DIR may be read-only afterwards (see preload).
Must run in a process that has not imported matplotlib yet.
"""

import os
import sys


def build(directory):
    """Create DIR's font list and return its path."""
    if "matplotlib" in sys.modules:
        raise RuntimeError("fontcache.build must run before matplotlib is imported")
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    os.environ["MPLCONFIGDIR"] = directory
    from matplotlib import font_manager
    path = os.path.join(directory, "fontlist-v%s.json" % font_manager.FontManager.__version__)
    if not os.path.exists(path):
        font_manager.json_dump(font_manager.fontManager, path)
    return path


def main(argv):
    """CLI: ``fontcache DIR``; prints nothing, exits 2 on misuse."""
    if len(argv) != 2:
        sys.stderr.write("usage: python3 -m sandboxd_runtime.fontcache DIR\n")
        return 2
    build(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
