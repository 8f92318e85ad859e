"""scripts/check_layers.py — fails when a daemon source includes a header of a layer above it.

Reads scripts/layers (the layer rules and which layer each file is in), then every #include "…"
of every file under src/. A file missing from the table is an error too: a new file says where
it belongs. Prints file:line for each violation; exit status 1 when there is one.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_table():
    rules, files = {}, {}
    with open(os.path.join(ROOT, "scripts", "layers")) as f:
        for line in f:
            if line.startswith("# ") and not line.startswith("# file") and "  " in line:
                parts = line[2:].split()
                if parts and parts[0] in ("main", "api", "transport", "engine", "isolation",
                                          "base"):
                    allowed = set()
                    for w in parts[1:]:
                        if w in ("*", "api", "transport", "engine", "isolation", "base"):
                            allowed.add(w)
                        else:
                            break
                    rules[parts[0]] = allowed
                continue
            line = line.split("#", 1)[0].strip()
            if line:
                name, layer = line.split()
                files[name] = layer
    return rules, files


def main():
    rules, files = read_table()
    bad = 0
    for dirpath, _, names in os.walk(os.path.join(ROOT, "src")):
        for n in sorted(names):
            if not n.endswith((".c", ".h")):
                continue
            path = os.path.relpath(os.path.join(dirpath, n), ROOT)
            if path not in files:
                print("%s: not in scripts/layers (add a row: which layer is it?)" % path)
                bad += 1
                continue
            layer = files[path]
            allowed = rules[layer]
            with open(os.path.join(ROOT, path)) as f:
                for i, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    inc = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
                    if inc not in files:
                        continue          # a header outside src/ (none today)
                    other = files[inc]
                    if "*" not in allowed and other not in allowed:
                        print("%s:%d: %s file includes %s (%s layer)" % (path, i, layer, inc,
                                                                        other))
                        bad += 1
    for path in files:
        if not os.path.exists(os.path.join(ROOT, path)):
            print("scripts/layers: %s does not exist" % path)
            bad += 1
    if bad:
        print("layers: %d violation(s); the rules are atop scripts/layers" % bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
