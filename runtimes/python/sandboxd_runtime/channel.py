"""The context channel: newline-delimited JSON on one socket fd.

``Channel.send`` flushes stdout/stderr first (ordering rule; before a stream
message, not the partial lines of the streams, see stdio), serialises the
message as one line of valid UTF-8 JSON (lone surrogates become U+FFFD, NaN is
refused by the callers' values, see jsonvalue) and writes all of it, retrying
partial writes, with SIGINT held and under one lock so a message is never cut
(by an interrupt or another thread's message). ``messages()``
yields decoded requests until EOF; a line that is not a JSON object is skipped.
"""

import contextlib
import json
import os
import threading

from . import interrupts, stdio

_READ_SIZE = 1 << 16
# One encoder for every message (json.dumps with options builds a new one).
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False,
                           separators=(",", ":")).encode


class Channel:
    """One end of the context channel protocol on ``fd`` (not owned: never closed)."""

    def __init__(self, fd):
        self.fd = fd
        self._buf = bytearray()
        self._lock = threading.RLock()
        os.register_at_fork(after_in_child=self._reset_lock)

    def _reset_lock(self):
        self._lock = threading.RLock()

    def send(self, message):
        """Write ``message`` (a dict) as one line."""
        line = _ENCODE(message)
        data = memoryview((line + "\n").encode("utf-8", "sandboxd-replace"))
        # SIGINT reaches the main thread only: only there is it held (another thread
        # leaving the shield would raise the main thread's interrupt in itself).
        main = threading.current_thread() is threading.main_thread()
        with interrupts.shielded() if main else contextlib.nullcontext():
            # Partial lines first, outside the lock (stdio takes its lock, then this one).
            stdio.flush(lines=message.get("type") != "stream")
            with self._lock:
                while data:
                    data = data[os.write(self.fd, data):]

    def messages(self):
        """Yield each incoming message (a dict) until the peer closes the channel."""
        scanned = 0  # bytes of _buf already known to hold no newline
        while True:
            end = self._buf.find(b"\n", scanned)
            if end < 0:
                scanned = len(self._buf)
                chunk = os.read(self.fd, _READ_SIZE)
                if not chunk:
                    return
                self._buf += chunk
                continue
            scanned = 0
            line = bytes(self._buf[:end])
            del self._buf[:end + 1]
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                yield message
