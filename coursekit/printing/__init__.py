"""Looking at graphs: text trees, pictures, and the Jupyter views.

* :func:`debugprint` — Theano's indented tree (ids, types, toposort index);
* :func:`pp` — a one-line infix form (``exp(x) + 1.0``);
* :func:`pydotprint` — a picture (SVG, or PNG via matplotlib) with CPU ops,
  GPU ops and host/device transfers in different colours; no graphviz needed;
* :func:`function_html` — what a compiled function shows in a notebook.
"""
from __future__ import annotations

from .html import function_html
from .picture import GraphPicture, pydotprint
from .print_op import Print
from .text import debugprint, pp

pprint = pp  # Theano's name (theano.printing.pprint)

__all__ = ["debugprint", "pp", "pprint", "Print", "pydotprint", "function_html", "GraphPicture"]
