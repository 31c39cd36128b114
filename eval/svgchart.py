"""A small hand-written SVG line chart: recall@k curves, one line per configuration."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

# Distinguishable on white and for common colour-vision deficiencies (Okabe-Ito).
COLOURS = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
    "#999999",
)
DASHES = ("", "6 3", "2 3", "8 3 2 3")


def recall_chart(
    curves: Sequence[tuple[str, Sequence[float]]],
    title: str = "recall@k per configuration",
    width: int = 720,
    height: int = 420,
) -> str:
    """An SVG document plotting each ``(label, [recall@1, recall@2, …])`` curve."""
    left, right, top, bottom = 56, 220, 36, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    k = max((len(c) for _, c in curves), default=1)
    lo = min((v for _, c in curves for v in c), default=0.0)
    y_min = max(0.0, min(0.5, (int(lo * 10) / 10)))  # zoom in, but keep a round floor

    def x(i: int) -> float:  # i: 1-based cutoff
        return left + (plot_w * (i - 1) / (k - 1) if k > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h * (1.0 - (v - y_min) / (1.0 - y_min or 1.0))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="{top - 14}" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    steps = 5
    for s in range(steps + 1):
        v = y_min + (1.0 - y_min) * s / steps
        parts.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + plot_w}" y2="{y(v):.1f}" '
            'stroke="#e5e5e5"/>'
        )
        parts.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for i in range(1, k + 1):
        parts.append(
            f'<text x="{x(i):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{i}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 10}" text-anchor="middle">k</text>'
    )
    parts.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">recall@k</text>'
    )
    parts.append(
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>'
    )
    for n, (label, curve) in enumerate(curves):
        colour = COLOURS[n % len(COLOURS)]
        dash = DASHES[n % len(DASHES)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(curve, start=1))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"'
            f"{dash_attr}><title>{escape(label)}</title></polyline>"
        )
        ly = top + 10 + n * 20
        lx = left + plot_w + 16
        parts.append(
            f'<line x1="{lx}" y1="{ly}" x2="{lx + 24}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="2"{dash_attr}/>'
        )
        final = f" ({curve[-1]:.2f})" if curve else ""
        parts.append(f'<text x="{lx + 30}" y="{ly + 4}">{escape(label + final)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
