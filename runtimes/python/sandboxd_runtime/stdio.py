"""Process-level stdout/stderr for a context.

fd 1 and fd 2 are the daemon's pipes. ``install()`` replaces ``sys.stdout`` and
``sys.stderr`` with text streams that push every write through to the fd at
once (so Python output, C-extension output and ``!cmd`` output interleave in
the order they happened) and never raise on unencodable text: a character that
cannot be encoded (a lone surrogate) is written as U+FFFD, the same thing the
daemon does with invalid UTF-8. ``flush()`` flushes whatever ``sys.stdout`` and
``sys.stderr`` currently are (user code may have replaced them); the channel
calls it before sending any message (the protocol's ordering rule).
"""

import codecs
import io
import sys

_ERRORS = "sandboxd-replace"
# The UTF-8 encoder accepts only ASCII str replacements, so give it bytes.
codecs.register_error(_ERRORS, lambda exc: ("\ufffd".encode(), exc.end))


class _WriteThrough(io.TextIOWrapper):
    """A UTF-8 text stream whose every write reaches the fd before it returns."""

    def write(self, s):
        n = super().write(s)
        self.buffer.flush()  # BufferedWriter.flush retries partial writes
        return n


def _open(fd):
    raw = io.FileIO(fd, "w", closefd=False)
    return _WriteThrough(io.BufferedWriter(raw), encoding="utf-8",
                         errors=_ERRORS, write_through=True)


def install():
    """Point sys.stdout/sys.stderr (and their __dunder__ twins) at fd 1/2."""
    sys.stdout = sys.__stdout__ = _open(1)
    sys.stderr = sys.__stderr__ = _open(2)


def flush():
    """Flush the current sys.stdout and sys.stderr; errors are ignored."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # a user-installed stream may be closed or odd
            pass
