"""End-to-end tests of `sbx`, the command line client, against a real sandboxd.

Each test runs build/sbx as a user would (SANDBOXD_URL pointing at the test daemon) and
checks what the user sees: output streaming live, image files written by --save, exit
statuses, and the files API through `sbx cp`. While the daemon does not serve the files
routes yet, the cp test is skipped with that reason (shown by pytest -rs), never passed.
"""
import os
import select
import subprocess
import time

import pytest

from sbxtest import BUILD

SBX = os.path.join(BUILD, "sbx")


@pytest.fixture
def sbx(daemon):
    """sbx(*args, input=None) -> CompletedProcess, talking to the test daemon."""
    env = dict(os.environ, SANDBOXD_URL="http://127.0.0.1:%d" % daemon.port)
    env.pop("SANDBOXD_TOKEN", None)

    def run(*args, input=None, timeout=60):
        return subprocess.run([SBX, *args], input=input, capture_output=True, timeout=timeout,
                              env=env)
    run.env = env
    return run


def test_help_lists_every_option(sbx):
    r = sbx("--help")
    assert r.returncode == 0
    text = r.stdout.decode()
    for opt in ("--url", "--token", "--sandbox", "--language", "--context", "--env",
                "--timeout", "--file", "--save", "--cwd", "--stdin", "--json",
                "run", "repl", "exec", "ls", "contexts", "rm", "cp"):
        assert opt in text, opt
    assert sbx("frobnicate").returncode == 2
    assert sbx("run").returncode == 2
    assert sbx("run", "--timeout", "soon", "1").returncode == 2


