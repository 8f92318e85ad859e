"""Everything a context needs that can be done once, before fork.

``preload()`` is idempotent and starts no threads. It:

1. sets ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
   ``NUMEXPR_NUM_THREADS`` and ``NUMEXPR_MAX_THREADS`` to 1 unless already set
   (thread pools created before fork would not survive it);
2. makes matplotlib use the pre-built font cache in ``MPLCONFIGDIR`` even when
   that directory is read-only (matplotlib insists on a writable config dir:
   it then gets a private temporary one that links to the pre-built list);
3. imports numpy, pandas, PIL, matplotlib with the sandboxd backend
   (``module://sandboxd_runtime.mpl_backend``, Agg rendering) and pyplot;
4. creates the IPython shell every forked context starts from (shell.create).

Without ``MPLCONFIGDIR`` matplotlib uses its default (``~/.config/matplotlib``).
"""

import glob
import os
import tempfile

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS")


def _matplotlib_config_dir():
    """Give matplotlib a writable MPLCONFIGDIR that holds the pre-built font list."""
    configured = os.environ.get("MPLCONFIGDIR")
    if not configured or os.access(configured, os.W_OK):
        return
    private = tempfile.mkdtemp(prefix="sandboxd-mpl-")
    for path in glob.glob(os.path.join(configured, "*")):
        os.symlink(path, os.path.join(private, os.path.basename(path)))
    os.environ["MPLCONFIGDIR"] = private


def preload():
    """Import and build everything shared by all contexts (once)."""
    from . import shell
    if shell.SandboxShell.initialized():
        return
    for name in _THREAD_VARS:
        os.environ.setdefault(name, "1")
    _matplotlib_config_dir()
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import PIL.Image  # noqa: F401
    import matplotlib
    matplotlib.use(shell.BACKEND)
    import matplotlib.pyplot  # noqa: F401
    shell.create()
