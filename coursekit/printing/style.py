"""Colours and legend shared by the SVG and the matplotlib renderers.

The picture exists to answer one question of the course — *where does each
op run, and where does data cross between host and device?* — so colour
encodes exactly that: CPU ops, GPU ops, and transfer ops (red, thick border,
⇅) that must stand out even in a crowded graph.  Variables are ellipses
coloured by where their values come from.
"""
from __future__ import annotations

# kind -> (fill, stroke, stroke width, dashed)
STYLES = {
    "input": ("#c8e6c9", "#2e7d32", 1.2, False),
    "shared": ("#bbdefb", "#1565c0", 1.2, False),
    "constant": ("#eeeeee", "#757575", 1.0, False),
    "output": ("#fff59d", "#f57f17", 2.4, False),
    "cpu": ("#ffe0b2", "#e65100", 1.2, False),
    "gpu": ("#d1c4e9", "#4527a0", 1.6, False),
    "transfer": ("#ffcdd2", "#c62828", 3.2, True),
}

LEGEND = [
    ("input", "input variable", "ellipse"),
    ("shared", "shared variable", "ellipse"),
    ("constant", "constant", "ellipse"),
    ("output", "output", "ellipse"),
    ("cpu", "CPU op", "box"),
    ("gpu", "GPU op", "box"),
    ("transfer", "⇅ transfer op", "box"),
]

OUTPUT_RING = "#f57f17"   # extra outline on a leaf that is also an output
EDGE_COLOUR = "#546e7a"
TEXT_COLOUR = "#212121"
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
