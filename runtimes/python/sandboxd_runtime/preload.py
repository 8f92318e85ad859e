"""Everything a context needs that can be done once, before fork.

``preload()`` is idempotent and starts no threads. It:

1. sets ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
   ``NUMEXPR_NUM_THREADS`` and ``NUMEXPR_MAX_THREADS`` to 1 unless already set
   (thread pools created before fork would not survive it);
2. makes matplotlib use the pre-built font cache in ``MPLCONFIGDIR`` even when
   that directory is read-only (matplotlib insists on a writable config dir:
   it then gets a private temporary one that links to the pre-built list);
3. imports numpy, pandas, PIL, matplotlib with the sandboxd backend
   (``module://sandboxd_runtime.mpl_backend``, Agg rendering) and pyplot;
4. creates the IPython shell every forked context starts from (shell.create);
5. runs a few cells through the same Runner and Channel code a context uses
   (on a channel that writes to /dev/null), then resets the shell to the state
   of a fresh one: execution count 1, empty namespaces, no cell sources, no
   cached cell files, no ``sys.last_*``. A forked context then finds every lazy
   import done and every code path of a run already executed (CPython 3.11
   quickens a function only after several calls and keeps rewriting the
   bytecode of one that is not quickened yet), so its first runs copy far
   fewer of the zygote's pages; see ``_warm_runs``.

Without ``MPLCONFIGDIR`` matplotlib uses its default (``~/.config/matplotlib``).
"""

import glob
import linecache
import os
import sys
import tempfile

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS")


def _matplotlib_config_dir():
    """Give matplotlib a writable MPLCONFIGDIR that holds the pre-built font list."""
    configured = os.environ.get("MPLCONFIGDIR")
    if not configured or os.access(configured, os.W_OK):
        return
    private = tempfile.mkdtemp(prefix="sandboxd-mpl-")
    for path in glob.glob(os.path.join(configured, "*")):
        os.symlink(path, os.path.join(private, os.path.basename(path)))
    os.environ["MPLCONFIGDIR"] = private


# Cells run before fork, each _WARM_ROUNDS times: a value, an import, an error,
# a DataFrame (html/json/data formatters). None of them prints (the zygote's
# stdout is the daemon's log) and none leaves state behind (_reset_shell).
_WARM_CELLS = (
    "1+1",
    "import pandas",
    "1/0",
    "import pandas as pd\npd.DataFrame({'x': [1, 2], 'y': [0.5, None]})",
)
_WARM_ROUNDS = 12


def _warm_runs(shell):
    """Run _WARM_CELLS through Runner and Channel, then restore the shell."""
    from .channel import Channel
    from .runner import Runner
    state = _ShellState(shell)
    fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        runner = Runner(shell, Channel(fd))
        for _ in range(_WARM_ROUNDS):
            for code in _WARM_CELLS:
                runner.execute({"type": "execute", "id": "warm", "code": code})
    finally:
        os.close(fd)
        state.restore()


class _ShellState:
    """What a run changes in a shell, saved so that a used shell can be put
    back exactly as it was (not ``shell.reset()``: that also drops names a fresh
    shell has, such as ``__doc__`` and ``_``)."""

    _HISTORY_ATTRS = ("_i00", "_i", "_ii", "_iii")
    _SHELL_ATTRS = ("execution_count", "last_execution_succeeded",
                    "last_execution_result", "error", "sink")

    def __init__(self, shell):
        hm = shell.history_manager
        self.shell = shell
        self.user_ns = dict(shell.user_ns)
        self.user_ns_hidden = dict(shell.user_ns_hidden)
        self.lists = [(lst, list(lst)) for lst in (
            hm.input_hist_parsed, hm.input_hist_raw, hm.dir_hist,
            hm.db_input_cache, hm.db_output_cache)]
        self.output_hist = dict(hm.output_hist)
        self.history = {a: getattr(hm, a) for a in self._HISTORY_ATTRS}
        self.attrs = {a: getattr(shell, a) for a in self._SHELL_ATTRS}
        hook = shell.displayhook
        self.hook = (hook._, hook.__, hook.___)
        self.cell_sources = dict(shell.cell_sources)
        self.filename_map = dict(shell.compile._filename_map)
        self.linecache = set(linecache.cache)

    def restore(self):
        """Put every saved item back; forget cells, tracebacks and sys.last_*."""
        shell, hm = self.shell, self.shell.history_manager
        shell.user_ns.clear()
        shell.user_ns.update(self.user_ns)
        shell.user_ns_hidden.clear()
        shell.user_ns_hidden.update(self.user_ns_hidden)
        for lst, saved in self.lists:
            lst[:] = saved
        hm.output_hist.clear()
        hm.output_hist.update(self.output_hist)
        for name, value in self.history.items():
            setattr(hm, name, value)
        for name, value in self.attrs.items():
            setattr(shell, name, value)
        hook = shell.displayhook
        hook._, hook.__, hook.___ = self.hook
        shell.cell_sources.clear()
        shell.cell_sources.update(self.cell_sources)
        shell.compile._filename_map.clear()
        shell.compile._filename_map.update(self.filename_map)
        ipython_cache = getattr(linecache, "_ipython_cache", {})
        for name in set(linecache.cache) - self.linecache:
            linecache.cache.pop(name, None)
            ipython_cache.pop(name, None)
        for name in ("last_type", "last_value", "last_traceback"):
            if hasattr(sys, name):
                delattr(sys, name)


def preload():
    """Import and build everything shared by all contexts (once)."""
    from . import shell
    if shell.SandboxShell.initialized():
        return
    for name in _THREAD_VARS:
        os.environ.setdefault(name, "1")
    _matplotlib_config_dir()
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import PIL.Image  # noqa: F401
    import matplotlib
    matplotlib.use(shell.BACKEND)
    import matplotlib.pyplot  # noqa: F401
    _warm_runs(shell.create())
