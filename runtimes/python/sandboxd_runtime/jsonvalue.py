"""Python values to JSON values the daemon accepts.

The daemon's JSON parser (jansson) refuses NaN/Infinity and integers outside
the signed 64-bit range, so every value placed in a message goes through here.

* ``strict(obj)`` -- ``obj`` itself when it is already plain JSON (dicts with
  string keys, lists/tuples, str, finite floats, 64-bit ints, bools, None),
  else ``None``. Used for the ``json`` field of dict/list results: a set, a
  date or a numpy value means "no json", never an error.
* ``loose(obj)`` -- a best-effort JSON rendering of anything: NaN/inf become
  null, numpy scalars/arrays become numbers/lists, dates ISO strings, big ints
  and unknown objects their ``str``. Used for ``data``, ``extra`` and
  ``_repr_json_`` output.
"""

import datetime
import json
import math
import re

_INT64 = (-(1 << 63), (1 << 63) - 1)
_LONG_DIGITS = re.compile(r"\d{19}")  # the only text a too-big int can produce


def strict(obj):
    """Return ``obj`` if it is plain JSON the daemon accepts, else None."""
    try:
        text = json.dumps(obj, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    if _LONG_DIGITS.search(text) and not _ints_fit(obj):
        return None
    return obj


def _ints_fit(obj):
    if isinstance(obj, bool):
        return True
    if isinstance(obj, int):
        return _INT64[0] <= obj <= _INT64[1]
    if isinstance(obj, dict):
        return all(_ints_fit(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_ints_fit(v) for v in obj)
    return True


def loose(obj, _depth=0):
    """Return a JSON-safe rendering of ``obj`` (never raises)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj if _INT64[0] <= obj <= _INT64[1] else str(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if _depth > 100:
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): loose(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [loose(v, _depth + 1) for v in obj]
    if isinstance(obj, (datetime.date, datetime.time)):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    tolist = getattr(obj, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        try:
            return loose(tolist(), _depth + 1)
        except Exception:
            pass
    try:
        return str(obj)
    except Exception:
        return repr(type(obj))
