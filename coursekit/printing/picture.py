"""``pydotprint``: a picture of a graph, as SVG text or a matplotlib PNG.

No graphviz binary is needed: :mod:`.layout` places the boxes, this module
draws them.  The SVG is written by hand (it is only rectangles, ellipses,
paths and text); the PNG draws the same layout with matplotlib patches.

A picture in a notebook carries both (``_repr_mimebundle_``): a trusted
notebook shows the SVG (sharp, with hover text), while a notebook opened
fresh — *untrusted* in JupyterLab and classic Notebook, and always on GitHub —
refuses SVG output and shows the PNG instead of a ``<GraphPicture ...>`` line.
The legend sits under the title, left-aligned, so it stays in view however
wide the graph is (a wide graph is scaled down or scrolled, never its key).
"""
from __future__ import annotations

import os
from html import escape

from .layout import build_layout
from .style import EDGE_COLOUR, FONT, LEGEND, OUTPUT_RING, STYLES, TEXT_COLOUR

TITLE_HEIGHT = 26
LEGEND_ROW = 22        # height of one row of legend entries
LEGEND_WRAP = 480      # legend rows wrap at this width, so the key is in the first 480 px of any picture
CHAR_WIDTH = 7.0       # rough width of one 12 px character, enough to space the legend


def _legend_places(graph_width):
    """``(entries, width, height)``: where each legend entry goes, in rows under the title."""
    limit = LEGEND_WRAP
    entries, x, y, widest = [], 10.0, TITLE_HEIGHT + LEGEND_ROW / 2, 0.0
    for kind, text, shape in LEGEND:
        size = 32 + 8 + len(text) * CHAR_WIDTH + 18
        if x > 10 and x + size > limit:
            x, y = 10.0, y + LEGEND_ROW
        entries.append((kind, text, shape, x, y))
        x += size
        widest = max(widest, x)
    return entries, max(graph_width, widest), y + LEGEND_ROW / 2 + 6


def _canvas(layout):
    """``(legend entries, total width, total height, top of the graph)``."""
    entries, width, top = _legend_places(layout.width)
    return entries, width, top + layout.height, top


class GraphPicture:
    """A drawn graph: shows itself in Jupyter, and ``save(path)`` writes it."""

    def __init__(self, layout, format="svg"):
        if format not in ("svg", "png"):
            raise ValueError(f"format={format!r}: use 'svg' or 'png'")
        self.layout, self.format = layout, format
        self.svg = render_svg(layout)
        self._png = None

    def _repr_mimebundle_(self, include=None, exclude=None):
        """SVG for trusted notebooks and the PNG for untrusted ones and GitHub (see the module doc)."""
        bundle = {"image/png": self.png(), "text/plain": repr(self)}
        if self.format == "svg":
            bundle["image/svg+xml"] = self.svg
        return bundle

    def png(self, dpi=100):
        """PNG bytes of the picture (drawn with matplotlib)."""
        if self._png is None or dpi != 100:
            png = render_png(self.layout, dpi=dpi)
            if dpi != 100:
                return png
            self._png = png
        return self._png

    def save(self, path, format=None):
        """Write the picture; the format is ``format``, else the file's extension, else ours."""
        ext = os.path.splitext(str(path))[1].lower().lstrip(".")
        fmt = format or (ext if ext in ("svg", "png") else self.format)
        if fmt == "svg":
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(self.svg)
        elif fmt == "png":
            with open(path, "wb") as fh:
                fh.write(self.png())
        else:
            raise ValueError(f"cannot save as {fmt!r}: use 'svg' or 'png'")
        return path

    def __repr__(self):
        n_ops = sum(b.shape == "box" for b in self.layout.boxes.values())
        return f"<GraphPicture {self.layout.title or ''} ({n_ops} ops, {self.format})>"


_THEANO_OPTIONS = {"compact", "with_ids", "high_contrast", "scan_graphs", "print_output_file", "return_image",
                   "max_label_size", "cond_highlight", "colorCodes"}


