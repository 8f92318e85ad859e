"""``python3 -m sandboxd_runtime``: preload, then serve the channel on fd 3."""

import sys

from . import preload, serve

preload()
sys.exit(serve(3))
