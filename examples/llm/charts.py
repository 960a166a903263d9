"""SVG charts written as plain strings: learning curves with 95% bands, and final success bars."""

from __future__ import annotations

from pathlib import Path

from report import LABELS

COLORS = {"independent": "#1f77b4", "uniform": "#ff7f0e", "entropy": "#9467bd", "trace": "#2ca02c",
          "trace-v5": "#17becf", "trace-v4": "#bcbd22", "trace-v3": "#e377c2", "trace-v2": "#8c564b", "trace-learned": "#d62728", "independent-1.5x": "#6baed6", "independent-2x": "#08306b"}
DASHED = {"independent-1.5x", "independent-2x"}  # the compute-equivalence rows
W, H, L, R, T, B = 720, 420, 60, 260, 40, 50


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _frame(title: str, xlabel: str, ylabel: str, x_ticks, y_ticks, sx, sy) -> list[str]:
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (L, _esc(title))]
    for v in y_ticks:
        y = sy(v)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, y, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (L - 6, y + 4, v))
    for v in x_ticks:
        x = sx(v)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (x, H - B + 16, v))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>' % (L, W - R, H - B, H - B))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>' % (L, L, T, H - B))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) // 2, H - 12, _esc(xlabel)))
    out.append('<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>' % ((T + H - B) // 2, _esc(ylabel)))
    return out


def _legend(names: list[str]) -> list[str]:
    out = []
    for i, s in enumerate(names):
        y = T + 10 + 20 * i
        out.append('<rect x="%d" y="%d" width="14" height="4" fill="%s"/>' % (W - R + 12, y - 4, COLORS.get(s, "#555")))
        out.append('<text x="%d" y="%d">%s</text>' % (W - R + 32, y + 2, _esc(LABELS.get(s, s))))
    return out


def _nice_max(v: float) -> float:
    for m in (0.1, 0.2, 0.25, 0.4, 0.5, 0.6, 0.8, 1.0):
        if v <= m:
            return m
    return 1.0


def curve_svg(summary: dict, title: str) -> str:
    names = list(summary)
    xmax = max(p["tokens"] for s in names for p in summary[s]["curve"]) or 1
    ymax = _nice_max(max(p["ci95"][1] for s in names for p in summary[s]["curve"]))
    sx = lambda v: L + (W - L - R) * v / xmax  # noqa: E731
    sy = lambda v: H - B - (H - T - B) * min(max(0.0, v), ymax) / ymax  # noqa: E731
    out = _frame(title, "generated tokens (training budget spent)", "success rate", [xmax * i / 4 for i in range(5)],
                 [ymax * i / 4 for i in range(5)], sx, sy)
    for s in names:
        pts = summary[s]["curve"]
        band = [(sx(p["tokens"]), sy(p["ci95"][1])) for p in pts] + [(sx(p["tokens"]), sy(p["ci95"][0])) for p in reversed(pts)]
        c = COLORS.get(s, "#555")
        out.append('<polygon points="%s" fill="%s" fill-opacity="0.12" stroke="none"/>' % (" ".join("%.1f,%.1f" % q for q in band), c))
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (
            " ".join("%.1f,%.1f" % (sx(p["tokens"]), sy(p["mean"])) for p in pts), c,
            ' stroke-dasharray="6,3"' if s in DASHED else ""))
    return "\n".join(out + _legend(names) + ["</svg>"]) + "\n"


def bars_svg(summary: dict, title: str) -> str:
    names = list(summary)
    ymax = _nice_max(max(summary[s]["final_success"]["ci95"][1] for s in names))
    sy = lambda v: H - B - (H - T - B) * min(max(0.0, v), ymax) / ymax  # noqa: E731
    slot = (W - L - R) / len(names)
    out = _frame(title, "sampler", "final success rate", [], [ymax * i / 4 for i in range(5)], lambda v: 0, sy)
    for i, s in enumerate(names):
        v = summary[s]["final_success"]
        x = L + slot * i + slot * 0.2
        c = COLORS.get(s, "#555")
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (x, sy(v["mean"]), slot * 0.6, H - B - sy(v["mean"]), c))
        xc = x + slot * 0.3
        out.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black"/>' % (xc, xc, sy(v["ci95"][0]), sy(v["ci95"][1])))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>' % (xc, H - B + 16, 100 * v["mean"]))
    return "\n".join(out + _legend(names) + ["</svg>"]) + "\n"


def write_charts(result: dict, folder: Path) -> None:
    s = result["summary"]["samplers"]
    counts = sorted({v["final_success"]["n"] for v in s.values()})
    n = "%d seeds" % counts[0] if len(counts) == 1 else "%s seeds by row" % "/".join(map(str, counts))
    (folder / "curve.svg").write_text(curve_svg(s, "GPT-2 policy, calculator task: success vs tokens (mean, 95%% CI; %s)" % n))
    (folder / "final.svg").write_text(bars_svg(s, "Final success (mean, 95%% CI; %s)" % n))
