"""SIGINT handling for a context.

A SIGINT raises ``KeyboardInterrupt`` only while a run is *armed* (user code
may be executing). While idle it is ignored, so an interrupt that arrives
between runs never kills the context. Inside a *shielded* section (writing a
message to the channel) the interrupt is held and raised when the section ends,
so a message is never cut in half.
"""

import signal
from contextlib import contextmanager

_state = {"armed": False, "shield": 0, "pending": False}


def _on_sigint(signum, frame):
    if not _state["armed"]:
        return
    if _state["shield"]:
        _state["pending"] = True
        return
    raise KeyboardInterrupt


def install():
    """Install the SIGINT handler and make sure SIGINT is not blocked."""
    signal.signal(signal.SIGINT, _on_sigint)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextmanager
def armed():
    """Let SIGINT interrupt the body; an interrupt still held is dropped at exit."""
    _state["armed"] = True
    try:
        yield
    finally:
        _state["armed"] = False
        _state["pending"] = False


@contextmanager
def shielded():
    """Hold SIGINT during the body, then raise it if the run is still armed."""
    _state["shield"] += 1
    try:
        yield
    finally:
        _state["shield"] -= 1
        if not _state["shield"] and _state["pending"] and _state["armed"]:
            _state["pending"] = False
            raise KeyboardInterrupt
