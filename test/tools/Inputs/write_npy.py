#!/usr/bin/env python3
"""Writes small .npy files for the kilnc --train tool tests, with plain Python (no NumPy).

    write_npy.py DIR    # x.npy f32[4x3], w.npy f32[2x3], b.npy f32[2], step.npy i64[],
                        # labels.npy i64[4], labels_f32.npy f32[4], labels_short.npy i64[3]
"""
import os
import struct
import sys


def save(path, descr, shape, values):
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<f4": "f", "<i8": "q"}[descr]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


out = sys.argv[1]
save(os.path.join(out, "x.npy"), "<f4", [4, 3], [0.5, -1, 0.25, 1, 0.5, -0.5, -0.75, 0.25, 1, 0.1, 0.9, -0.3])
save(os.path.join(out, "w.npy"), "<f4", [2, 3], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6])
save(os.path.join(out, "b.npy"), "<f4", [2], [0, 0])
save(os.path.join(out, "step.npy"), "<i8", [], [0])
save(os.path.join(out, "labels.npy"), "<i8", [4], [0, 1, 1, 0])
save(os.path.join(out, "labels_f32.npy"), "<f4", [4], [0, 1, 1, 0])
save(os.path.join(out, "labels_short.npy"), "<i8", [3], [0, 1, 1])
