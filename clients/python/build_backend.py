"""A PEP 517 build backend for this SDK, standard library only.

`pip install ./clients/python` works offline with it: the package declares no build
requirements (`requires = []` in pyproject.toml), so pip, with or without build isolation,
fetches nothing and asks this file for the wheel. It writes a pure-Python wheel (the
`sandboxd/` package and its `.dist-info`: METADATA from pyproject.toml's [project] table and
README.md, WHEEL, RECORD with sha256 hashes), an sdist, and an editable wheel (a `.pth`
file pointing at this folder) for `pip install -e`. It writes only into the directory pip
gives it, never into the source tree.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "sandboxd"
SDIST_FILES = ("pyproject.toml", "build_backend.py", "README.md")


def _project():
    """name, version, description, requires-python: `key = "value"` lines of [project]."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', table, re.M))


def _metadata():
    p = _project()
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    head = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
            "Summary: " + p.get("description", ""), "License: MIT",
            "Requires-Python: " + p.get("requires-python", ">=3"),
            "Description-Content-Type: text/markdown"]
    return p, "\n".join(head) + "\n\n" + readme


def _sources():
    for name in sorted(os.listdir(os.path.join(HERE, PACKAGE))):
        if name.endswith(".py"):
            yield PACKAGE + "/" + name, os.path.join(HERE, PACKAGE, name)


def _wheel(wheel_directory, files):
    """files: [(archive name, bytes)] of the package; returns the wheel's file name."""
    p, metadata = _metadata()
    dist = "%s-%s" % (p["name"], p["version"])
    info = dist + ".dist-info/"
    files = list(files) + [
        (info + "METADATA", metadata.encode("utf-8")),
        (info + "WHEEL", b"Wheel-Version: 1.0\nGenerator: sandboxd build_backend\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "top_level.txt", (PACKAGE + "\n").encode())]
    record = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))
    record.append(info + "RECORD,,")
    files.append((info + "RECORD", ("\n".join(record) + "\n").encode()))
    filename = dist + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            zf.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data)
    return filename


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(n, _read(p)) for n, p in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(PACKAGE + "-editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p, metadata = _metadata()
    dist = "%s-%s" % (p["name"], p["version"])
    with tarfile.open(os.path.join(sdist_directory, dist + ".tar.gz"), "w:gz") as tf:
        for name in SDIST_FILES:
            tf.add(os.path.join(HERE, name), dist + "/" + name)
        for name, path in _sources():
            tf.add(path, dist + "/" + name)
        data = metadata.encode("utf-8")
        ti = tarfile.TarInfo(dist + "/PKG-INFO")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return dist + ".tar.gz"
