"""The Python packages a context can import, for the daemon's /v1/health (pysite.c).

Run once at the daemon's start as ``python3 -I inventory.py [SITE_DIR…]``, on the host,
never in a sandbox: prints one JSON object,
``{"system": {name: version…}, "dirs": [{name: version…} per SITE_DIR]}``, where
"system" covers the interpreter's own path (the same site dirs as the zygote's: isolated
mode with site imported) and each entry of "dirs" the distributions found in that
directory. It only reads metadata files (importlib.metadata): no package is imported and
no .pth file of a SITE_DIR is run. Within one group the first distribution of a name on
the path wins, as an import would.
"""

import json
import sys
from importlib import metadata


def _headers(text):
    """Name and Version from a metadata file's header block (the email parser that
    ``dist.metadata`` uses costs ~3 ms a distribution)."""
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        if key == "Name" and name is None:
            name = value.strip()
        elif key == "Version" and version is None:
            version = value.strip()
    return name, version


def _collect(path):
    found = {}
    for dist in metadata.distributions(path=path):
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("")
        name, version = _headers(text or "")
        if name and name not in found:
            found[name] = version or ""
    return found


def main(argv):
    system = _collect([p for p in sys.path if p])
    dirs = [_collect([d]) for d in argv]
    json.dump({"system": system, "dirs": dirs}, sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