def test_run_streams_stdout_live(sbx):
    code = ("import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
            "    time.sleep(0.5)\n6 * 7")
    start = time.monotonic()
    p = subprocess.Popen([SBX, "-s", "cli-live", "run", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=sbx.env)
    first = None
    out = b""
    while True:
        ready, _, _ = select.select([p.stdout], [], [], 10)
        assert ready, "no output within 10 s"
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            break
        if first is None and b"tick 0" in out + chunk:
            first = time.monotonic() - start
        out += chunk
    p.wait(30)
    total = time.monotonic() - start
    assert p.returncode == 0, p.stderr.read()
    assert out.decode() == "tick 0\ntick 1\ntick 2\n42\n"
    assert first is not None and first < total - 0.7, (first, total)


def test_run_error_exit_status_and_traceback(sbx):
    r = sbx("-s", "cli-err", "run", "print('before')\ndef f():\n    return 1/0\nf()")
    assert r.returncode == 1
    assert r.stdout.decode() == "before\n"
    err = r.stderr.decode()
    assert "Traceback" in err and "ZeroDivisionError" in err and "division by zero" in err
    assert "f()" in err


def test_run_sources_languages_env_timeout(sbx, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import os\nprint(os.environ['WHO'])\n")
    r = sbx("-s", "cli-src", "run", "-f", str(script), "-e", "WHO=file")
    assert (r.returncode, r.stdout) == (0, b"file\n"), r.stderr
    r = sbx("-s", "cli-src", "run", "-", input=b"print('from stdin')")
    assert (r.returncode, r.stdout) == (0, b"from stdin\n"), r.stderr
    r = sbx("-s", "cli-src", "run", "-l", "javascript", "console.log('js'); 40 + 2")
    assert (r.returncode, r.stdout) == (0, b"js\n42\n"), r.stderr
    r = sbx("-s", "cli-src", "run", "-l", "typescript", "const n: number = 2; n * 21")
    assert (r.returncode, r.stdout) == (0, b"42\n"), r.stderr
    r = sbx("-s", "cli-src", "run", "--timeout", "300", "import time; time.sleep(5)")
    assert r.returncode == 1 and b"TimeoutError" in r.stderr
    r = sbx("-s", "cli-src", "run", "-e", "NOEQUALS", "1")
    assert r.returncode == 2


def test_run_save_writes_png(sbx, tmp_path):
    out = tmp_path / "plots"
    r = sbx("-s", "cli-plot", "run", "--save", str(out),
            "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    assert r.returncode == 0, r.stderr
    files = sorted(os.listdir(out))
    assert files == ["result-1.png"]
    data = (out / "result-1.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    assert b"saved" in r.stderr
    # without --save the user is told, and nothing is written
    r = sbx("-s", "cli-plot", "run", "import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()")
    assert r.returncode == 0 and b"--save" in r.stderr


def test_named_context_and_listing(sbx, daemon):
    status, ctx = daemon.json("PUT", "/v1/sandboxes/cli-ctx")
    status, ctx = daemon.json("POST", "/v1/sandboxes/cli-ctx/contexts", {"language": "python"})
    assert status == 201
    assert sbx("-s", "cli-ctx", "run", "-c", ctx["id"], "v = 5").returncode == 0
    r = sbx("-s", "cli-ctx", "run", "-c", ctx["id"], "v + 1")
    assert r.stdout == b"6\n"
    r = sbx("-s", "cli-ctx", "contexts")
    assert r.returncode == 0 and ctx["id"].encode() in r.stdout
    r = sbx("ls")
    assert r.returncode == 0 and b"cli-ctx" in r.stdout
    assert b'"sandboxes"' in sbx("ls", "--json").stdout
    r = sbx("-s", "cli-ctx", "run", "-c", "ctx-nope", "1")
    assert r.returncode == 3 and b"CONTEXT_NOT_FOUND" in r.stderr
    assert sbx("rm", "cli-ctx").returncode == 0
    r = sbx("rm", "cli-ctx")
    assert r.returncode == 3 and b"SANDBOX_NOT_FOUND" in r.stderr
    assert sbx("-s", "cli-ctx", "contexts").returncode == 3


def test_exec_streams_and_exits_with_the_commands_status(sbx):
    r = sbx("-s", "cli-exec", "exec", "echo out; echo err >&2; exit 7")
    assert r.returncode == 7
    assert (r.stdout, r.stderr) == (b"out\n", b"err\n")
    r = sbx("-s", "cli-exec", "exec", "ls", "-d", "/workspace")   # words joined, -d not ours
    assert (r.returncode, r.stdout) == (0, b"/workspace\n"), r.stderr
    r = sbx("-s", "cli-exec", "exec", "--cwd", "/tmp", "-e", "A=1", "echo $A; pwd")
    assert r.stdout == b"1\n/tmp\n"
    r = sbx("-s", "cli-exec", "exec", "-i", "wc -c", input=b"12345")
    assert r.stdout.strip() == b"5"


def test_repl_piped(sbx):
    cells = b"x = 5\nfor i in range(2):\n    print(i * x)\n\nx * 2\ndef f(\n    a):\n    return a + 1\n\nf(1)\n1/0\n.exit\n"
    r = sbx("-s", "cli-repl", "repl", input=cells)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"0\n5\n10\n2\n"
    assert b"ZeroDivisionError" in r.stderr
    r = sbx("-s", "cli-repl", "repl", "-l", "javascript",
            input=b"let a = 3\nfunction g() {\n  return a * 2\n}\n\ng()\n")
    assert (r.returncode, r.stdout) == (0, b"6\n"), r.stderr


def test_unreachable_daemon(sbx):
    r = sbx("--url", "http://127.0.0.1:1", "ls")
    assert r.returncode == 3 and b"127.0.0.1" in r.stderr


def test_cp_both_ways(sbx, daemon, tmp_path):
    status, _ = daemon.json("PUT", "/v1/sandboxes/cli-cp")
    status, body = daemon.json("GET", "/v1/sandboxes/cli-cp/files/")
    if status == 404 and body and body.get("code") == "NOT_FOUND":
        pytest.skip("daemon does not serve the files routes yet: " + body.get("message", ""))
    local = tmp_path / "up.bin"
    payload = bytes(range(256)) * 64
    local.write_bytes(payload)
    r = sbx("cp", str(local), "cli-cp:/workspace/data/up.bin")
    assert r.returncode == 0, r.stderr
    r = sbx("-s", "cli-cp", "exec", "wc -c < /workspace/data/up.bin")
    assert r.stdout.strip() == str(len(payload)).encode()
    back = tmp_path / "back.bin"
    r = sbx("cp", "cli-cp:/workspace/data/up.bin", str(back))
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == payload
    r = sbx("cp", "cli-cp:data/up.bin", str(tmp_path))           # into a directory
    assert r.returncode == 0 and (tmp_path / "up.bin").read_bytes() == payload
    r = sbx("cp", "-", "cli-cp:/workspace/s.txt", input=b"from stdin")
    assert r.returncode == 0, r.stderr
    assert sbx("cp", "cli-cp:/workspace/s.txt", "-").stdout == b"from stdin"
    r = sbx("cp", "cli-cp:/workspace/missing", str(tmp_path / "m"))
    assert r.returncode == 3 and b"FILE_NOT_FOUND" in r.stderr
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.sbx-part").exists()
    assert sbx("cp", "a", "b").returncode == 2


def test_run_ctrl_c_interrupts_the_run(make_daemon):
    """Ctrl-C in `sbx run` interrupts the run in the sandbox (DELETE of the execution): with
    a re-attach grace of 10 minutes only that explicit interrupt frees the context."""
    import json
    import signal
    d = make_daemon("--reattach-grace-ms", "600000")
    status, _ = d.json("PUT", "/v1/sandboxes/cli-ctrl-c")
    status, ctx = d.json("POST", "/v1/sandboxes/cli-ctrl-c/contexts", {})
    assert status == 201
    env = dict(os.environ, SANDBOXD_URL="http://127.0.0.1:%d" % d.port)
    env.pop("SANDBOXD_TOKEN", None)
    p = subprocess.Popen([SBX, "-s", "cli-ctrl-c", "--context", ctx["id"], "run",
                          "import time\nprint('go', flush=True)\ntime.sleep(600)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert p.stdout.readline() == b"go\n"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1 and b"KeyboardInterrupt" in err, err
    status, c = d.json("GET", "/v1/sandboxes/cli-ctrl-c/contexts/" + ctx["id"])
    assert c["state"] == "idle"
    status, q = d.json("GET", "/v1/sandboxes/cli-ctrl-c/contexts/%s/queue" % ctx["id"])
    assert q == {"running": None, "queued": []}, json.dumps(q)
