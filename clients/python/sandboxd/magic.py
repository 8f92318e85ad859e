"""The `%%sandboxd` IPython cell magic: run a notebook cell in a sandboxd context.

`%load_ext sandboxd` registers it. The cell's code runs in sandbox `--sandbox` (default
"notebook") of the daemon at `--url` (default $SANDBOXD_URL, else http://127.0.0.1:7878),
in context `--context` (an id) or the sandbox's default context for `--language` (python,
javascript, typescript). Its outputs appear in the notebook while it runs and in the order
the sandbox produced them: stdout and stderr as streams, every display and the final value
as rich displays (PNG plots, HTML tables, …), an exception's traceback on stderr. The
`Execution` is stored in the notebook variable named by `--out`, if given. `%sandboxd`
without a cell sets the defaults for later cells (e.g. `%sandboxd --sandbox demo`).
Ctrl-C (the notebook's interrupt) interrupts the run in the sandbox. IPython is imported
only here, so the rest of the SDK does not need it.
"""
import argparse
import shlex
import sys

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from .sandbox import Sandbox

_LANGUAGES = ("python", "javascript", "typescript")


def _parser():
    p = argparse.ArgumentParser(prog="%%sandboxd", add_help=False)
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--sandbox", "-s")
    p.add_argument("--context", "-c")
    p.add_argument("--language", "-l", choices=_LANGUAGES)
    p.add_argument("--timeout", type=float, help="seconds, enforced by the daemon")
    p.add_argument("--out", "-o", help="store the Execution in this notebook variable")
    return p


class _UsageError(Exception):
    pass


def _parse(line):
    p = _parser()
    p.error = lambda message: (_ for _ in ()).throw(_UsageError(message))
    try:
        return p.parse_args(shlex.split(line, comments=True))  # "# ..." ends the options
    except ValueError as e:  # shlex: unbalanced quotes
        raise _UsageError(str(e)) from e


@magics_class
class SandboxdMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self.defaults = {"url": None, "token": None, "sandbox": "notebook", "context": None,
                         "language": None, "timeout": None}
        self._sandboxes = {}

    def _sandbox(self, opts):
        key = (opts["url"], opts["token"], opts["sandbox"])
        if key not in self._sandboxes:
            self._sandboxes[key] = Sandbox(opts["url"], opts["sandbox"], token=opts["token"])
        return self._sandboxes[key]

    @line_cell_magic
    def sandboxd(self, line, cell=None):
        """%%sandboxd [--url U] [--token T] [--sandbox S] [--context ID] [--language L]
        [--timeout SECONDS] [--out NAME]: run the cell in sandboxd; %sandboxd sets defaults."""
        from IPython.core.error import UsageError
        try:
            args = _parse(line)
        except _UsageError as e:
            raise UsageError("%%sandboxd: " + str(e)) from None
        given = {k: v for k, v in vars(args).items() if v is not None and k != "out"}
        if cell is None:
            self.defaults.update(given)
            return None
        opts = dict(self.defaults, **given)
        ex = self._sandbox(opts).run_code(
            cell, context=opts["context"], language=opts["language"], timeout=opts["timeout"],
            on_stdout=_writer(sys, "stdout"), on_stderr=_writer(sys, "stderr"),
            on_result=display, on_error=_show_error)
        if args.out:
            self.shell.user_ns[args.out] = ex
        return None


def _writer(module, name):
    def write(text):
        stream = getattr(module, name)  # looked up per call: the kernel may swap it
        stream.write(text)
        stream.flush()
    return write


def _show_error(error):
    tb = error.traceback or str(error)
    sys.stderr.write(tb if tb.endswith("\n") else tb + "\n")
    sys.stderr.flush()


def load_ipython_extension(ipython):
    ipython.register_magics(SandboxdMagics)
