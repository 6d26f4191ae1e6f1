"""Views of a :class:`~coursekit.profiling.ProfileStats`: text, HTML and a bar chart.

The text follows Theano's ``profile.summary()`` (Function summary, then the
Class, Ops and Apply tables) so that output in the seed tutorials looks
familiar, with two changes made for the course: times are written in
readable units, and the ``<type>`` column (C or Python code, in Theano) says
where the op ran — CPU, GPU or transfer — which is what the lessons are about.
"""
from __future__ import annotations

from html import escape

from ..costmodel import model_for
from ..profiling import KIND_NAMES, KINDS, format_time
from .style import STYLES


def _function_lines(profile):
    lines = ["Function profiling", "==================", f"  Message: {profile.name or '(unnamed profile)'}"]
    records = profile.records
    if not records:
        lines.append("  No call recorded yet.")
    for r in records:
        lines.append(f"  Function {r.name} on {r.device}")
        lines.append(f"    Calls: {r.calls} (first excluded: {r.timed_calls} timed"
                     + (f", {r.failed_calls} failed" if r.failed_calls else "") + ")")
        if r.timed_calls:
            share = 100.0 * r.thunk_time / r.call_time if r.call_time else 0.0
            lines.append(f"    Time in {r.timed_calls} calls to Function.__call__: {format_time(r.call_time)} "
                         f"({format_time(r.call_time / r.timed_calls)} per call)")
            lines.append(f"    Time in thunks: {format_time(r.thunk_time)} ({share:.1f}%)")
            lines.append(f"    Overhead (input checks, output copies, profiler): "
                         f"{format_time(r.call_time - r.thunk_time)} "
                         f"({format_time((r.call_time - r.thunk_time) / r.timed_calls)} per call)")
    if len(records) > 1:
        lines.append(f"  All functions: {profile.calls} calls, {profile.timed_calls} timed, "
                     f"{format_time(profile.call_time)} in calls, {format_time(profile.thunk_time)} in thunks")
    compile_time = getattr(profile, "compile_time", None)
    if compile_time is not None:
        lines.append(f"  Total compile time: {format_time(compile_time)}")
    lines += [f"  {note}" for note in profile.notes()]
    return lines


def _table(title, rows, limit, header, cells, noun):
    lines = ["", title, "-" * len(title), header]
    for row in rows[:limit]:
        lines.append(cells(row))
        for i, (shape, dtype) in enumerate(row.get("inputs", [])):
            lines.append(f"      input {i}: dtype={dtype}, shape={shape}")
    rest = rows[limit:]
    if rest:
        t = sum(r["time"] for r in rest)
        pct = sum(r["percent"] for r in rest)
        lines.append(f"   ... (remaining {len(rest)} {noun} account for {pct:.2f}% ({format_time(t)}) of the time)")
    return lines


def _common(row, modelled=False):
    text = (f"  {row['percent']:6.1f}%  {row['cumulative']:6.1f}%  {format_time(row['time']):>9}  "
            f"{format_time(row['per_call']):>9}")
    if modelled:  # the modelled GPU column: only in profiles with GPU or transfer ops
        text += f"  {format_time(row['modelled']) if row.get('modelled') is not None else '-':>9}"
    return text


def _modelled_header(profile):
    if not profile.has_device_ops:
        return ""
    return f" <{model_for().label} per call>"


def summary_text(profile, n_ops_to_print=20, n_apply_to_print=20):
    """The whole summary as text (``ProfileStats.summary`` prints it)."""
    lines = _function_lines(profile)
    modelled = profile.has_device_ops
    per_call = "<time per call>" + _modelled_header(profile)
    head = f"  <% time> <sum %> <apply time> {per_call} <where> <#call> <#apply>"

    def group(row):
        return f"{_common(row, modelled)}  {KIND_NAMES[row['kind']]:>8} {row['calls']:7d} {row['applies']:5d}   {row['name']}"

    def apply_cells(row):
        return f"{_common(row, modelled)}  {KIND_NAMES[row['kind']]:>8} {row['calls']:7d} {row['key']:>5}   {row['name']}"

    lines += _table("Class", profile.class_rows(), n_ops_to_print, head + " <Class name>", group, "classes")
    lines += _table("Ops", profile.op_rows(), n_ops_to_print, head + " <Op name>", group, "ops")
    lines += _table("Apply", profile.apply_rows(), n_apply_to_print,
                    f"  <% time> <sum %> <apply time> {per_call} <where> <#call> <id> <Apply name>",
                    apply_cells, "applies")
    lines += ["", profile.device_line()]
    if modelled:
        lines.append(profile.modelled_line())
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------- HTML
_TD = 'style="text-align:right; padding:1px 8px"'
_TL = 'style="text-align:left; padding:1px 8px; font-family:monospace"'


