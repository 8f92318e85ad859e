"""Files and background processes through the SDK.

These routes arrive in a separate change to the daemon: while it answers them with
NOT_FOUND "no such route", these tests are skipped with that reason (visible in -rs output),
never passed silently.
"""
import time

import pytest

from sandboxd import (ConflictError, LimitReachedError, NotFoundError, ProcessNotFoundError,
                      SandboxFileNotFoundError)


def _require(sandbox, probe):
    try:
        probe()
    except NotFoundError as e:
        if e.code == "NOT_FOUND" and "no such route" in e.message:
            pytest.skip("daemon does not serve this route yet: " + e.message)


def test_files_round_trip(sandbox):
    _require(sandbox, lambda: sandbox.list_files("/workspace"))
    info = sandbox.write_file("/workspace/dir/a.txt", "hello")
    assert info.size == 5
    assert sandbox.read_file("/workspace/dir/a.txt") == b"hello"
    assert sandbox.read_file("dir/a.txt", text=True) == "hello"
    blob = bytes(range(256)) * 100
    sandbox.write_file("/workspace/blob.bin", blob)
    assert sandbox.read_file("/workspace/blob.bin") == blob
    names = {e.name: e for e in sandbox.list_files("/workspace")}
    assert names["dir"].type == "dir" and names["blob.bin"].size == len(blob)
    # the code sees the same files
    assert sandbox.run_code("open('/workspace/dir/a.txt').read()").text == "'hello'"
    sandbox.mkdir("/workspace/new/sub")
    sandbox.move_file("/workspace/dir/a.txt", "/workspace/new/sub/b.txt")
    assert sandbox.read_file("/workspace/new/sub/b.txt") == b"hello"
    with pytest.raises(SandboxFileNotFoundError):
        sandbox.read_file("/workspace/dir/a.txt")
    sandbox.delete_file("/workspace/new/sub/b.txt")
    with pytest.raises(SandboxFileNotFoundError) as info:
        sandbox.read_file("/workspace/new/sub/b.txt")
    assert info.value.status == 404


def test_background_process(sandbox):
    _require(sandbox, lambda: sandbox.list_processes())
    p = sandbox.start_process("for i in 1 2 3; do echo line$i; sleep 0.2; done; echo bye >&2")
    assert p.status == "running" and p.id
    assert p.id in [q.id for q in sandbox.list_processes()]
    out = []
    events = list(sandbox.stream_process_logs(p.id, on_stdout=out.append))
    assert "".join(out) == "line1\nline2\nline3\n"
    assert events[-1][0] not in ("stdout", "stderr")   # a terminal event ends the stream
    logs = sandbox.get_process_logs(p.id)
    assert logs.stdout == "line1\nline2\nline3\n" and logs.stderr == "bye\n"
    q = sandbox.start_process("sleep 60")
    sandbox.kill_process(q.id)

    def status():   # a killed process may be reported as ended or be forgotten
        try:
            return sandbox.get_process(q.id).status
        except ProcessNotFoundError:
            return "gone"
    deadline = time.time() + 5
    while time.time() < deadline and status() == "running":
        time.sleep(0.1)
    assert status() != "running"
    assert q.id not in [p.id for p in sandbox.list_processes() if p.status == "running"]
    with pytest.raises(ProcessNotFoundError):
        sandbox.get_process_logs("proc-nope")


def test_write_stdin(sandbox):
    p = sandbox.start_process("cat", stdin=True)
    w = sandbox.write_stdin(p.id, "one\n")
    assert (w.id, w.accepted, w.open) == (p.id, 4, True)
    sandbox.write_stdin(p.id, b"two\n\x00")        # bytes travel as base64
    assert sandbox.write_stdin(p.id, "three\n", eof=True).open is False
    deadline = time.time() + 30
    while sandbox.get_process(p.id).status == "running":
        assert time.time() < deadline, "cat did not end after eof"
        time.sleep(0.1)
    assert sandbox.get_process(p.id).exitCode == 0
    assert sandbox.get_process_logs(p.id).stdout == "one\ntwo\n\x00three\n"
    with pytest.raises(ConflictError):
        sandbox.write_stdin(p.id, "late")
    idle = sandbox.start_process("sleep 1000", stdin=True)
    with pytest.raises(LimitReachedError) as e:
        for _ in range(100):
            sandbox.write_stdin(idle.id, "x" * (1 << 18))
    assert "--process-stdin-bytes" in str(e.value)
    sandbox.kill_process(idle.id)


def test_full_workspace_is_disk_full_error(daemon):
    from sandboxd import DiskFullError, InsufficientStorageError, Sandbox
    sbx = Sandbox(daemon.url, "t-disk-full", limits={"diskMb": 1})
    try:
        with pytest.raises(DiskFullError) as e:
            sbx.write_file("/workspace/big.bin", b"x" * (3 << 20))
        assert isinstance(e.value, InsufficientStorageError) and e.value.status == 507
        assert "diskMb" in e.value.message
        with pytest.raises(SandboxFileNotFoundError):
            sbx.read_file("/workspace/big.bin")  # nothing was put in place
    finally:
        sbx.destroy()
