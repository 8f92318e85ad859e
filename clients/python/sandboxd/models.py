"""Objects returned by the SDK: execution results that Jupyter can display, and plain records.

`Result` is one rich output of a cell (a display or the final expression value) with one
attribute per MIME format the API names; its `_repr_*_` methods let IPython/Jupyter show it
as the sandbox produced it (a matplotlib figure appears as the PNG). `Execution` gathers a
run: `.results`, `.logs` (stdout/stderr chunks as printed), `.error` (`ExecutionError` or
None) and `.text`, the main result's text. Everything is built from the API's JSON with
`from_json` and never fails on unknown fields: they are ignored, or kept in `extra`.
"""
import base64

# API field -> MIME type, in the order a frontend should prefer them.
MIME_TYPES = (
    ("html", "text/html"),
    ("markdown", "text/markdown"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpeg", "image/jpeg"),
    ("pdf", "application/pdf"),
    ("latex", "text/latex"),
    ("json", "application/json"),
    ("javascript", "application/javascript"),
    ("text", "text/plain"),
)
_BINARY = ("png", "jpeg", "pdf")


class Result:
    """One rich output. Binary formats (png, jpeg, pdf) are kept base64 as the API sends them."""

    __slots__ = ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json",
                 "javascript", "data", "chart", "is_main_result", "extra")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))
        self.is_main_result = bool(self.is_main_result)
        self.extra = self.extra or {}

    @classmethod
    def from_json(cls, doc):
        doc = doc or {}
        fields = {name: doc.get(name) for name, _ in MIME_TYPES}
        fields.update(data=doc.get("data"), chart=doc.get("chart"),
                      is_main_result=doc.get("isMainResult", False), extra=doc.get("extra"))
        return cls(**fields)

    def formats(self):
        """Names of the formats present, e.g. ["text", "png"]."""
        out = [name for name, _ in MIME_TYPES if getattr(self, name) is not None]
        return out + list(self.extra)

    def decoded(self, fmt):
        """The bytes of a binary format (`png`, `jpeg`, `pdf`), or None when absent."""
        value = getattr(self, fmt)
        return base64.b64decode(value) if value is not None else None

    def __str__(self):
        return self.text or ""

    def __repr__(self):
        return "Result(%s)" % ", ".join(
            "%s=%s" % (f, (repr(self.text) if f == "text" else "...")) for f in self.formats())

    # IPython display protocol
    def _repr_html_(self):
        return self.html

    def _repr_markdown_(self):
        return self.markdown

    def _repr_svg_(self):
        return self.svg

    def _repr_png_(self):
        return self.decoded("png")

    def _repr_jpeg_(self):
        return self.decoded("jpeg")

    def _repr_pdf_(self):
        return self.decoded("pdf")

    def _repr_latex_(self):
        return self.latex

    def _repr_json_(self):
        return self.json

    def _repr_javascript_(self):
        return self.javascript

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {}
        for name, mime in MIME_TYPES:
            value = getattr(self, name)
            if value is not None:
                bundle[mime] = value  # Jupyter's wire format wants images as base64 text
        bundle.update(self.extra)
        if include:
            bundle = {k: v for k, v in bundle.items() if k in include}
        if exclude:
            bundle = {k: v for k, v in bundle.items() if k not in exclude}
        return bundle


class Logs:
    """stdout and stderr of a run, as lists of chunks in the order they were printed."""

    __slots__ = ("stdout", "stderr")

    def __init__(self, stdout=None, stderr=None):
        self.stdout = list(stdout or [])
        self.stderr = list(stderr or [])

    def __repr__(self):
        return "Logs(stdout=%r, stderr=%r)" % (self.stdout, self.stderr)


class ExecutionError:
    """An error raised by the user's code: `name`, `message` (alias `value`), `traceback`."""

    __slots__ = ("name", "message", "traceback_lines")

    def __init__(self, name, message, traceback_lines=None):
        self.name = name
        self.message = message
        self.traceback_lines = list(traceback_lines or [])

    @classmethod
    def from_json(cls, doc):
        tb = doc.get("traceback") or []
        if isinstance(tb, str):
            tb = tb.split("\n")
        return cls(doc.get("name") or "Error", doc.get("message") or "", tb)

    @property
    def value(self):
        return self.message

    @property
    def traceback(self):
        return "\n".join(self.traceback_lines)

    def __str__(self):
        return "%s: %s" % (self.name, self.message)

    def __repr__(self):
        return "ExecutionError(%r, %r)" % (self.name, self.message)


