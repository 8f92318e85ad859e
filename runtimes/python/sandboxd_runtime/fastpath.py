"""Running plain-Python cells without IPython's input machinery.

``run_cell(shell, raw)`` is ``shell.run_cell(raw, store_history=True)`` with
the same results, errors, history (``In``, ``_i*``, ``Out``, ``_N``), events
and execution count. For a *plain* cell it skips the input transformation
(tokenizing the cell for ``%magic``, ``!cmd``, ``obj?``, prompts, automagic)
and the "does it need an event loop" compile, which together cost about as
much as running ``1+1`` itself, and enters ``run_cell_async`` directly with
the transformed cell computed here.

A cell is plain when IPython's transformation provably leaves it unchanged
(apart from the trailing newline IPython adds), which ``transformed()``
checks conservatively: ASCII only; no line starting (after blanks) with an
escape character ``% ! ? , ; /`` or a prompt (``>>>``, ``...``, ``In [``);
no ``?`` anywhere; no ``=`` followed by ``%`` or ``!`` (``x = %magic``); no
``await``/``async`` word; no line separators other than ``\\n``; the first
character is not blank (no leading empty lines or indentation); and the
transformer, checker and handler lists are the ones the shell started with
(nothing registered by the user), autocall is off and no trio runner is set.
A single-line cell is also run through the prefilter's tests: its leading
word must not be a macro, an autocallable (``exit``) or an automagic
(``pwd``). Anything else runs through ``shell.run_cell`` unchanged.
"""

import re

from IPython.core.async_helpers import _pseudo_sync_runner
from IPython.core.autocall import IPyAutocall
from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult
from IPython.core.macro import Macro

# Any of these in a cell means IPython may rewrite it (see the module doc).
_SPECIAL = re.compile(
    r"^[ \t]*(?:[%!?,;/]|>>>|\.\.\.)"   # escapes and prompts at a line start
    r"|In \["                           # an IPython prompt
    r"|\?"                              # obj? help
    r"|=[\s\\]*[%!]"                    # x = %magic, x = !cmd
    r"|\b(?:await|async)\b"             # may need an event loop
    r"|[\r\v\f\x1c\x1d\x1e]",           # str.splitlines() separators but \n
    re.M)
_IFUN = re.compile(r"[\w.*]*")          # IPython's LineInfo.ifun, no escape

# Tests turn this off to compare with IPython's own path; ``hits`` counts the
# cells that took the fast path.
enabled = True
hits = 0


class _Defaults:
    """The shell's input-machinery configuration when the fast path was set up."""

    def __init__(self, shell):
        manager = shell.input_transformer_manager
        prefilter = shell.prefilter_manager
        self.manager = manager
        self.cleanup = list(manager.cleanup_transforms)
        self.line = list(manager.line_transforms)
        self.token = list(manager.token_transformers)
        self.prefilter = prefilter
        self.checkers = list(prefilter.checkers)
        self.normal = prefilter.get_handler_by_name("normal")

    def unchanged(self, shell):
        """True if nothing was registered or replaced since."""
        manager = shell.input_transformer_manager
        prefilter = shell.prefilter_manager
        return (manager is self.manager and prefilter is self.prefilter
                and manager.cleanup_transforms == self.cleanup
                and manager.line_transforms == self.line
                and manager.token_transformers == self.token
                and not shell.input_transformers_post
                and prefilter.checkers == self.checkers
                and not prefilter.transformers
                and prefilter.get_handler_by_name("normal") is self.normal
                and not shell.autocall
                and shell.trio_runner is None)


def transformed(shell, raw, defaults):
    """Return ``shell.transform_cell(raw)`` if ``raw`` is plain, else None."""
    if not raw or not raw.isascii() or raw[0].isspace() or _SPECIAL.search(raw):
        return None
    if not defaults.unchanged(shell):
        return None
    cell = raw if raw.endswith("\n") else raw + "\n"
    if cell.count("\n") == 1:
        # The prefilter runs on single-line cells only: replay its checkers.
        line = cell[:-1]
        ifun = _IFUN.match(line).group(0)
        obj = shell.user_ns.get(ifun)
        if isinstance(obj, (Macro, IPyAutocall)):
            return None
        if shell.automagic and shell.find_magic(ifun):
            return None
        shell._last_input_line = line  # as prefilter_line does
    return cell


class FastPath:
    """``run_cell`` for one shell; build it once the shell is configured."""

    def __init__(self, shell):
        self.shell = shell
        self.defaults = _Defaults(shell)

    def run_cell(self, raw):
        """Run ``raw`` like ``shell.run_cell(raw, store_history=True)``."""
        global hits
        shell = self.shell
        cell = transformed(shell, raw, self.defaults) if enabled else None
        if cell is None:
            return shell.run_cell(raw, store_history=True)
        hits += 1
        # InteractiveShell.run_cell and _run_cell, with the transformed cell
        # known and should_run_async known to be False.
        result = None
        try:
            coro = shell.run_cell_async(
                raw, store_history=True, silent=False, shell_futures=True,
                transformed_cell=cell, preprocessing_exc_tuple=None,
                cell_id=None)
            try:
                result = _pseudo_sync_runner(coro)
            except BaseException as e:
                info = ExecutionInfo(raw, True, False, True, None)
                result = ExecutionResult(info)
                result.error_in_exec = e
                shell.showtraceback(running_compiled_code=True)
        finally:
            shell.events.trigger("post_execute")
            shell.events.trigger("post_run_cell", result)
        return result
