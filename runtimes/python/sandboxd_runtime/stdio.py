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

Whole lines: the channel streams send text up to its last newline as one message
per write and hold the rest, per thread, until that thread writes the newline, until
it has waited ``LINE_WAIT`` seconds (a flusher thread, started on first need), or
until ``flush()`` (which the channel runs before every result, error and end), or
until it reaches ``PART_MAX`` characters (then it is sent in pieces as it grows). So
``print()`` is one message with its end (``install`` makes it one write), and
threads printing at once never mix their lines; ``print("x", end="")`` still shows within ``LINE_WAIT``.
"""

import builtins
import codecs
import io
import os
import sys
import threading
import time

LINE_WAIT = 0.05  # seconds a partial line waits for the rest of it
PART_MAX = 65536  # characters of a partial line held at most; more is sent at once

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


class _Lines:
    """The partial lines of the channel streams, and the thread that sends those that
    waited ``LINE_WAIT``. One lock orders every stream message (re-entrant: sending
    flushes, which may send)."""

    def __init__(self):
        self.streams = []
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self):
        """A new lock and no flusher (in a forked child: its threads are gone)."""
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.thread = None

    def arm(self):
        """Make sure the flusher runs (lock held)."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="sandboxd-lines",
                                           daemon=True)
            self.thread.start()
        self.wake.notify()

    def _run(self):
        with self.lock:
            while True:
                due = [s.oldest() for s in self.streams if s.oldest() is not None]
                if not due:
                    self.wake.wait()
                    continue
                left = min(due) + LINE_WAIT - time.monotonic()
                if left > 0:
                    self.wake.wait(left)
                    continue
                for s in self.streams:
                    try:
                        s.send_partial(time.monotonic() - LINE_WAIT)
                    except Exception:  # a closed channel: the process is ending
                        return


_LINES = _Lines()


class _ChannelStream(io.TextIOBase):
    """A text stream sent as channel messages, in whole lines; its binary side is the fd."""

    encoding = "utf-8"
    errors = _ERRORS

    def __init__(self, name, fd, send):
        super().__init__()
        self._name = name
        self._fd = fd
        self._send = send
        self._held = {}  # thread id -> [partial line, monotonic time it began]
        self.buffer = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))
        with _LINES.lock:
            _LINES.streams.append(self)

    def oldest(self):
        """When the oldest partial line held began, or None (lock held)."""
        return min((h[1] for h in self._held.values()), default=None)

    def send_partial(self, before=None):
        """Send the partial lines held (only those begun before ``before``)."""
        with _LINES.lock:
            for tid, (text, since) in list(self._held.items()):
                if before is None or since <= before:
                    del self._held[tid]
                    self._send({"type": "stream", "name": self._name, "text": text})

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if not s:
            return 0
        tid = threading.get_ident()
        with _LINES.lock:
            held = self._held.pop(tid, None)
            text = held[0] + s if held else s
            cut = text.rfind("\n") + 1
            if cut:
                self._send({"type": "stream", "name": self._name, "text": text[:cut]})
            if len(text) - cut >= PART_MAX:
                # a long line without its end (a progress bar, a binary dump): sent as it
                # grows, in pieces, so that nothing held grows without bound
                self._send({"type": "stream", "name": self._name, "text": text[cut:]})
            elif cut < len(text):
                self._held[tid] = [text[cut:], held[1] if held else time.monotonic()]
                _LINES.arm()
        return len(s)

    def flush(self):
        self.send_partial()
        self.buffer.flush()


_builtin_print = builtins.print


def _print(*args, sep=" ", end="\n", file=None, flush=False):
    """print() as one write of its whole text (the builtin writes each argument,
    separator and end apart, so a thread switch could land between them)."""
    if file is None:
        file = sys.stdout
        if file is None:
            return
    if not isinstance(file, _ChannelStream):
        _builtin_print(*args, sep=sep, end=end, file=file, flush=flush)
        return
    for name, value in (("sep", sep), ("end", end)):
        if value is not None and not isinstance(value, str):
            raise TypeError("%s must be None or a string, not %s" % (name, type(value).__name__))
    text = (" " if sep is None else sep).join(map(str, args)) + ("\n" if end is None else end)
    file.write(text)
    if flush:
        file.flush()


_print.__doc__ = _builtin_print.__doc__


def install(send=None):
    """Point sys.stdout/sys.stderr (and their __dunder__ twins) at the channel
    (``send``) or, without it, straight at fd 1/2."""
    if send is None:
        sys.stdout = sys.__stdout__ = _open(1)
        sys.stderr = sys.__stderr__ = _open(2)
        return
    sys.stdout = sys.__stdout__ = _ChannelStream("stdout", 1, send)
    sys.stderr = sys.__stderr__ = _ChannelStream("stderr", 2, send)
    builtins.print = _print


def flush(lines=True):
    """Flush the current sys.stdout and sys.stderr; errors are ignored. With
    ``lines`` false (before a stream message) the channel streams keep their
    partial lines, so another thread's line never lands inside one."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if lines or not isinstance(stream, _ChannelStream):
                stream.flush()
            else:
                stream.buffer.flush()
        except Exception:  # a user-installed stream may be closed or odd
            pass
