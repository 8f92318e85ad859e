"""End-to-end tests of packages (docs/packages.md): pip installs into the sandbox's own user
site under /workspace, importable at once by every Python context of that sandbox (one made
before the install included), by commands, and by nobody else; the operator's read-only
site dirs (--python-site-dir); the package list of /v1/health; npm in /workspace.

Nothing here reaches the internet: the wheel is built by hand (zipfile), the index is a
PEP 503 "simple" page served by http.server on the host's loopback, reached by a sandbox
with network "host" on a daemon started with --allow-host-network.
"""
import http.server
import os
import shutil
import site
import subprocess
import tempfile
import threading

import pytest

from sbxtest import Sandbox, context, run
from wheels import make_wheel


def put_file(daemon, sid, path, data):
    status, _, body = daemon.request("PUT", "/v1/sandboxes/%s/files/%s" % (sid, path), data)
    assert status == 201, body


def py(daemon, sid, code, cid):
    """stdout of code run in context cid (no error allowed)."""
    out = run(daemon, sid, code, context=cid, timeoutMs=120000)
    assert out["error"] is None, out
    return "".join(out["logs"]["stdout"])


def import_error(daemon, sid, code, cid):
    out = run(daemon, sid, code, context=cid)
    return out["error"] and out["error"]["name"]


@pytest.fixture
def index():
    """A PEP 503 index on 127.0.0.1 serving one wheel: yields (url, add(name, version, body))."""
    root = tempfile.mkdtemp(prefix="sbx-index-")

    def add(name, version, body):
        fname, data = make_wheel(name, version, body)
        d = os.path.join(root, "simple", name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write('<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>'
                    % (fname, fname))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/simple" % server.server_address[1], add
    server.shutdown()
    server.server_close()
    shutil.rmtree(root)


def host_site_state():
    """What the host's Python would import from: its site dirs' listings."""
    dirs = site.getsitepackages() + [site.getusersitepackages()]
    return {d: sorted(os.listdir(d)) if os.path.isdir(d) else None for d in dirs}


def test_pip_install_from_an_index_reaches_every_context_of_the_sandbox_only(make_daemon, index):
    url, add = index
    add("sbxpkgidx", "1.0", "WHO = 'index'\n")
    before = host_site_state()
    d = make_daemon("--allow-host-network")
    sb = Sandbox(d, "pip-index", network="host")
    other = Sandbox(d, "pip-other")
    early = context(d, sb.id)   # made before the install
    assert import_error(d, sb.id, "import sbxpkgidx", early) == "ModuleNotFoundError"
    out = sb.exec("pip install --index-url %s sbxpkgidx" % url, timeoutMs=120000)
    assert out["exitCode"] == 0, out
    assert "Successfully installed sbxpkgidx-1.0" in out["stdout"], out
    # the user site in the workspace, not the system's
    where = sb.sh("python3 -c 'import sbxpkgidx; print(sbxpkgidx.__file__)'").strip()
    assert where.startswith("/workspace/.local/lib/python3."), where
    assert py(d, sb.id, "import sbxpkgidx; print(sbxpkgidx.WHO)", early) == "index\n"
    late = context(d, sb.id)
    assert py(d, sb.id, "import sbxpkgidx; print(sbxpkgidx.__file__)", late).strip() == where
    oc = context(d, other.id)
    assert import_error(d, other.id, "import sbxpkgidx", oc) == "ModuleNotFoundError"
    assert other.exec("python3 -c 'import sbxpkgidx'")["exitCode"] == 1
    assert host_site_state() == before
    assert subprocess.run(["/usr/bin/python3", "-c", "import sbxpkgidx"],
                          capture_output=True).returncode == 1


def test_pip_magic_and_bang_install_offline_wheels(daemon):
    sb = Sandbox(daemon, "pip-offline")   # network none
    for name in ("sbxmagic", "sbxbang", "sbxexec"):
        fname, data = make_wheel(name, "2.0", "WHO = %r\n" % name)
        put_file(daemon, sb.id, "wheels/" + fname, data)
    cid = context(daemon, sb.id)
    other = context(daemon, sb.id)
    assert import_error(daemon, sb.id, "import sbxmagic", other) == "ModuleNotFoundError"
    out = py(daemon, sb.id, "%pip install /workspace/wheels/sbxmagic-2.0-py3-none-any.whl", cid)
    assert "Successfully installed sbxmagic-2.0" in out, out
    assert py(daemon, sb.id, "import sbxmagic; print(sbxmagic.WHO)", cid) == "sbxmagic\n"
    out = py(daemon, sb.id, "!pip install /workspace/wheels/sbxbang-2.0-py3-none-any.whl", cid)
    assert "Successfully installed sbxbang-2.0" in out, out
    assert py(daemon, sb.id, "import sbxbang; print(sbxbang.WHO)", cid) == "sbxbang\n"
    out = sb.exec("pip install /workspace/wheels/sbxexec-2.0-py3-none-any.whl", timeoutMs=120000)
    assert out["exitCode"] == 0, out
    code = "import sbxmagic, sbxbang, sbxexec; print(sbxmagic.WHO, sbxbang.WHO, sbxexec.WHO)"
    assert py(daemon, sb.id, code, other) == "sbxmagic sbxbang sbxexec\n"
    listed = sb.sh("pip list --user --format=freeze")
    assert {"sbxmagic==2.0", "sbxbang==2.0", "sbxexec==2.0"} <= set(listed.split()), listed
    sb.delete()


@pytest.fixture
def site_dir():
    """An operator's site dir (readable by everyone, as the daemon requires when root)."""
    d = tempfile.mkdtemp(prefix="sbx-site-")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "sbxopmod.py"), "w") as f:
        f.write("WHO = 'operator'\n")
    info = os.path.join(d, "sbxopmod-3.1.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: sbxopmod\nVersion: 3.1\n")
    for root, dirs, files in os.walk(d):
        for n in dirs:
            os.chmod(os.path.join(root, n), 0o755)
        for n in files:
            os.chmod(os.path.join(root, n), 0o644)
    yield d
    shutil.rmtree(d)


