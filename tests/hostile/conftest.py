"""Fixtures: see tests/support/sbxtest.py."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))

from sbxtest import BINARY, Daemon, Sandbox, daemon, make_daemon, sandbox, sse_events  # noqa: E402,F401
