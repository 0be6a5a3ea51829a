"""Avro's zig-zag variable-length longs: the counts and sizes that frame an Avro container's
blocks, for the writers that assemble containers from already encoded records."""


def write_long(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