def test_operator_site_dir_is_importable_everywhere_and_in_health(make_daemon, site_dir):
    # a second dir with many distributions: the flag repeats, and health grows past 4 KiB
    many = tempfile.mkdtemp(prefix="sbx-site-many-")
    os.chmod(many, 0o755)
    names = {"sbx-many-distribution-number-%03d" % i: "1.%d" % i for i in range(150)}
    for name, version in names.items():
        info = os.path.join(many, "%s-%s.dist-info" % (name.replace("-", "_"), version))
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    d = make_daemon("--python-site-dir", site_dir, "--python-site-dir=" + many)
    status, health = d.json("GET", "/v1/health")
    assert status == 200, health
    pk = health["packages"]
    assert pk["python"]["sbxopmod"] == "3.1"
    assert pk["python"]["numpy"] and pk["python"]["pandas"] and pk["python"]["matplotlib"]
    assert pk["pythonSiteDirs"] == [{"path": "/opt/python-site/0",
                                     "packages": {"sbxopmod": "3.1"}},
                                    {"path": "/opt/python-site/1", "packages": names}]
    assert all(pk["python"][n] == v for n, v in names.items())
    for sid in ("site-a", "site-b"):
        sb = Sandbox(d, sid)
        cid = context(d, sid)
        assert py(d, sid, "import sbxopmod; print(sbxopmod.WHO, sbxopmod.__file__)", cid) == \
            "operator /opt/python-site/0/sbxopmod.py\n"
        assert sb.sh("python3 -c 'import sbxopmod; print(sbxopmod.WHO)'") == "operator\n"
        assert sb.sh("echo $PYTHONPATH") == "/opt/python-site/0:/opt/python-site/1\n"
        sb.delete()
    # a PYTHONPATH of the sandbox's own keeps the operator's dirs after its entries
    sb = Sandbox(d, "site-own-path", env={"PYTHONPATH": "/workspace/lib"})
    sb.sh("mkdir -p /workspace/lib && echo 'WHO = 1' > /workspace/lib/sbxown.py")
    assert sb.sh("echo $PYTHONPATH") == "/workspace/lib:/opt/python-site/0:/opt/python-site/1\n"
    cid = context(d, sb.id)
    assert py(d, sb.id, "import sbxown, sbxopmod; print(sbxopmod.WHO)", cid) == "operator\n"
    out = sb.sh("python3 -c 'import sbxopmod, os; print(os.environ[\"PYTHONPATH\"])'",
                env={"PYTHONPATH": "/x"})   # a command's own env too
    assert out == "/x:/opt/python-site/0:/opt/python-site/1\n", out
    sb.delete()
    shutil.rmtree(many)


def test_health_lists_the_data_stack_without_site_dirs(daemon):
    status, health = daemon.json("GET", "/v1/health")
    assert status == 200
    pk = health["packages"]
    for name in ("numpy", "pandas", "matplotlib", "ipython"):
        assert any(k.lower() == name for k in pk["python"]), (name, sorted(pk["python"]))
    assert pk["pythonSiteDirs"] == []


def test_npm_install_of_a_local_tarball_serves_require_and_import(daemon):
    sb = Sandbox(daemon, "npm-local")
    tmp = tempfile.mkdtemp(prefix="sbx-npm-")
    try:
        pkg = os.path.join(tmp, "sbx-tiny")
        os.mkdir(pkg)
        with open(os.path.join(pkg, "package.json"), "w") as f:
            f.write('{"name":"sbx-tiny","version":"1.2.3","main":"index.js"}\n')
        with open(os.path.join(pkg, "index.js"), "w") as f:
            f.write("exports.who = 'tiny';\n")
        out = subprocess.run(["npm", "pack", "--silent", pkg], cwd=tmp, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        with open(os.path.join(tmp, out.stdout.strip().splitlines()[-1]), "rb") as f:
            put_file(daemon, sb.id, "sbx-tiny-1.2.3.tgz", f.read())
    finally:
        shutil.rmtree(tmp)
    out = sb.exec("npm install --offline --no-audit --no-fund ./sbx-tiny-1.2.3.tgz",
                  timeoutMs=120000)
    assert out["exitCode"] == 0, out
    cid = context(daemon, sb.id, language="javascript")
    out = run(daemon, sb.id, "require('sbx-tiny').who", context=cid)
    assert out["error"] is None and out["results"][0]["text"] == "'tiny'", out
    out = run(daemon, sb.id, "import { who } from 'sbx-tiny';\nwho", context=cid)
    assert out["error"] is None and out["results"][0]["text"] == "'tiny'", out
    sb.delete()
