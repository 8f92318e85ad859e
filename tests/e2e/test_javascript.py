"""End-to-end tests of JavaScript and TypeScript contexts through the daemon (issue 5)."""
import threading
import time

import pytest

from sbxtest import Daemon, Sandbox, context, main_text, run


@pytest.fixture(scope="module")
def d():
    daemon = Daemon("--kill-grace-ms", "700")
    yield daemon
    assert daemon.stop() == 0


@pytest.fixture(scope="module")
def sb(d):
    s = Sandbox(d, "js")
    yield s
    s.delete()


@pytest.fixture
def js(d, sb):
    cid = context(d, sb.id, language="javascript")
    yield cid
    d.json("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sb.id, cid))


@pytest.fixture
def ts(d, sb):
    cid = context(d, sb.id, language="typescript")
    yield cid
    d.json("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sb.id, cid))


def test_health_reports_node(d):
    h = d.json("GET", "/v1/health")[1]
    for lang in ("javascript", "typescript"):
        assert h["languages"][lang]["available"] is True
        assert h["languages"][lang]["version"].split(".")[0].isdigit()


def test_state_persists_and_redeclaration_wins(d, sb, js):
    run(d, sb.id, "const a = 1; let b = 2; var c = 3; function f() { return 4 }\n"
        "class K { v() { return 5 } }", context=js)
    out = run(d, sb.id, "a + b + c + f() + new K().v()", context=js)
    assert main_text(out) == "15"
    out = run(d, sb.id, "const a = 10; a", context=js)
    assert out["error"] is None and main_text(out) == "10"


def test_top_level_await_and_promises(d, sb, js):
    out = run(d, sb.id, "const v = await new Promise(r => setTimeout(() => r(7), 50)); v * 2",
              context=js)
    assert main_text(out) == "14"
    out = run(d, sb.id, "Promise.resolve('p')", context=js)
    assert main_text(out) == "'p'"
    out = run(d, sb.id, "await Promise.reject(new TypeError('nope'))", context=js)
    assert out["error"]["name"] == "TypeError" and out["error"]["message"] == "nope"


def test_results(d, sb, js):
    assert main_text(run(d, sb.id, "'abc'", context=js)) == "'abc'"
    out = run(d, sb.id, "({a: [1, 2], b: 'x'})", context=js)
    assert out["results"][0]["json"] == {"a": [1, 2], "b": "x"}
    assert run(d, sb.id, "undefined", context=js)["results"] == []
    assert run(d, sb.id, "let z = 3", context=js)["results"] == []


def test_modules(d, sb, js):
    out = run(d, sb.id, "const fs = require('fs'); typeof fs.readFileSync", context=js)
    assert main_text(out) == "'function'"
    out = run(d, sb.id, "import path from 'path'; path.join('a', 'b')", context=js)
    assert main_text(out) == "'a/b'"
    out = run(d, sb.id, "const os = await import('os'); typeof os.cpus", context=js)
    assert main_text(out) == "'function'"
    # a package installed in the sandbox, resolved from the context's cwd
    sb.sh("mkdir -p node_modules/hello && echo 'module.exports = () => \"hi\"' > "
          "node_modules/hello/index.js")
    cid = context(d, sb.id, language="javascript")
    assert main_text(run(d, sb.id, "require('hello')()", context=cid)) == "'hi'"


def test_rich_output_and_console(d, sb, js):
    out = run(d, sb.id, "console.log('out'); console.error('err');\n"
              "display({'text/html': '<b>x</b>'}); 1", context=js)
    assert "out\n" in "".join(out["logs"]["stdout"]) and "err\n" in "".join(out["logs"]["stderr"])
    assert out["results"][0]["html"] == "<b>x</b>"
    assert out["results"][-1]["isMainResult"] is True


def test_streaming_console(d, sb, js):
    events = run(d, sb.id, "console.log('a'); await new Promise(r => setTimeout(r, 300));"
                 " console.log('b')", stream=True, context=js)
    kinds = [e[0] for e in events]
    assert kinds[0] == "stdout" and kinds[-1] == "end"
    assert "".join(e[2].get("text", "") for e in events if e[0] == "stdout") == "a\nb\n"


def test_errors(d, sb, js):
    out = run(d, sb.id, "nope + 1", context=js)
    e = out["error"]
    assert e["name"] == "ReferenceError" and "nope" in e["message"]
    assert not any("kernel.js" in line for line in e["traceback"])
    out = run(d, sb.id, "let = = 2", context=js)
    assert out["error"]["name"] == "SyntaxError"
    out = run(d, sb.id, "throw 'plain'", context=js)
    assert out["error"] is not None


def test_typescript(d, sb, ts):
    code = "\n".join([
        "interface P { x: number; y: number }",
        "type Id = string | number",
        "enum Color { Red, Green }",
        "function add(a: number, b: number): number { return a + b }",
        "const p: P = { x: 1, y: 2 }",
        "const id: Id = 'k'",
        "add(p.x, p.y) + Color.Green",
    ])
    assert main_text(run(d, sb.id, code, context=ts)) == "4"
    out = run(d, sb.id, "const q: number = ;", context=ts)
    assert out["error"]["name"] == "SyntaxError"


def test_env_and_cwd(d, sb):
    sb.sh("mkdir -p /workspace/jsdir")
    cid = context(d, sb.id, language="javascript", cwd="/workspace/jsdir", envVars={"C": "1"})
    out = run(d, sb.id, "[process.cwd(), process.env.C, process.env.R]", context=cid,
              envVars={"R": "2"})
    assert out["results"][0]["json"] == ["/workspace/jsdir", "1", "2"]
    out = run(d, sb.id, "process.env.R ?? 'unset'", context=cid)
    assert main_text(out) == "'unset'"
    assert main_text(run(d, sb.id, "process.env.SANDBOXD_LANGUAGE ?? 'hidden'",
                         context=cid)) == "'hidden'"


def test_timeouts(d, sb, js):
    run(d, sb.id, "globalThis.kept = 5", context=js)
    t = time.time()
    out = run(d, sb.id, "while (true) {}", context=js, timeoutMs=400)
    assert out["error"]["name"] == "TimeoutError" and time.time() - t < 5
    assert main_text(run(d, sb.id, "kept", context=js)) == "5"   # state kept
    out = run(d, sb.id, "await new Promise(() => {})", context=js, timeoutMs=400)
    assert out["error"]["name"] == "TimeoutError"
    assert main_text(run(d, sb.id, "kept", context=js)) == "5"
    out = run(d, sb.id, "await null; while (true) {}", context=js, timeoutMs=300)
    assert out["error"]["name"] == "TimeoutError" and out["statePreserved"] is False
    assert main_text(run(d, sb.id, "1 + 1", context=js)) == "2"


def kernels(sb):
    return sb.sh("ps -eo args").count("kernel.js")


def test_delete_busy_context(d, sb):
    before = kernels(sb)
    cid = context(d, sb.id, language="javascript")
    assert kernels(sb) == before + 1
    box = {}
    th = threading.Thread(target=lambda: box.update(
        out=run(d, sb.id, "while (true) {}", context=cid, timeoutMs=0)))
    th.start()
    time.sleep(0.5)
    assert d.json("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sb.id, cid))[0] == 200
    th.join(10)
    assert box["out"]["error"]["name"] == "ContextDied"
    time.sleep(0.3)
    assert kernels(sb) == before          # its process really ended


def test_default_js_context_and_header(d, sb):
    run(d, sb.id, "var shared = 'yes'", language="javascript")
    status, hdrs, body = d.request("POST", "/v1/sandboxes/%s/execute" % sb.id,
                                   {"code": "shared", "language": "javascript"})
    assert status == 200 and hdrs["x-context-id"].startswith("ctx-")
    assert b"'yes'" in body
