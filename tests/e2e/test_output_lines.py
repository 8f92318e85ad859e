"""Output as users expect it (docs/api.md "Output ordering"): print() is one stdout chunk
with its newline, and a line written by one writer is never split by bytes of another
(Python-level output, os.write to fd 1, child processes), in Python and JavaScript."""
import os
import re

import pytest

from sbxtest import Daemon, Sandbox, context, run


@pytest.fixture(scope="module")
def d():
    daemon = Daemon()
    yield daemon
    assert daemon.stop() == 0, daemon.logs().decode(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def sb(d):
    s = Sandbox(d, "lines")
    yield s
    s.delete()


# The mixing tests wait as long as it takes for the rest of a line: on a loaded machine a
# writer (seq between two blocks) may pause longer than the default wait, and its line
# is then passed on in two pieces by design (see docs/api.md "Output ordering").
@pytest.fixture(scope="module")
def dl():
    daemon = Daemon(*os.environ.get("LINES_FLAGS", "--output-line-wait-ms 60000").split())
    yield daemon
    assert daemon.stop() == 0, daemon.logs().decode(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def sl(dl):
    s = Sandbox(dl, "lines-mix")
    yield s
    s.delete()


def check_lines(chunks, pattern, expected):
    """Every line of the joined chunks is one known whole line, each exactly once, and
    every chunk is whole lines."""
    text = "".join(chunks)
    assert text.endswith("\n"), text[-200:]
    seen = []
    for line in text[:-1].split("\n"):
        m = re.fullmatch(pattern, line)
        assert m, "a line made of two writers: %r" % line
        seen.append(line)
    assert sorted(seen) == sorted(expected)
    assert all(c.endswith("\n") for c in chunks), [c for c in chunks if not c.endswith("\n")][:3]


def test_print_is_one_chunk_with_its_newline(d, sb):
    out = run(d, sb.id, "print('hello')\nprint('a', 2, sep='-')\nimport sys\n"
              "print('oops', file=sys.stderr)")
    assert out["logs"]["stdout"] == ["hello\n", "a-2\n"]
    assert out["logs"]["stderr"] == ["oops\n"]
    events = run(d, sb.id, "print('one')\nprint('two')", stream=True)
    assert [e[2]["text"] for e in events if e[0] == "stdout"] == ["one\n", "two\n"]


def test_a_partial_line_still_shows_as_it_is_printed(d, sb):
    events = run(d, sb.id, "import os, time\nprint('step 1...', end='')\n"
                 "os.write(1, b'fd part')\ntime.sleep(5)\nprint(' ok')", stream=True)
    texts = [e[2]["text"] for e in events if e[0] == "stdout"]
    # both partial lines were passed on long before the rest came (5 s later)
    assert sorted(texts[:2]) == ["fd part", "step 1..."] and texts[2:] == [" ok\n"], texts


PY_WRITERS = r"""
import os, subprocess, threading
N = %(n)d
def py(t):
    for i in range(N):
        print('py%%d-%%d-' %% (t, i) + 'p' * (i %% 61))
def fd(t):
    for i in range(N):
        os.write(1, ('fd%%d-%%d-' %% (t, i) + 'f' * (i %% 53) + '\n').encode())
sh = 'i=0; while [ $i -lt %%d ]; do echo sh%%d-$i-ssss; i=$((i+1)); done'
procs = [subprocess.Popen(['sh', '-c', sh %% (N, k)]) for k in range(2)]
ts = [threading.Thread(target=py, args=(t,)) for t in range(3)]
ts += [threading.Thread(target=fd, args=(t,)) for t in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
[p.wait() for p in procs]
"""


def test_concurrent_writers_never_mix_lines(dl, sl):
    n = 400
    cid = context(dl, sl.id)
    out = run(dl, sl.id, PY_WRITERS % {"n": n}, context=cid, timeoutMs=300000)
    assert out["error"] is None, out["error"]
    expected = ["py%d-%d-" % (t, i) + "p" * (i % 61) for t in range(3) for i in range(n)]
    expected += ["fd%d-%d-" % (t, i) + "f" * (i % 53) for t in range(2) for i in range(n)]
    expected += ["sh%d-%d-ssss" % (k, i) for k in range(2) for i in range(n)]
    check_lines(out["logs"]["stdout"], r"(py\d-\d+-p*|fd\d-\d+-f*|sh\d-\d+-ssss)", expected)


BLOCKS = r"""
import subprocess, threading
def py():
    for i in range(%(n)d):
        print('py-%%d-' %% i + 'p' * (i %% 71))
t = threading.Thread(target=py)
t.start()
# seq writes its stdout in blocks of 4096 bytes, cut anywhere in a line
subprocess.run(['seq', '-f', 'seq-%%g-qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq', '1', '%(m)d'])
t.join()
"""


def test_a_block_buffered_child_and_print_never_mix_lines(dl, sl):
    n, m = 3000, 20000
    cid = context(dl, sl.id)
    out = run(dl, sl.id, BLOCKS % {"n": n, "m": m}, context=cid, timeoutMs=300000)
    assert out["error"] is None, out["error"]
    expected = ["py-%d-" % i + "p" * (i % 71) for i in range(n)]
    expected += ["seq-%d-" % i + "q" * 40 for i in range(1, m + 1)]
    check_lines(out["logs"]["stdout"], r"(py-\d+-p*|seq-\d+-q+)", expected)


JS_WRITERS = r"""
const { spawn } = require('child_process');
const N = %(n)d;
const sh = (k) => new Promise((resolve) => {
  const p = spawn('sh', ['-c', `i=0; while [ $i -lt ${N} ]; do echo sh${k}-$i-ssss; i=$((i+1)); done`],
                  { stdio: ['ignore', 'inherit', 'inherit'] });
  p.on('exit', resolve);
});
const js = async (t) => {
  for (let i = 0; i < N; i++) {
    console.log(`js${t}-${i}-` + 'j'.repeat(i %% 47));
    if (i %% 10 === 0) await new Promise((r) => setImmediate(r));
  }
};
await Promise.all([sh(0), sh(1), js(0), js(1), js(2)]);
"""


def test_javascript_writers_never_mix_lines(dl, sl):
    n = 400
    cid = context(dl, sl.id, language="javascript")
    out = run(dl, sl.id, JS_WRITERS % {"n": n}, context=cid, timeoutMs=300000)
    assert out["error"] is None, out["error"]
    expected = ["js%d-%d-" % (t, i) + "j" * (i % 47) for t in range(3) for i in range(n)]
    expected += ["sh%d-%d-ssss" % (k, i) for k in range(2) for i in range(n)]
    check_lines(out["logs"]["stdout"], r"(js\d-\d+-j*|sh\d-\d+-ssss)", expected)


def test_javascript_console_log_comes_in_whole_lines(d, sb):
    # console.log writes fd 1 itself: its lines come as read, several to a chunk maybe,
    # but never a line without its newline
    cid = context(d, sb.id, language="javascript")
    out = run(d, sb.id, "console.log('hello'); console.log('a', 2); console.error('oops')",
              context=cid)
    assert "".join(out["logs"]["stdout"]) == "hello\na 2\n"
    assert all(c.endswith("\n") for c in out["logs"]["stdout"]), out["logs"]
    assert out["logs"]["stderr"] == ["oops\n"]


def test_long_and_unfinished_lines_are_all_delivered(d, sb):
    # a line past the 64 KiB hold goes on in pieces, an unfinished one before the end:
    # nothing is lost or reordered
    out = run(d, sb.id, "import os, sys\nos.write(1, b'x' * 200000 + b'\\n')\n"
              "for i in range(100):\n    os.write(1, b'%d,' % i)\n"
              "os.write(2, b'no newline at the end')")
    assert "".join(out["logs"]["stdout"]) == "x" * 200000 + "\n" + "".join(
        "%d," % i for i in range(100))
    assert out["logs"]["stderr"] == ["no newline at the end"]
