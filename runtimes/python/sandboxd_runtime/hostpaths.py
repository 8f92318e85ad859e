"""Host paths out of the shared interpreter: done once, in the zygote, before the first fork.

The zygote imports this package, IPython's profile and matplotlib's configuration from
directories on the host (the runtimes dir in the checkout, the daemon's state dir, the
build dir). A context must not learn those names (they tell a tenant where the service
lives and who runs it), and none of them exists inside a sandbox, where the runtimes dir
is mounted at ``/opt/sandboxd``.

``rewrite(mapping)`` takes ``{host prefix: sandbox-side prefix}`` and replaces every
string that starts with a host prefix (followed by ``/`` or nothing) by the same string
under the sandbox-side prefix, wherever the interpreter keeps it in a mutable place:

- the values of every dict and the items of every list the collector tracks, of the
  untracked dicts those objects refer to (CPython stops tracking a dict that holds only
  atomic values), and of the attribute dicts of instances that keep their attributes
  inline (see ``_containers``), and the contents of closure cells (matplotlib caches
  its config and cache dirs in one). That covers module ``__file__``, ``__cached__`` and ``__path__``,
  module-level constants, specs and loaders (their ``__dict__``), ``sys.path``,
  traitlets' values (IPython's ``ipython_dir`` and profile directories) and
  matplotlib's style and cache paths. Dict subclasses with validating setters
  (matplotlib's ``rcParams``) are written through ``dict.__setitem__``;
- caches keyed by host paths (``sys.path_importer_cache``, ``linecache.cache``) lose
  those keys: a context fills them again from the sandbox-side paths;
- code objects are immutable from Python: ``rewrite`` returns the ``(code, filename)``
  pairs whose ``co_filename`` must change, and the zygote sets them in C (zygote.c),
  so that quickened bytecode and every reference to the code object stay as they are.

Tuples and frozen sets are not rewritten (none of the runtime's own state keeps a host
path in one; tests/hostile/test_zygote_hostile.py lists what must be clean). Nothing is
imported from a host path after this: the zygote runs no more Python code from its
runtimes dir, and a context imports from the sandbox-side path.
"""

import gc
import linecache
import sys
import types


def _converter(mapping):
    prefixes = sorted(mapping.items(), key=lambda kv: -len(kv[0]))
    hosts = tuple(mapping)

    def convert(s):
        if not s.startswith(hosts):   # the common case, in C
            return None
        for host, inside in prefixes:
            if s.startswith(host) and (len(s) == len(host) or s[len(host)] == "/"):
                return inside + s[len(host):]
        return None
    return convert


def _containers(convert, hosts):
    """Every tracked object, then the dicts holding attributes they refer to: the
    untracked dicts (CPython stops tracking a dict of atomic values) and the attribute
    dicts of instances whose attributes live in the object itself (3.11 keeps them
    there until something asks for ``__dict__``; the traversal then shows the values,
    and asking for ``__dict__`` through ``object.__getattribute__`` makes the dict)."""
    tracked = gc.get_objects()
    extra = {}
    for o in tracked:
        for r in gc.get_referents(o):
            if type(r) is dict and not gc.is_tracked(r):
                extra[id(r)] = r
            elif (type(r) is str and r.startswith(hosts) and
                  type(o) not in (dict, list, types.CellType) and convert(r) is not None):
                try:
                    d = object.__getattribute__(o, "__dict__")
                except (AttributeError, TypeError):
                    continue
                if type(d) is dict:
                    extra[id(d)] = d
    return tracked + list(extra.values())


def _codes(code, seen):
    if id(code) in seen:
        return
    seen[id(code)] = code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _codes(c, seen)


def rewrite(mapping):
    """Rewrite host paths (see the module docstring). Returns the list of
    ``(code, new co_filename)`` pairs for the caller to apply."""
    mapping = {h: i for h, i in mapping.items() if h and i and h != i}
    if not mapping:
        return []
    convert = _converter(mapping)
    for cache in (sys.path_importer_cache, linecache.cache):
        for key in [k for k in cache if isinstance(k, str) and convert(k) is not None]:
            del cache[key]
    codes = {}
    hosts = tuple(mapping)
    for o in _containers(convert, hosts):
        if isinstance(o, dict):
            changes = [(k, v) for k, v in o.items() if type(v) is str and v.startswith(hosts)]
            for k, v in changes:
                new = convert(v)
                if new is not None:
                    dict.__setitem__(o, k, new)
        elif isinstance(o, list):
            changes = [i for i, v in enumerate(o) if type(v) is str and v.startswith(hosts)]
            for i in changes:
                new = convert(o[i])
                if new is not None:
                    list.__setitem__(o, i, new)
        elif type(o) is types.FunctionType and o.__code__.co_filename.startswith(hosts):
            _codes(o.__code__, codes)   # nested code objects share their parent's file
        elif type(o) is types.CellType:
            try:
                v = o.cell_contents
            except ValueError:   # empty cell
                continue
            if type(v) is str and convert(v) is not None:
                o.cell_contents = convert(v)
    out = []
    for code in codes.values():
        new = convert(code.co_filename)
        if new is not None:
            out.append((code, new))
    return out
