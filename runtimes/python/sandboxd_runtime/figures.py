"""matplotlib figures as PNG results.

Guarantee: every figure a cell created or changed is sent as one PNG result
and every pyplot figure is closed when the cell ends. ``plt.show()`` (and
``Figure.show()``) send the figures at that point, in order with stdout.

How: ``png(fig)`` renders a figure (the PNG formatter; ``bbox_inches="tight"``
like Jupyter's inline backend) and remembers it as *shown in its current
state*; any later change to one of its artists sets ``Figure.stale`` again.
``flush()`` displays every pyplot figure not shown in its current state, plus
any earlier (already closed) figure that changed since it was shown, then
closes all pyplot figures. So a figure displayed explicitly (``display(fig)``,
``fig`` as the last expression) is not sent twice. Empty figures (no axes, no
artists) are never sent, as in Jupyter.
"""

import io
import sys
import weakref

from IPython.display import display

_shown = weakref.WeakSet()  # figures whose current state has been sent


def _is_empty(fig):
    return len(fig.get_children()) <= 1  # only the background patch


def png(fig):
    """Return the PNG bytes of ``fig`` and mark it shown; None if it is empty."""
    if _is_empty(fig):
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    fig.stale = False  # savefig restores attributes, which marks it stale
    _shown.add(fig)
    return buf.getvalue()


def flush():
    """Display new or changed figures, then close every pyplot figure."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    from matplotlib._pylab_helpers import Gcf
    open_figures = [m.canvas.figure for m in Gcf.get_all_fig_managers()]
    pending = [f for f in open_figures
               if not _is_empty(f) and (f.stale or f not in _shown)]
    pending += [f for f in list(_shown) if f.stale and f not in open_figures]
    try:
        for fig in pending:
            display(fig)
    finally:
        pyplot.close("all")
