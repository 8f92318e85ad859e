"""The IPython shell of a context.

``SandboxShell`` is an ``InteractiveShell`` whose output goes to a *sink*
(a callable taking a Result dict) instead of a terminal:

* the display hook sends the cell's last expression value as a result with
  ``isMainResult: true`` (no ``Out[n]:`` prompt, nothing printed; ``None`` and
  a trailing ``;`` give no result);
* the display publisher sends each ``display()`` call as one result, in order;
* tracebacks are not printed: the first exception of a run is kept in
  ``error`` as an exc_info tuple for the runner to report;
* ``!cmd`` runs through ``subprocess`` with fd 1/2 inherited (streams directly);
  afterwards the import caches are refreshed (packages.refresh: ``!pip install``);
* ``%pip …`` runs ``python3 -m pip …`` the same way: installs go to the sandbox's
  user site (docs/packages.md) and are importable at once; ``%conda`` is refused;
* ``exit()``/``quit()`` raise SystemExit like ``sys.exit()``;
* ``%matplotlib`` is accepted and changes nothing (the sandboxd backend is
  always active).

``create()`` builds the single instance (history kept in memory only, so no
history thread or sqlite file), installs the formatters and warms the
compile and render paths; ``preload()`` calls it before fork.
"""

import io
import os
import shlex
import sys
import warnings

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError
from IPython.core.history import HistoryManager
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_magic, magics_class
from traitlets import Type
from traitlets.config import Config

from . import formatters, packages, results

BACKEND = "module://sandboxd_runtime.mpl_backend"
_NO_CONDA = ("conda is not available in sandboxd contexts: "
             "install packages with %pip install (docs/packages.md)")


class _ResultHook(DisplayHook):
    """Display hook: the last expression value becomes the main result."""

    exec_result = None  # a plain attribute, not a trait (see SandboxShell)

    def quiet(self):
        """IPython's test (does the cell end with ``;``?), skipping the
        tokenizer when the cell has no ``;`` at all."""
        hist = self.shell.history_manager.input_hist_parsed
        if hist and ";" not in hist[-1]:
            return False
        return super().quiet()

    def start_displayhook(self):
        pass

    def write_output_prompt(self):
        pass

    def write_format_data(self, format_dict, md_dict=None):
        self.shell.emit(format_dict, True)

    def finish_displayhook(self):
        pass


class _History(HistoryManager):
    """History with the ``_i*`` input caches as plain attributes (each run
    sets all four; see SandboxShell for why)."""

    _i00 = _i = _ii = _iii = ""


class _ResultPublisher(DisplayPublisher):
    """Display publisher: each display() call becomes one result."""

    def publish(self, data, metadata=None, source=None, *, transient=None,
                update=False, **kwargs):
        self.shell.emit(data, False)

    def clear_output(self, wait=False):
        pass


def _python():
    """The Python interpreter for ``%pip`` (sys.executable may be the zygote)."""
    if os.path.basename(sys.executable or "").startswith("python"):
        return sys.executable
    return "/usr/bin/python3"


@magics_class
class _PackagingMagics(Magics):
    """%pip (into the sandbox's user site) and %conda (refused)."""

    @line_magic
    def pip(self, line):
        """Run ``python3 -m pip`` with the line's arguments (then refresh imports)."""
        self.shell.system(shlex.quote(_python()) + " -m pip " + line)

    @line_magic
    def conda(self, line):
        """Refuse: there is no conda in a context."""
        raise UsageError("%conda: " + _NO_CONDA)


class SandboxShell(InteractiveShell):
    """InteractiveShell that reports results and errors instead of printing."""

    displayhook_class = Type(_ResultHook)
    display_pub_class = Type(_ResultPublisher)

    def system(self, cmd):
        """``!cmd``: run it (output streams), then pick up what it installed."""
        try:
            return InteractiveShell.system_raw(self, cmd)
        finally:
            packages.refresh()

    # Plain attributes instead of IPython's traits of the same names: every
    # run sets them, a trait set (validation, change notification) costs
    # about a microsecond each, and nothing observes them.
    execution_count = 1
    exit_now = False
    last_execution_succeeded = True
    last_execution_result = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sink = None          # callable(result dict) of the current run
        self.error = None         # first (etype, value, tb) of the current run
        self.cell_sources = {}    # execution count -> raw cell lines

    def emit(self, bundle, is_main):
        """Send one MIME bundle to the sink as a Result."""
        result = results.to_result(bundle, is_main)
        if result is not None and self.sink is not None:
            self.sink(result)

    def showtraceback(self, exc_tuple=None, filename=None, tb_offset=None,
                      exception_only=False, running_compiled_code=False):
        try:
            exc = self._get_exc_info(exc_tuple)
        except ValueError:
            return
        if self.error is None:
            self.error = exc

    def showsyntaxerror(self, filename=None, running_compiled_code=False):
        self.showtraceback()

    def init_history(self):
        self.history_manager = _History(shell=self, parent=self)
        self.configurables.append(self.history_manager)

    def init_display_formatter(self):
        self.display_formatter = formatters.FastDisplayFormatter(parent=self)
        self.configurables.append(self.display_formatter)

    def ask_exit(self):
        """``exit()``/``quit()``: like ``sys.exit()``, an error; the context lives on."""
        raise SystemExit()

    def enable_matplotlib(self, gui=None):
        return gui, BACKEND

    def cell_files(self, current):
        """Map IPython's cell file names to ``(label, raw lines)`` for errors;
        run ``current`` is labelled ``<cell>``, others ``<cell N>``. Looked up per
        frame, so an error costs the same after 10 or 100,000 runs."""
        return _CellFiles(self.compile._filename_map, self.cell_sources, current)


class _CellFiles:
    """The read-only mapping ``cell_files()`` returns (get, in, [])."""

    def __init__(self, filename_map, sources, current):
        self._map = filename_map
        self._sources = sources
        self._current = current

    def get(self, name, default=None):
        number = self._map.get(name)
        if number is None:
            return default
        label = "<cell>" if number == self._current else "<cell %d>" % number
        return label, self._sources.get(number, [])

    def __contains__(self, name):
        return name in self._map

    def __getitem__(self, name):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value


def _warm_up(shell):
    """Run the compile and render paths once so forked contexts start warm."""
    shell.run_cell("pass", silent=True)
    from matplotlib.figure import Figure
    fig = Figure()
    fig.subplots().plot([0, 1], [1, 0], label="warm")
    fig.legend()
    fig.savefig(io.BytesIO(), format="png", bbox_inches="tight")
    shell.display_formatter.format({"a": [1]})


def create():
    """Create (once) and return the SandboxShell every context starts from."""
    if SandboxShell.initialized():
        return SandboxShell.instance()
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    config.PlainTextFormatter.max_seq_length = 0
    shell = SandboxShell.instance(config=config)
    formatters.install(shell)
    shell.register_magics(_PackagingMagics)
    warnings.filterwarnings("ignore", message="To exit: use 'exit'")
    warnings.filterwarnings("ignore", message="Output cache limit")
    _warm_up(shell)
    return shell
