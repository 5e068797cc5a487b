"""Plot geometry for the HTML report, computed here and drawn as inline SVG by the
template's macros (so every label goes through the template's autoescaping).

    bar_chart(title, counts, top=15) -> dict     horizontal bars, biggest first
    column_chart(title, points, bins=60) -> dict findings along the corpus (shard index)
    line_chart(title, points, ...) -> dict       throughput: a cumulative count over time

Each returns plain numbers and strings: ``width``, ``height``, the shapes, their
labels and ``empty`` (a sentence to show instead of an empty plot).
"""

from __future__ import annotations

from typing import Iterable

from verify.reports.visible import visible

WIDTH = 640
LABEL_W = 230
BAR_H, GAP = 16, 4
LABEL_CHARS = 34


def _label(text: str) -> str:
    return visible(str(text), LABEL_CHARS)


def _si(n: float) -> str:
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:g}" if isinstance(n, float) else str(n)


def bar_chart(title: str, counts: dict[str, int], top: int = 15, empty: str = "no findings") -> dict:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    rest = ranked[top:]
    ranked = ranked[:top] + ([(f"({len(rest)} more)", sum(n for _, n in rest))] if rest else [])
    most = max((n for _, n in ranked), default=0) or 1
    span = WIDTH - LABEL_W - 60
    bars = [{"x": LABEL_W, "y": 8 + i * (BAR_H + GAP), "w": max(1, round(span * n / most)), "h": BAR_H,
             "label": _label(name), "value": f"{n:,}", "label_y": 8 + i * (BAR_H + GAP) + BAR_H - 4}
            for i, (name, n) in enumerate(ranked)]
    return {"title": title, "width": WIDTH, "height": 16 + len(bars) * (BAR_H + GAP), "bars": bars,
            "label_x": LABEL_W - 6, "empty": empty if not bars else ""}


def column_chart(title: str, points: Iterable[tuple[int, int]], total: int, bins: int = 60,
                 empty: str = "no shards committed") -> dict:
    """``points``: (shard index, findings). The corpus positions 0..total-1 are cut into at
    most ``bins`` columns; each column's height is the findings of its shards."""
    points = list(points)
    total = max(total, 1 + max((i for i, _ in points), default=0))
    per_bin = -(-total // max(1, min(bins, total)))
    n_bins = -(-total // per_bin)
    sums = [0] * n_bins
    for index, findings in points:
        sums[min(index // per_bin, n_bins - 1)] += findings
    height, base = 160, 140
    most = max(sums) or 1
    col_w = (WIDTH - 60) / n_bins
    cols = [{"x": round(40 + b * col_w, 1), "w": round(max(1.0, col_w - 1), 1), "h": round(120 * s / most, 1),
             "y": round(base - 120 * s / most, 1), "value": f"shards {b * per_bin}-{min(total, (b + 1) * per_bin) - 1}: {s:,}"}
            for b, s in enumerate(sums) if s]
    return {"title": title, "width": WIDTH, "height": height, "cols": cols, "base": base,
            "x_left": "shard 0", "x_right": f"shard {total - 1}", "y_top": f"{max(sums):,}",
            "empty": empty if not points else ""}


def line_chart(title: str, points: Iterable[tuple[float, float]], x_unit: str = "s", y_unit: str = "",
               empty: str = "no timed shard commits") -> dict:
    points = sorted(points)
    height, left, base, top = 180, 50, 150, 10
    max_x = max((x for x, _ in points), default=0.0) or 1.0
    max_y = max((y for _, y in points), default=0.0) or 1.0
    span_x, span_y = WIDTH - left - 20, base - top
    xy = [(round(left + span_x * x / max_x, 1), round(base - span_y * y / max_y, 1)) for x, y in [(0.0, 0.0)] + points]
    return {"title": title, "width": WIDTH, "height": height, "polyline": " ".join(f"{x},{y}" for x, y in xy),
            "dots": [{"x": x, "y": y} for x, y in xy[1:]][-200:], "left": left, "base": base, "top": top,
            "right": WIDTH - 20, "x_right": f"{_si(round(max_x, 1))} {x_unit}", "y_top": f"{_si(max_y)} {y_unit}".strip(),
            "empty": empty if not points else ""}


def stacked_bars(title: str, rows: list[tuple[str, dict[str, int]]], keys: tuple[str, ...], share: bool = False,
                 empty: str = "nothing to show") -> dict:
    """One horizontal bar per row, cut into segments by ``keys`` (drawn in that order, each
    with the CSS class ``seg-KEY``): absolute lengths, or with ``share`` every bar the full
    width and its segments the shares of its total (rows of very different sizes side by
    side). Each row is labelled with its total, each segment has a tooltip."""
    rows = [(label, {k: int(v.get(k, 0) or 0) for k in keys}) for label, v in rows]
    most = max((sum(v.values()) for _, v in rows), default=0) or 1
    span = WIDTH - LABEL_W - 80
    bars = []
    for i, (label, values) in enumerate(rows):
        total = sum(values.values())
        y = 8 + i * (BAR_H + GAP)
        scale = span / (total or 1) if share else span / most
        x, segments = float(LABEL_W), []
        for key in keys:
            n = values[key]
            if not n:
                continue
            w = max(1.0, round(n * scale, 1))
            segments.append({"key": key, "x": round(x, 1), "w": w, "value": f"{_label(label)}: {n:,} {key}"})
            x += w
        bars.append({"label": _label(label), "y": y, "label_y": y + BAR_H - 4, "h": BAR_H, "segments": segments,
                     "end_x": round(x + 4, 1), "total": f"{total:,}"})
    legend = [{"key": k, "x": 12 + i * 100, "y": 16 + len(rows) * (BAR_H + GAP) + 4} for i, k in enumerate(keys)]
    return {"title": title, "width": WIDTH, "height": 16 + len(rows) * (BAR_H + GAP) + 24, "bars": bars,
            "label_x": LABEL_W - 6, "legend": legend, "empty": empty if not any(b["segments"] for b in bars) else ""}
