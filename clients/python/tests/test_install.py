"""`pip install ./clients/python` works offline: no index, nothing fetched, no source-tree litter.

pyproject.toml declares no build requirements and build_backend.py (standard library only)
writes the wheel, so pip installs from the folder with `--no-index`, with or without build
isolation. Each install goes into a temporary --target and the package is imported from
there by a fresh interpreter (not from this checkout). No daemon needed.
"""
import os
import subprocess
import sys

import pytest

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tree(path):
    out = set()
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        out.update(os.path.relpath(os.path.join(root, f), path) for f in files
                   if not f.endswith(".pyc"))
    return out


@pytest.mark.parametrize("isolation", [["--no-build-isolation"], []], ids=["no-isolation", "isolated"])
def test_offline_install_into_target(tmp_path, isolation):
    before = tree(SDK)
    target = tmp_path / "site"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", *isolation,
                        "--target", str(target), SDK],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    check = ("import importlib.metadata as m, sandboxd; "
             "print(sandboxd.__file__); print(m.version('sandboxd')); "
             "print(sandboxd.Sandbox.__name__, sandboxd.__version__)")
    r = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                       cwd=str(tmp_path), env=dict(env, PYTHONPATH=str(target)), timeout=60)
    assert r.returncode == 0, r.stderr
    where, version, names = r.stdout.splitlines()
    assert where == str(target / "sandboxd" / "__init__.py")
    assert version == "0.1.0"
    assert names == "Sandbox 0.1.0"
    assert tree(SDK) == before  # nothing written into the source tree (no build/, egg-info)


def test_wheel_lists_every_module_with_hashes(tmp_path):
    sys.path.insert(0, SDK)
    try:
        import build_backend
    finally:
        sys.path.remove(SDK)
    import zipfile
    name = build_backend.build_wheel(str(tmp_path))
    assert name == "sandboxd-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / name) as zf:
        names = set(zf.namelist())
        record = zf.read("sandboxd-0.1.0.dist-info/RECORD").decode()
        metadata = zf.read("sandboxd-0.1.0.dist-info/METADATA").decode()
    modules = {"sandboxd/" + f for f in os.listdir(os.path.join(SDK, "sandboxd")) if f.endswith(".py")}
    assert modules <= names
    for m in modules:
        assert m + ",sha256=" in record
    assert "Name: sandboxd\nVersion: 0.1.0\n" in metadata