def _kind_cell(kind):
    colour = STYLES[kind][1]
    return f'<td {_TL}><span style="color:{colour}; font-weight:bold">{KIND_NAMES[kind]}</span></td>'


def _html_table(title, rows, limit, name_header, modelled=""):
    headers = ("% time", "cum. %", "time", "per call") + ((f"{modelled} per call",) if modelled else ()) + (
        "where", "#call", "#apply")
    head = "".join(f"<th {_TD}>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows[:limit]:
        model_cell = ""
        if modelled:
            model_cell = f"<td {_TD}>{format_time(row['modelled']) if row.get('modelled') is not None else '—'}</td>"
        body.append(f"<tr><td {_TD}>{row['percent']:.1f}%</td><td {_TD}>{row['cumulative']:.1f}%</td>"
                    f"<td {_TD}>{format_time(row['time'])}</td><td {_TD}>{format_time(row['per_call'])}</td>"
                    f"{model_cell}{_kind_cell(row['kind'])}<td {_TD}>{row['calls']}</td><td {_TD}>{row['applies']}</td>"
                    f"<td {_TL}>{escape(row['name'])}{_inputs_html(row)}</td></tr>")
    more = f"<p><i>… {len(rows) - limit} more not shown</i></p>" if len(rows) > limit else ""
    return (f"<h4>{title}</h4><table><tr>{head}<th {_TL}>{name_header}</th></tr>{''.join(body)}</table>{more}")


def _inputs_html(row):
    if not row.get("inputs"):
        return ""
    text = "; ".join(f"{dtype}{list(shape) if shape is not None else ''}" for shape, dtype in row["inputs"])
    return f'<br><small style="color:#607d8b">inputs: {escape(text)}</small>'


def profile_html(profile, limit=15):
    """Rich tables for Jupyter (``ProfileStats._repr_html_``)."""
    summary = "<br>".join(escape(line.strip()) for line in _function_lines(profile)[2:])
    warn = ' style="color:#c62828; font-weight:bold"' if profile.simulated else ""
    split = profile.device_split()
    bar = "".join(f'<span style="display:inline-block; height:14px; width:{max(split[k]["percent"], 0) * 3:.0f}px; '
                  f'background:{STYLES[k][1]}" title="{KIND_NAMES[k]} {split[k]["percent"]:.1f}%"></span>'
                  for k in KINDS)
    modelled = _modelled_header(profile).strip(" <>").replace(" per call", "")
    model_line = f"<p><i>{escape(profile.modelled_line())}</i></p>" if modelled else ""
    parts = [f'<div class="coursekit-profile"><p>{summary}</p>',
             f"<p{warn}>{escape(profile.device_line())}</p><div>{bar}</div>{model_line}",
             _html_table("Class", profile.class_rows(), limit, "class", modelled),
             _html_table("Ops", profile.op_rows(), limit, "op", modelled),
             _html_table("Apply", profile.apply_rows(), limit, "apply node", modelled), "</div>"]
    return "\n".join(parts)


# --------------------------------------------------------------------- plot
def plot_profile(profile, ax=None, by="class", top=15):
    """Horizontal bars of time per class / op / apply, coloured CPU, GPU or transfer."""
    rows = {"class": profile.class_rows, "op": profile.op_rows, "apply": profile.apply_rows}
    if by not in rows:
        raise ValueError(f"by={by!r}: use 'class', 'op' or 'apply'")
    rows = rows[by]()[:top]
    made_figure = ax is None
    if made_figure:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(9, 0.4 * max(len(rows), 3) + 1.5))
    from matplotlib.patches import Patch

    labels = [(f"{r['key']}: " if by == "apply" else "") + _short(r["name"]) for r in rows]
    ax.barh(range(len(rows)), [r["time"] * 1e3 for r in rows],
            color=[STYLES[r["kind"]][1] for r in rows])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()  # slowest at the top
    ax.set_xlabel(f"time in ms over {profile.timed_calls} timed calls (first call excluded)")
    where = ", ".join(profile.devices) or "no calls"
    title = f"Where the time went, per {by}\non {where}"
    if profile.simulated:
        title += "\nSIMULATED GPU: CPU times, not GPU timings"
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Patch(color=STYLES[k][1], label=f"{KIND_NAMES[k]} ops") for k in KINDS],
              loc="lower right", fontsize=8)
    if made_figure:
        ax.figure.tight_layout()
    return ax


def _short(text, width=36):
    return text if len(text) <= width else text[: width - 1] + "…"