class Execution:
    """One run of code: results, logs, error, and the counters the daemon reports."""

    def __init__(self, results=None, logs=None, error=None, execution_count=None,
                 duration_ms=None, state_preserved=True, id=None, context_id=None, usage=None):
        self.results = list(results or [])
        self.usage = usage  # {"cpuMs", "peakMemoryBytes"} of this run, when the daemon says
        self.logs = logs or Logs()
        self.error = error
        self.execution_count = execution_count
        self.duration_ms = duration_ms
        self.state_preserved = state_preserved
        self.id = id
        self.context_id = context_id

    @classmethod
    def from_json(cls, doc):
        logs = doc.get("logs") or {}
        err = doc.get("error")
        return cls(results=[Result.from_json(r) for r in doc.get("results") or []],
                   logs=Logs(logs.get("stdout"), logs.get("stderr")),
                   error=ExecutionError.from_json(err) if err else None,
                   execution_count=doc.get("executionCount"),
                   duration_ms=doc.get("durationMs"),
                   state_preserved=doc.get("statePreserved", True),
                   id=doc.get("id"), context_id=doc.get("contextId"),
                   usage=doc.get("usage"))

    @property
    def main_result(self):
        for r in self.results:
            if r.is_main_result:
                return r
        return None

    @property
    def text(self):
        """The main result's text (the cell's final expression value), or None."""
        r = self.main_result
        return r.text if r is not None else None

    @property
    def stdout(self):
        return "".join(self.logs.stdout)

    @property
    def stderr(self):
        return "".join(self.logs.stderr)

    def raise_error(self):
        """Raise `CodeRaisedError` if the code raised; return self otherwise (for chaining)."""
        if self.error is not None:
            raise CodeRaisedError(self.error)
        return self

    def __repr__(self):
        return "Execution(results=%r, logs=%r, error=%r)" % (self.results, self.logs, self.error)

    # Jupyter shows the whole cell when an Execution ends one (`_ipython_display_`, which IPython
    # prefers): stdout, stderr, every display in order, the main result last, then the error's
    # traceback. Other frontends that only ask for one bundle get the main result (or the last
    # display) from `_repr_mimebundle_`.
    def _shown(self):
        return self.main_result or (self.results[-1] if self.results else None)

    def display_parts(self):
        """What `_ipython_display_` shows, in order: ("stdout"|"stderr", text) and
        ("result", Result) pairs; the error's traceback is a last ("stderr", text)."""
        parts = []
        if self.stdout:
            parts.append(("stdout", self.stdout))
        if self.stderr:
            parts.append(("stderr", self.stderr))
        main = [r for r in self.results if r.is_main_result]
        parts += [("result", r) for r in self.results if not r.is_main_result] + \
            [("result", r) for r in main]
        if self.error is not None:
            tb = self.error.traceback or str(self.error)
            parts.append(("stderr", tb if tb.endswith("\n") else tb + "\n"))
        return parts

    def _ipython_display_(self):
        import sys
        from IPython.display import display
        for kind, value in self.display_parts():
            if kind == "result":
                display(value)
            else:
                stream = sys.stdout if kind == "stdout" else sys.stderr
                stream.write(value)
                stream.flush()  # before the next display, so a notebook keeps the order

    def _repr_mimebundle_(self, include=None, exclude=None):
        shown = self._shown()
        if shown is not None:
            return shown._repr_mimebundle_(include, exclude)
        text = self.stdout
        if self.error is not None:
            text += "%s\n" % self.error.traceback
        return {"text/plain": text or repr(self)}

    def _repr_html_(self):
        s = self._shown()
        return s._repr_html_() if s else None

    def _repr_markdown_(self):
        s = self._shown()
        return s._repr_markdown_() if s else None

    def _repr_svg_(self):
        s = self._shown()
        return s._repr_svg_() if s else None

    def _repr_png_(self):
        s = self._shown()
        return s._repr_png_() if s else None

    def _repr_jpeg_(self):
        s = self._shown()
        return s._repr_jpeg_() if s else None

    def _repr_latex_(self):
        s = self._shown()
        return s._repr_latex_() if s else None

    def _repr_json_(self):
        s = self._shown()
        return s._repr_json_() if s else None


class CodeRaisedError(Exception):
    """Raised by `Execution.raise_error()`; `.error` is the `ExecutionError`."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


class Record(dict):
    """A JSON object from the API with attribute access in snake_case or camelCase.

    `ctx.id`, `ctx.language`, `ctx.execution_count` and `ctx["executionCount"]` all work.
    """

    def __getattr__(self, name):
        if name in self:
            return self[name]
        camel = name.split("_")
        camel = camel[0] + "".join(p[:1].upper() + p[1:] for p in camel[1:])
        if camel in self:
            return self[camel]
        raise AttributeError(name)


class CommandResult(Record):
    """Result of `exec`: stdout, stderr, exit_code, success, duration_ms, timed_out."""
