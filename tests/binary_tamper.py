#!/usr/bin/env python3
"""Edits one value of a lemrt binary file (host/formats/binary_format.h) and, unless
--keep_checksums, recomputes every checksum, so that the reader's range checks
(not its CRCs) must catch the bad value. Used by tests/fault_binary_input.sh.

  binary_tamper.py FILE --record N (--label X | --dense K X | --count C | --flip BYTE)
      [--keep_checksums]
Records and dense inputs count from 0; --count sets the first sparse column's
value count; --flip xors one byte of the record with 0x10.
"""
import argparse
import struct

_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    _T.append(c)


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--record", type=int, default=0)
    p.add_argument("--label", type=float)
    p.add_argument("--dense", nargs=2)
    p.add_argument("--count", type=int)
    p.add_argument("--flip", type=int)
    p.add_argument("--keep_checksums", action="store_true")
    a = p.parse_args()
    b = bytearray(open(a.file, "rb").read())
    (records, blocks, cols_off, cols_bytes, index_off, per_block, _) = struct.unpack_from(
        "<qqqqqII", b, 16)
    k, i = divmod(a.record, per_block)
    off, size, _, n = struct.unpack_from("<qqII", b, index_off + 24 * k)
    ends = struct.unpack_from("<%dI" % n, b, off)
    area = off + 4 * n
    start = area + (ends[i - 1] if i else 0)
    dense = cols_bytes and open(a.file, "rb").read()[cols_off:cols_off + cols_bytes].count(b"dense {")
    if a.label is not None:
        struct.pack_into("<f", b, start, a.label)
    if a.dense is not None:
        struct.pack_into("<f", b, start + 4 + 4 * int(a.dense[0]), float(a.dense[1]))
    if a.count is not None:
        struct.pack_into("<I", b, start + 4 + 4 * dense, a.count)
    if a.flip is not None:
        b[start + a.flip] ^= 0x10
    if not a.keep_checksums:
        struct.pack_into("<I", b, index_off + 24 * k + 16, crc32c(bytes(b[off:off + size])))
        struct.pack_into("<I", b, 60, crc32c(bytes(b[cols_off:])))
        struct.pack_into("<I", b, 12, 0)
        struct.pack_into("<I", b, 12, crc32c(bytes(b[:64])))
    open(a.file, "wb").write(b)


if __name__ == "__main__":
    main()