def pydotprint(fn_or_vars, outfile=None, format="svg", var_with_name_simple=False, **theano_options):
    """Draw a (compiled) graph: inputs at the top, outputs at the bottom.

    Theano's keyword options are accepted so its scripts run: ``var_with_name_simple``
    (named variables show only their name: what this picture always does), and
    ``compact``, ``with_ids``, ``high_contrast``, ``scan_graphs``, ``print_output_file``,
    ``return_image``, ``max_label_size``, ``cond_highlight``, ``colorCodes`` (no effect here).

    Apply nodes are boxes coloured by where they run (CPU, GPU) and transfer
    ops are red with a thick dashed border and a ⇅ mark, because counting
    them is what the GPU lessons are about.  Edges into an op with several
    inputs carry the input's position.  Hover a box (SVG) for its full text.
    Returns a :class:`GraphPicture`; with ``outfile`` it is also saved there.
    """
    unknown = set(theano_options) - _THEANO_OPTIONS
    if unknown:
        raise TypeError(f"pydotprint: unknown option(s) {sorted(unknown)}; Theano's options are "
                        f"{sorted(_THEANO_OPTIONS | {'var_with_name_simple'})}")
    picture = GraphPicture(build_layout(fn_or_vars), format=format)
    if outfile is not None:
        picture.save(outfile, format=format)
    return picture


# ----------------------------------------------------------------------- SVG
def render_svg(layout):
    entries, width, height, top = _canvas(layout)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" font-size="12">',
           '<defs><marker id="ck-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOUR}"/>'
           '</marker></defs>',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{10}" y="{18}" font-weight="bold" fill="{TEXT_COLOUR}">{escape(layout.title)}</text>',
           _svg_legend(entries),
           f'<g transform="translate(0,{top:.0f})">']
    for edge in layout.edges:
        out.append(_svg_edge(edge))
    for box in layout.boxes.values():
        if box.shape != "point":
            out.append(_svg_box(box))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _svg_edge(edge):
    pts = edge.points
    d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        mid = (y0 + y1) / 2
        d += f" C{x0:.1f},{mid:.1f} {x1:.1f},{mid:.1f} {x1:.1f},{y1:.1f}"
    text = f"<title>{escape(edge.title)}</title>"
    parts = [f'<g class="edge">{text}<path d="{d}" fill="none" stroke="{EDGE_COLOUR}" stroke-width="1.2" '
             'marker-end="url(#ck-arrow)"/>']
    if edge.label:
        x1, y1 = pts[-1]  # just above the arrow head: arrows are spread in input order
        parts.append(f'<text x="{x1 + 2:.1f}" y="{y1 - 7:.1f}" font-size="9" fill="{EDGE_COLOUR}">'
                     f"{escape(edge.label)}</text>")
    parts.append("</g>")
    return "".join(parts)


def _svg_shape(shape, kind, x, y, w, h, extra=""):
    fill, stroke, width, dashed = STYLES[kind]
    dash = ' stroke-dasharray="6,3"' if dashed else ""
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}{extra}'
    if shape == "ellipse":
        return f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{w / 2:.1f}" ry="{h / 2:.1f}" {paint}/>'
    return f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="4" {paint}/>'


def _svg_box(box):
    parts = [f'<g class="node {box.kind}"><title>{escape(box.title)}</title>']
    if box.is_output and box.kind != "output":
        parts.append(f'<ellipse cx="{box.x:.1f}" cy="{box.y:.1f}" rx="{box.w / 2 + 4:.1f}" '
                     f'ry="{box.h / 2 + 4:.1f}" fill="none" stroke="{OUTPUT_RING}" stroke-width="2.4"/>')
    parts.append(_svg_shape(box.shape, box.kind, box.x, box.y, box.w, box.h))
    weight = ' font-weight="bold"' if box.kind == "transfer" else ""
    if box.sublabel:
        parts.append(f'<text x="{box.x:.1f}" y="{box.y - 3:.1f}" text-anchor="middle" fill="{TEXT_COLOUR}"'
                     f"{weight}>{escape(box.label)}</text>")
        parts.append(f'<text x="{box.x:.1f}" y="{box.y + 12:.1f}" text-anchor="middle" font-size="10" '
                     f'fill="#455a64"{weight}>{escape(box.sublabel)}</text>')
    else:
        parts.append(f'<text x="{box.x:.1f}" y="{box.y + 4:.1f}" text-anchor="middle" fill="{TEXT_COLOUR}">'
                     f"{escape(box.label)}</text>")
    parts.append("</g>")
    return "".join(parts)


