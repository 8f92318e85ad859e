"""One ``execute`` request, from start to ``end``.

``Runner.execute(request)`` guarantees, for every request:

* ``envVars`` are applied for the run only (see environ);
* the run gets the next execution count (1, 2, ... one per request, failed and
  empty runs included), reported in ``end``;
* results are sent as they happen; figures the cell created or changed are
  sent when it ends (see figures);
* at most one ``error`` (the first exception, a SIGINT as KeyboardInterrupt,
  ``sys.exit(n)`` as SystemExit with the code as message), then ``end``;
* SIGINT interrupts only the user's part of the run; the state is kept.

Cells run through fastpath (IPython's run_cell, minus the input machinery for
plain-Python cells).
"""

from . import environ, errors, fastpath, figures, interrupts


class Runner:
    """Runs requests on ``shell`` and reports on ``channel``."""

    def __init__(self, shell, channel):
        self.shell = shell
        self.channel = channel
        self.fast = fastpath.FastPath(shell)

    def execute(self, request):
        """Run one execute request and send its results, error and end."""
        exec_id = str(request.get("id", ""))
        code = request.get("code")
        code = code if isinstance(code, str) else ""
        envvars = request.get("envVars")
        shell = self.shell
        count = shell.execution_count
        shell.cell_sources[count] = code.splitlines()
        shell.error = None
        shell.exit_now = False
        shell.sink = lambda result: self.channel.send(
            {"type": "result", "id": exec_id, "result": result})
        try:
            with environ.applied(envvars if isinstance(envvars, dict) else None):
                self._run(code)
            error = shell.error and errors.describe(*shell.error, shell.cell_files(count))
        finally:
            shell.sink = None
            shell.error = None
            shell.exit_now = False
            shell.execution_count = count + 1
        if error:
            self.channel.send({"type": "error", "id": exec_id, "error": error})
        self.channel.send({"type": "end", "id": exec_id, "executionCount": count})

    def _run(self, code):
        """Run the cell and flush its figures, recording a stray interrupt."""
        shell = self.shell
        try:
            with interrupts.armed():
                try:
                    self.fast.run_cell(code)
                finally:
                    figures.flush()
        except KeyboardInterrupt:
            shell.showtraceback()
