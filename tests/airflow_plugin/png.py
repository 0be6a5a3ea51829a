"""A small PNG reader (zlib + numpy) for checking browser screenshots: size, and the pixels.

Handles what Chromium writes: 8-bit RGB or RGBA, not interlaced, with any of the five
scanline filters. Raises ValueError for anything that is not such a PNG.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}   # colour type -> channels (truecolour, truecolour with alpha)


def read_png(data: bytes) -> np.ndarray:
    """Pixels as a (height, width, channels) uint8 array."""
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG: bad signature")
    pos, idat, header = len(SIGNATURE), [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"PNG chunk {kind!r} has a bad CRC")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None or not idat:
        raise ValueError("PNG without IHDR or IDAT")
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in _CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {color}, interlace {interlace}")
    bpp = _CHANNELS[color]
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    if raw.size != height * (stride + 1):
        raise ValueError(f"PNG data has {raw.size} bytes, expected {height * (stride + 1)}")
    rows = raw.reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        f, line = rows[y, 0], rows[y, 1:]
        if f == 0:
            cur = line.copy()
        elif f == 1:   # Sub: running sum per channel
            cur = (np.cumsum(line.reshape(width, bpp).astype(np.uint32), axis=0) & 0xFF).astype(np.uint8).ravel()
        elif f == 2:   # Up
            cur = line + prev
        elif f in (3, 4):
            cur = _sequential(line, prev, bpp, f)
        else:
            raise ValueError(f"PNG row {y} has unknown filter {f}")
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)


def _sequential(line: np.ndarray, prev: np.ndarray, bpp: int, f: int) -> np.ndarray:
    """Average and Paeth depend on the pixel to the left: reconstruct byte by byte."""
    cur = bytearray(line.tobytes())
    up = prev.tobytes()
    for i in range(len(cur)):
        a = cur[i - bpp] if i >= bpp else 0
        b = up[i]
        if f == 3:
            cur[i] = (cur[i] + ((a + b) >> 1)) & 0xFF
        else:
            c = up[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return np.frombuffer(bytes(cur), dtype=np.uint8)


def distinct_colors(pixels: np.ndarray) -> int:
    flat = pixels[..., :3].reshape(-1, 3).astype(np.uint32)
    return int(np.unique((flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]).size)
