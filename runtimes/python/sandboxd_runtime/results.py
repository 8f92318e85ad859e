"""IPython MIME bundles to the API's Result object.

``to_result(bundle, is_main)`` maps each MIME type of a display bundle to its
Result field (``text/plain`` -> ``text``, ``image/png`` -> ``png`` ...), base64
encodes binary payloads given as bytes (strings are taken to be base64 already,
the Jupyter convention), and puts MIME types without a field into ``extra``
(``{"mime/type": value}``). Every value in the returned dict is JSON the daemon
accepts. ``isMainResult`` is always present. Returns None for an empty bundle.
"""

import base64

from . import jsonvalue

# MIME types our own formatters produce for the Result's ``data`` field.
DATA_MIME = "application/vnd.sandboxd.data+json"

_TEXT_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "text/latex": "latex",
    "application/javascript": "javascript",
}
_BINARY_FIELDS = {"image/png": "png", "image/jpeg": "jpeg", "application/pdf": "pdf"}
_JSON_FIELDS = {"application/json": "json", DATA_MIME: "data"}


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def _base64(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    return _text(value)


def to_result(bundle, is_main):
    """Return the Result dict for ``bundle`` (mime -> value), or None if empty."""
    result = {}
    extra = {}
    for mime, value in bundle.items():
        if value is None:
            continue
        if mime in _TEXT_FIELDS:
            result[_TEXT_FIELDS[mime]] = _text(value)
        elif mime in _BINARY_FIELDS:
            result[_BINARY_FIELDS[mime]] = _base64(value)
        elif mime in _JSON_FIELDS:
            result[_JSON_FIELDS[mime]] = jsonvalue.loose(value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            extra[mime] = _base64(value)
        else:
            extra[mime] = jsonvalue.loose(value)
    if not result and not extra:
        return None
    if extra:
        result["extra"] = extra
    result["isMainResult"] = bool(is_main)
    return result
