"""The matplotlib backend of a context: ``module://sandboxd_runtime.mpl_backend``.

Agg rendering; ``plt.show()`` and ``Figure.show()`` send figures as PNG
results through IPython's display machinery at the moment they are called
(see figures). Nothing is ever drawn to a screen.
"""

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from IPython.display import display

from . import figures


class FigureManager(FigureManagerBase):
    """A manager whose ``show()`` sends its figure as a result."""

    def show(self):
        display(self.canvas.figure)


class FigureCanvas(FigureCanvasAgg):
    """The Agg canvas, managed by FigureManager."""

    manager_class = FigureManager


def show(*args, **kwargs):
    """``pyplot.show()``: send all new or changed figures now, then close them."""
    figures.flush()
