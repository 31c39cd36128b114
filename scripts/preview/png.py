"""Cut a PNG to its top rows with the standard library alone (no image package needed)."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # by colour type


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body)
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    found, pos = [], len(SIGNATURE)
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        found.append((kind, data[pos + 8 : pos + 8 + length]))
        pos += 12 + length
        if kind == b"IEND":
            break
    return found


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the header."""
    width, height = struct.unpack(">II", _chunks(data)[0][1][:8])
    return width, height


def crop_top(data: bytes, height: int) -> bytes:
    """The top ``height`` rows of a non-interlaced PNG.

    Rows are cut while still filtered: a row's filter refers only to the rows above it,
    so the first ``height`` rows decode exactly as they did in the whole image.
    """
    chunks = _chunks(data)
    kind, header = chunks[0]
    width, old_height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if kind != b"IHDR" or interlace:
        raise ValueError("only non-interlaced PNGs can be cut")
    if height >= old_height:
        return data
    row = 1 + (width * CHANNELS[color] * depth + 7) // 8
    pixels = zlib.decompress(b"".join(body for k, body in chunks if k == b"IDAT"))
    before_pixels = []  # palette, colour profile, ...: every chunk ahead of the pixels
    for k, body in chunks[1:]:
        if k == b"IDAT":
            break
        before_pixels.append(_chunk(k, body))
    return b"".join(
        [
            SIGNATURE,
            _chunk(b"IHDR", struct.pack(">II", width, height) + header[8:]),
            *before_pixels,
            _chunk(b"IDAT", zlib.compress(pixels[: row * height], 9)),
            _chunk(b"IEND", b""),
        ]
    )
