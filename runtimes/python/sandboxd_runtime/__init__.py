"""sandboxd's Python context runtime.

Runs cells with IPython semantics inside one context process and speaks the
context channel protocol (docs/protocol.md) on fd 3.

Entry points, in the order a host calls them:

* ``preload()`` -- once, in the zygote before any fork: sets the thread-count
  environment defaults, imports IPython, numpy, pandas, matplotlib (with the
  sandboxd backend) and builds the one shell every context starts from.
  It starts no threads.
* ``serve(fd=3)`` -- in each forked child: reseeds randomness, installs the
  stdio and SIGINT handling, sends ``ready`` and runs ``execute`` requests
  until the channel closes; returns 0 then (the caller exits).

``python3 -m sandboxd_runtime`` does both, for use without the zygote.
This module imports nothing heavy, so importing the package is cheap.
"""

from .preload import preload
from .serve import serve

__all__ = ["preload", "serve"]
