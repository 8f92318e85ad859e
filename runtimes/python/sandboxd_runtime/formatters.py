"""Extra IPython formatters that fill the Result's ``json`` and ``data`` fields.

``install(shell)`` registers, on the shell's DisplayFormatter:

* ``application/json`` for plain ``dict`` and ``list`` values that are strict
  JSON (see jsonvalue.strict); anything else (sets, dates, numpy values, NaN)
  simply gets no json, so the run still succeeds with ``text``.
* a private MIME type (results.DATA_MIME -> Result ``data``) for pandas
  DataFrames, in E2B's shape: ``{"column": [values...]}``
  (``DataFrame.to_dict(orient="list")``, NaN -> null, timestamps -> ISO 8601).
  Frames above ``DATA_MAX_CELLS`` cells get no ``data`` (their html/text are
  already truncated by pandas; the full data could exceed the message cap).
* PNG for matplotlib figures (see figures.png).

Formatters never raise: a value they cannot render gets no such field.

``FastDisplayFormatter`` is IPython's DisplayFormatter with a shortcut: a
value of exactly ``int``, ``float``, ``bool`` or ``str`` for which no
formatter other than text/plain has a printer gets only text/plain, computed
by the (possibly user-configured) plain-text formatter. Same output, about a
tenth of the cost (each IPython formatter call binds its arguments through
``inspect``); this dominates the cost of a cell like ``1+1``. When that
formatter's printer for the value is still IPython's default (``repr``, or
``float_format`` for a float) the text is computed directly, without the
pretty printer, with the same result.
"""

import json

from IPython.core.formatters import BaseFormatter, DisplayFormatter
from IPython.lib.pretty import _repr_pprint
from traitlets import ObjectName, Unicode

from . import figures, jsonvalue, results

DATA_MAX_CELLS = 1_000_000


class _DataFormatter(BaseFormatter):
    """Formatter for ``results.DATA_MIME``; values are JSON-ready objects."""

    format_type = Unicode(results.DATA_MIME)
    print_method = ObjectName("_repr_sandboxd_data_")
    _return_type = (dict, list)


_SCALARS = (int, float, bool, str)


def _plain_scalar(plain, obj, kind):
    """What ``plain(obj)`` returns for a builtin scalar, computed without the
    pretty printer when its printer for ``obj`` is IPython's default (repr,
    or ``float_format`` for floats); None when it is not, or on any error
    (the caller then calls ``plain`` itself, which reports it)."""
    try:
        if not plain.pprint:
            return repr(obj)
        printer = plain.singleton_printers.get(id(obj))
        if printer is None:
            printer = plain.type_printers.get(kind)
            if kind is float and printer is _FLOAT_PRINTERS.get(plain):
                return plain.float_format % obj
        if printer is _repr_pprint:
            return repr(obj)  # a scalar's repr has no line break to split on
    except Exception:
        pass
    return None


_FLOAT_PRINTERS = {}  # PlainTextFormatter -> its default float printer


class FastDisplayFormatter(DisplayFormatter):
    """DisplayFormatter with the builtin-scalar shortcut described above."""

    def format(self, obj, include=None, exclude=None):
        kind = type(obj)
        if kind in _SCALARS and not include and not exclude and not any(
                kind in f.type_printers for mime, f in self.formatters.items()
                if mime != "text/plain"):
            plain = self.formatters["text/plain"]
            if plain.enabled:
                text = _plain_scalar(plain, obj, kind)
                return {"text/plain": plain(obj) if text is None else text}, {}
        return super().format(obj, include=include, exclude=exclude)


def _plain_json(obj):
    return jsonvalue.strict(obj)


def _dataframe_data(df):
    if df.size > DATA_MAX_CELLS:
        return None
    data = {}
    for i, name in enumerate(df.columns):
        column = df.iloc[:, i]
        try:
            values = json.loads(column.to_json(orient="values", date_format="iso",
                                               default_handler=str))
        except (ValueError, OverflowError, TypeError):
            values = jsonvalue.loose(column.tolist())
        data[str(name)] = values
    return data


def install(shell):
    """Register the formatters above on ``shell.display_formatter``."""
    formatters = shell.display_formatter.formatters
    plain = formatters["text/plain"]
    _FLOAT_PRINTERS[plain] = plain.type_printers.get(float)
    json_formatter = formatters["application/json"]
    json_formatter.for_type(dict, _plain_json)
    json_formatter.for_type(list, _plain_json)

    data_formatter = _DataFormatter(parent=shell.display_formatter)
    data_formatter.for_type_by_name("pandas.core.frame", "DataFrame", _dataframe_data)
    formatters[results.DATA_MIME] = data_formatter

    formatters["image/png"].for_type_by_name(
        "matplotlib.figure", "Figure", figures.png)
