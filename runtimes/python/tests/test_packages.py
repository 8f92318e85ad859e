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
