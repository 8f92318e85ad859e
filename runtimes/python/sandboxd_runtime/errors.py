"""Exceptions to the API's ExecutionError: ``{name, message, traceback}``.

``describe(etype, value, tb, cells)`` guarantees:

* ``name`` is the exception class name, ``message`` is ``str(value)``;
* ``traceback`` is a list of lines without ANSI codes, in CPython's own format
  (chained exceptions included), with the frames of this runtime and of
  IPython's internals removed;
* cell code appears as ``File "<cell>", line N`` for the running cell and
  ``File "<cell K>", line N`` for code defined by earlier run K, with N the
  line in the cell as the user wrote it (and that raw line shown);
* a SyntaxError/IndentationError in a cell shows the offending line and caret.

``cells`` maps IPython's cell file names to ``(label, raw source lines)``.
"""

import os
import traceback

import IPython

_HIDDEN_DIRS = (
    os.path.dirname(IPython.__file__) + os.sep,
    os.path.dirname(__file__) + os.sep,
)


def _frame(frame, cells):
    """Return ``frame`` relabelled for the user if it belongs to a cell."""
    cell = cells.get(frame.filename)
    if cell is None:
        return frame
    label, lines = cell
    line = frame._original_line  # unstripped: caret columns index into it
    colno, end_colno = frame.colno, frame.end_colno
    if 0 < frame.lineno <= len(lines):
        raw = lines[frame.lineno - 1]
        if raw.strip() != (line or "").strip():  # a transformed magic line
            colno = end_colno = None
        line = raw + "\n"  # like linecache's lines (carets count the newline)
    return traceback.FrameSummary(
        label, frame.lineno, frame.name, lookup_line=False, line=line,
        end_lineno=frame.end_lineno, colno=colno, end_colno=end_colno)


def _clean(te, cells, seen):
    """Filter and relabel the frames of ``te`` and of its chained exceptions."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(
        [_frame(f, cells) for f in te.stack
         if not f.filename.startswith(_HIDDEN_DIRS)])
    if getattr(te, "filename", None) in cells:  # a SyntaxError in a cell
        te.filename = cells[te.filename][0]
    _clean(te.__cause__, cells, seen)
    _clean(te.__context__, cells, seen)


def describe(etype, value, tb, cells):
    """Return the ExecutionError dict for one exception."""
    te = traceback.TracebackException(etype, value, tb, compact=True)
    _clean(te, cells, set())
    if isinstance(value, SyntaxError) and value.filename in cells:
        value.filename = cells[value.filename][0]
    try:
        message = str(value)
    except Exception:
        message = "<exception str() failed>"
    lines = "".join(te.format()).splitlines()
    return {"name": etype.__name__, "message": message, "traceback": lines}
