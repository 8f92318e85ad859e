"""The context's main loop: ``serve(fd=3)``.

Called once in each (forked) context process. It:

* makes the channel fd close-on-exec (``!cmd`` and subprocesses never see it);
* reseeds ``random`` and numpy's global generator from the OS (a forked child
  would otherwise repeat the zygote's sequence);
* sends sys.stdout/sys.stderr writes as channel messages (see stdio);
* makes ``input()`` and ``getpass()`` raise StdinNotImplementedError (a
  context never reads stdin, and never reads the channel for input);
* installs the SIGINT handling (see interrupts);
* puts the operator's site dirs and the sandbox's user site on sys.path (packages);
* sends ``ready``, then runs each ``execute`` request (unknown message types
  are ignored) until the daemon closes the channel, and returns 0.

It creates the shell itself if ``preload()`` was not called.
"""

import builtins
import getpass
import os
import platform
import random
import sys

from IPython.core.error import StdinNotImplementedError

from . import interrupts, packages, stdio
from .channel import Channel
from .preload import preload
from .runner import Runner
from .shell import create

# Computed once (before fork, in the zygote): platform.python_version() parses
# sys.version on each call.
_VERSION = platform.python_version()

_NO_STDIN = "input() is not supported in sandboxd contexts: there is no stdin"


def _no_input(*args, **kwargs):
    """Replacement for input() and getpass.getpass()."""
    raise StdinNotImplementedError(_NO_STDIN)


def _reseed():
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def serve(fd=3):
    """Serve the channel on ``fd`` until it closes; returns 0."""
    os.set_inheritable(fd, False)
    preload()
    _reseed()
    channel = Channel(fd)
    stdio.install(channel.send)
    builtins.input = getpass.getpass = _no_input
    interrupts.install()
    packages.activate()
    runner = Runner(create(), channel)
    channel.send({"type": "ready", "language": "python",
                  "version": _VERSION, "pid": os.getpid()})
    for message in channel.messages():
        if message.get("type") == "execute":
            runner.execute(message)
    return 0
