"""packages.activate/refresh: user site and PYTHONPATH entries on sys.path, and a package
that appears after the context started is importable without a restart."""
import os
import sys

from conftest import RUNTIME_DIR

sys.path.insert(0, RUNTIME_DIR)
from sandboxd_runtime import packages  # noqa: E402


def test_user_site_follows_pythonuserbase():
    env = {"PYTHONUSERBASE": "/w/.local", "HOME": "/h"}
    assert packages.user_site(env).startswith("/w/.local/lib/python3.")
    assert packages.user_site({"HOME": "/h"}).startswith("/h/.local/lib/python3.")


def test_a_package_installed_later_is_importable(ctx, tmp_path):
    base, extra = tmp_path / "ub", tmp_path / "opsite"
    extra.mkdir()
    (extra / "opmod_t.py").write_text("V = 'op'\n")
    run = ctx.run("import os, sys\nfrom sandboxd_runtime import packages\n"
                  "packages.activate({'PYTHONUSERBASE': %r, 'PYTHONPATH': %r})\n"
                  "site_dir = packages.user_site({'PYTHONUSERBASE': %r})\n"
                  "try:\n    import latepkg_t\nexcept ImportError:\n    print('missing')\n"
                  "import opmod_t\nprint(opmod_t.V, sys.path.index(site_dir) > "
                  "sys.path.index(%r))" % (str(base), str(extra), str(base), str(extra)))
    assert run.error is None and run.stdout == "missing\nop True\n", (run.error, run.stdout)
    site_dir = packages.user_site({"PYTHONUSERBASE": str(base)})
    os.makedirs(site_dir)
    with open(os.path.join(site_dir, "latepkg_t.py"), "w") as f:
        f.write("V = 'late'\n")
    run = ctx.run("import latepkg_t\nprint(latepkg_t.V)")
    assert run.error is None and run.stdout == "late\n", (run.error, run.stdout)


def test_inventory_lists_system_and_site_dirs(tmp_path):
    import json
    import subprocess
    from conftest import PYTHON
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "alpha-1.0.dist-info").mkdir(parents=True)
    (a / "alpha-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: alpha\nVersion: 1.0\n\nName: not-a-header\n")
    b.mkdir()
    (b / "beta-2.0.egg-info").write_text("Metadata-Version: 1.0\nName: beta\nVersion: 2.0\n")
    script = os.path.join(RUNTIME_DIR, "sandboxd_runtime", "inventory.py")
    out = subprocess.run([PYTHON, "-I", script, str(a), str(b)], capture_output=True,
                         text=True, timeout=60, check=True)
    inv = json.loads(out.stdout)
    assert inv["dirs"] == [{"alpha": "1.0"}, {"beta": "2.0"}]
    assert inv["system"]["numpy"] and "alpha" not in inv["system"]