def _svg_legend(entries):
    parts = ['<g class="legend">']
    for kind, text, shape, x, y in entries:
        parts.append(_svg_shape(shape, kind, x + 16, y, 32, 16))
        parts.append(f'<text x="{x + 40:.0f}" y="{y + 4:.0f}" fill="{TEXT_COLOUR}">{escape(text)}</text>')
    parts.append("</g>")
    return "".join(parts)


# ----------------------------------------------------------------------- PNG
def render_png(layout, dpi=100):
    """Draw the layout with matplotlib (Agg canvas, no pyplot state) and return PNG bytes."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Ellipse, FancyBboxPatch, PathPatch
    from matplotlib.path import Path

    entries, width, height, dy = _canvas(layout)
    fig = Figure(figsize=(width / 100, height / 100), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # SVG coordinates: y grows downwards
    ax.axis("off")
    px = 72 / 100  # 1 px of the layout in points (figure made at 100 px per inch)

    def shape(kind, shp, x, y, w, h, z=2):
        fill, stroke, lw, dashed = STYLES[kind]
        style = dict(facecolor=fill, edgecolor=stroke, linewidth=lw * px * 1.3, zorder=z,
                     linestyle=(0, (4, 2)) if dashed else "solid")
        if shp == "ellipse":
            ax.add_patch(Ellipse((x, y), w, h, **style))
        else:
            ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=4",
                                        **style))

    ax.text(10, 18, layout.title, fontsize=12 * px, fontweight="bold", color=TEXT_COLOUR)
    for kind, text, shp, x, y in entries:
        shape(kind, shp, x + 16, y, 32, 16)
        ax.text(x + 40, y, text, fontsize=12 * px, va="center", color=TEXT_COLOUR)
    for edge in layout.edges:
        pts = [(x, y + dy) for x, y in edge.points]
        verts, codes = [pts[0]], [Path.MOVETO]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            mid = (y0 + y1) / 2
            verts += [(x0, mid), (x1, mid), (x1, y1)]
            codes += [Path.CURVE4] * 3
        ax.add_patch(PathPatch(Path(verts, codes), facecolor="none", edgecolor=EDGE_COLOUR,
                               linewidth=1.2 * px * 1.3, zorder=1))
        x1, y1 = pts[-1]
        ax.annotate("", xy=(x1, y1), xytext=(x1, y1 - 6),
                    arrowprops=dict(arrowstyle="-|>", color=EDGE_COLOUR, lw=0.8), zorder=1)
        if edge.label:
            ax.text(x1 + 2, y1 - 10, edge.label, fontsize=9 * px, color=EDGE_COLOUR, va="center")
    for box in layout.boxes.values():
        if box.shape == "point":
            continue
        y = box.y + dy
        if box.is_output and box.kind != "output":
            ax.add_patch(Ellipse((box.x, y), box.w + 8, box.h + 8, facecolor="none", edgecolor=OUTPUT_RING,
                                 linewidth=2.4 * px * 1.3, zorder=2))
        shape(box.kind, box.shape, box.x, y, box.w, box.h)
        weight = "bold" if box.kind == "transfer" else "normal"
        if box.sublabel:
            ax.text(box.x, y - 6, box.label, ha="center", va="center", fontsize=12 * px, zorder=3,
                    fontweight=weight, color=TEXT_COLOUR)
            ax.text(box.x, y + 9, box.sublabel, ha="center", va="center", fontsize=10 * px, zorder=3,
                    fontweight=weight, color="#455a64")
        else:
            ax.text(box.x, y, box.label, ha="center", va="center", fontsize=12 * px, zorder=3, color=TEXT_COLOUR)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    return _small_png(buf.getvalue())


def _small_png(png):
    """The same picture with a 64-colour palette: 3-5 times fewer bytes in every saved notebook.

    The drawing has a dozen flat colours plus anti-aliased edges, so nothing visible is lost.
    Pillow comes with matplotlib.  No metadata is written, so equal drawings give equal bytes.
    """
    import io

    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        small = image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()
