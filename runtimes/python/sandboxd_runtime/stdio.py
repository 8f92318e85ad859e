"""Process-level stdout/stderr for a context.

fd 1 and fd 2 are the daemon's pipes. ``install(send)`` replaces ``sys.stdout``
and ``sys.stderr`` with text streams whose writes travel as ``stream`` messages
on the channel (``send``), so Python-level output is ordered exactly with the
results and errors that travel there too (a figure shown between two prints
arrives between them). Bytes written below Python — C extensions, ``os.write``,
subprocesses, ``sys.stdout.buffer`` — still go to the fd; the daemon drains the
pipes before it handles each channel message, so they come before any message
sent after them. Unencodable text (a lone surrogate) becomes U+FFFD, as the
daemon does with invalid UTF-8. Without ``send`` the streams write through to
the fd. ``flush()`` flushes whatever ``sys.stdout`` and ``sys.stderr`` currently
are (user code may have replaced them); the channel calls it before sending.
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


class _ChannelStream(io.TextIOBase):
    """A text stream sent as channel messages; its binary side is the fd."""

    encoding = "utf-8"
    errors = _ERRORS

    def __init__(self, name, fd, send):
        super().__init__()
        self._name = name
        self._fd = fd
        self._send = send
        self.buffer = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if s:
            self._send({"type": "stream", "name": self._name, "text": s})
        return len(s)

    def flush(self):
        self.buffer.flush()


def install(send=None):
    """Point sys.stdout/sys.stderr (and their __dunder__ twins) at the channel
    (``send``) or, without it, straight at fd 1/2."""
    if send is None:
        sys.stdout = sys.__stdout__ = _open(1)
        sys.stderr = sys.__stderr__ = _open(2)
        return
    sys.stdout = sys.__stdout__ = _ChannelStream("stdout", 1, send)
    sys.stderr = sys.__stderr__ = _ChannelStream("stderr", 2, send)


def flush():
    """Flush the current sys.stdout and sys.stderr; errors are ignored."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # a user-installed stream may be closed or odd
            pass
