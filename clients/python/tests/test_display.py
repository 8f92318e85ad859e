"""An Execution shown in Jupyter shows the whole cell, in order; no daemon needed.

IPython's own machinery is used: an InteractiveShell whose display publisher and sys.stdout /
sys.stderr write into one list, so the order of streams and displays can be checked exactly.
"""
import base64
import io
import sys

import pytest

from sandboxd import Execution

import IPython  # noqa: F401  (python3-ipython, installed by scripts/install-deps)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def cell():
    return Execution.from_json({
        "results": [
            {"text": "<Figure>", "png": PNG},
            {"text": "df", "html": "<table><tr><td>1</td></tr></table>"},
            {"text": "42", "isMainResult": True},
        ],
        "logs": {"stdout": ["hello ", "world\n"], "stderr": ["warn\n"]},
    })


class Recorder(io.TextIOBase):
    def __init__(self, seen, name):
        self.seen, self.name = seen, name

    def write(self, s):
        self.seen.append((self.name, s))
        return len(s)


@pytest.fixture
def shown(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    seen = []
    monkeypatch.setattr(shell.display_pub, "publish",
                        lambda data, metadata=None, **kw: seen.append(("display", data)))

    def show(obj):
        del seen[:]
        # patched here, not at setup: pytest puts its own capture back between the phases
        monkeypatch.setattr(sys, "stdout", Recorder(seen, "stdout"))
        monkeypatch.setattr(sys, "stderr", Recorder(seen, "stderr"))
        from IPython.display import display
        display(obj)
        return list(seen)
    return show


def test_whole_cell_in_order(shown):
    seen = shown(cell())
    assert [k for k, _ in seen] == ["stdout", "stderr", "display", "display", "display"]
    assert seen[0][1] == "hello world\n"
    assert seen[1][1] == "warn\n"
    assert seen[2][1]["image/png"] == PNG
    assert seen[2][1]["text/plain"] == "<Figure>"
    assert seen[3][1]["text/html"] == "<table><tr><td>1</td></tr></table>"
    assert seen[4][1] == {"text/plain": "42"}


def test_main_result_last_even_if_sent_first(shown):
    ex = Execution.from_json({"results": [{"text": "main", "isMainResult": True},
                                          {"text": "shown", "markdown": "**b**"}]})
    seen = shown(ex)
    assert [d["text/plain"] for _, d in seen] == ["shown", "main"]
    assert seen[0][1]["text/markdown"] == "**b**"


def test_error_traceback_after_outputs(shown):
    ex = Execution.from_json({"logs": {"stdout": ["before\n"]},
                              "error": {"name": "ZeroDivisionError", "message": "division by zero",
                                        "traceback": ["Traceback (most recent call last):",
                                                      "ZeroDivisionError: division by zero"]}})
    seen = shown(ex)
    assert seen == [("stdout", "before\n"),
                    ("stderr", "Traceback (most recent call last):\n"
                               "ZeroDivisionError: division by zero\n")]


def test_empty_execution_shows_nothing(shown):
    assert shown(Execution.from_json({})) == []


def test_single_bundle_is_the_main_result():
    # frontends that ask for one bundle (not IPython's display) get the main result
    bundle = cell()._repr_mimebundle_()
    assert bundle == {"text/plain": "42"}
