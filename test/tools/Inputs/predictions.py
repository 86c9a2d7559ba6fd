#!/usr/bin/env python3
"""Helpers for the kiln-train export test, in plain Python (no NumPy).

    predictions.py batch IMAGES_IDX COUNT OUT.npy   # the first COUNT images as f32 / 255
    predictions.py agree LOGITS.npy PREDICTIONS.npy # argmax of LOGITS against PREDICTIONS
"""
import ast
import struct
import sys


def read_npy(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    length = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + length].decode())
    code = {"<f4": "f", "<i8": "q"}[header["descr"]]
    count = 1
    for d in header["shape"]:
        count *= d
    return header["shape"], struct.unpack("<%d%s" % (count, code), data[10 + length:])


if sys.argv[1] == "batch":
    images, count, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    data = open(images, "rb").read()
    rank = data[3]
    dims = struct.unpack(">%dI" % rank, data[4:4 + 4 * rank])
    size = 1
    for d in dims[1:]:
        size *= d
    pixels = data[4 + 4 * rank:4 + 4 * rank + count * size]
    shape = ", ".join(map(str, (count,) + dims[1:]))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % shape
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(pixels), *[p / 255.0 for p in pixels]))
else:
    (rows, classes), logits = read_npy(sys.argv[2])
    _, predictions = read_npy(sys.argv[3])
    agree = sum(
        max(range(classes), key=lambda c: logits[r * classes + c]) == predictions[r]
        for r in range(rows))
    print("%d of %d predictions agree" % (agree, rows))
