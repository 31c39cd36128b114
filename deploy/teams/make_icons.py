"""Draw the Teams app icons with the standard library only.

Teams wants ``color.png`` (192x192, full colour) and ``outline.png`` (32x32, white on a
transparent background). Both show a code bracket pair ``< >``. Run from anywhere:

    python deploy/teams/make_icons.py
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

Pixel = tuple[int, int, int, int]
HERE = Path(__file__).resolve().parent
BACKGROUND: Pixel = (37, 99, 235, 255)
WHITE: Pixel = (255, 255, 255, 255)
CLEAR: Pixel = (0, 0, 0, 0)


def write_png(path: Path, size: int, pixel: Callable[[float, float], Pixel]) -> None:
    """An RGBA PNG whose pixel colour is ``pixel(x, y)`` with x, y in [0, 1)."""
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # filter type: none
        for x in range(size):
            rows.extend(pixel((x + 0.5) / size, (y + 0.5) / size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    png += chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def _near_segment(
    x: float, y: float, a: tuple[float, float], b: tuple[float, float], w: float
) -> bool:
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    px, py = ax + t * dx, ay + t * dy
    return (x - px) ** 2 + (y - py) ** 2 <= w * w


def brackets(x: float, y: float, width: float) -> bool:
    """The ``< >`` glyph on the unit square."""
    segments = [
        ((0.40, 0.28), (0.20, 0.50)),
        ((0.20, 0.50), (0.40, 0.72)),
        ((0.60, 0.28), (0.80, 0.50)),
        ((0.80, 0.50), (0.60, 0.72)),
    ]
    return any(_near_segment(x, y, a, b, width) for a, b in segments)


def color_pixel(x: float, y: float) -> Pixel:
    return WHITE if brackets(x, y, 0.05) else BACKGROUND


def outline_pixel(x: float, y: float) -> Pixel:
    return WHITE if brackets(x, y, 0.07) else CLEAR


if __name__ == "__main__":
    write_png(HERE / "color.png", 192, color_pixel)
    write_png(HERE / "outline.png", 32, outline_pixel)
    print(f"wrote {HERE / 'color.png'} and {HERE / 'outline.png'}")
