"""Where a context imports installed packages from: ``activate()`` and ``refresh()``.

A context runs in the zygote's isolated interpreter (no user site, PYTHONPATH ignored), so
``activate()``, called once when a context starts, puts on ``sys.path`` what a
``python3`` started in the same sandbox would have:

* the entries of ``PYTHONPATH`` (the operator's read-only site dirs, /opt/python-site/N,
  see docs/packages.md), before the standard library, as Python puts them;
* the sandbox's own user site, ``$PYTHONUSERBASE/lib/pythonX.Y/site-packages`` (pip
  installs there), before the system's dist-packages, and its ``.pth`` files.

Both are put there even when the directory does not exist yet, each with a ``FileFinder``
of its own in ``sys.path_importer_cache``: the standard path hook refuses a missing
directory and that refusal is cached, so a package installed later would stay invisible.
A ``FileFinder`` notices a changed directory by its mtime, so an install by another
context, a command or a process is importable at the next import; ``refresh()`` (after
``%pip`` and ``!cmd`` in this context) also drops every import cache and reads new
``.pth`` files, for installs within the mtime's granularity.
"""

import importlib
import importlib.machinery as machinery
import os
import site
import sys

_LOADERS = (
    (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
    (machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES),
    (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES),
)
_state = {"user_site": None, "pth": set()}


def user_site(environ=None):
    """The user site directory for ``environ`` (os.environ by default)."""
    env = os.environ if environ is None else environ
    base = env.get("PYTHONUSERBASE") or os.path.join(env.get("HOME") or "/workspace", ".local")
    return os.path.join(base, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")


def _index(pred, default):
    for i, entry in enumerate(sys.path):
        if pred(entry):
            return i
    return default


def _watch(path):
    """Put a FileFinder for ``path`` in the importer cache, whether it exists or not."""
    if not isinstance(sys.path_importer_cache.get(path), machinery.FileFinder):
        sys.path_importer_cache[path] = machinery.FileFinder(path, *_LOADERS)


def _read_pth(path):
    """Process the .pth files of ``path`` not processed yet (as site does)."""
    try:
        names = sorted(n for n in os.listdir(path) if n.endswith(".pth"))
    except OSError:
        return
    known = set(sys.path)
    for name in names:
        if (path, name) not in _state["pth"]:
            _state["pth"].add((path, name))
            site.addpackage(path, name, known)


def activate(environ=None):
    """Put PYTHONPATH's entries and the user site on sys.path (once per context)."""
    env = os.environ if environ is None else environ
    stdlib = _index(lambda e: e.startswith(sys.base_prefix + "/lib/"), len(sys.path))
    extra = [p for p in (env.get("PYTHONPATH") or "").split(os.pathsep)
             if p and p not in sys.path]
    sys.path[stdlib:stdlib] = extra
    for p in extra:
        _watch(p)
    user = user_site(env)
    if user not in sys.path:
        at = _index(lambda e: e.endswith(("dist-packages", "site-packages")), len(sys.path))
        sys.path.insert(at, user)
    _state["user_site"] = user
    _watch(user)
    _read_pth(user)


def refresh():
    """After an install in this context: every import cache dropped, new .pth files read."""
    importlib.invalidate_caches()
    user = _state["user_site"]
    if user is not None:
        _watch(user)
        _read_pth(user)
