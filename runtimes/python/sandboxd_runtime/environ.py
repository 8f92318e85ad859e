"""Per-run environment variables.

``applied(env)`` sets ``env`` in ``os.environ`` for the body and then restores
every touched key to its previous value, deleting keys that did not exist.
Non-string keys or values are converted with ``str``; keys that the OS cannot
hold (empty, containing ``=`` or NUL) are skipped.
"""

import os
from contextlib import contextmanager

_MISSING = object()


@contextmanager
def applied(env):
    """Apply ``env`` (a dict or None) to os.environ for the duration of the body."""
    saved = {}
    for key, value in (env or {}).items():
        key, value = str(key), str(value)
        if not key or "=" in key or "\0" in key or "\0" in value:
            continue
        saved.setdefault(key, os.environ.get(key, _MISSING))
        os.environ[key] = value
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is _MISSING:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
