#!/usr/bin/env python3
"""Writes a small IDX data set for the kiln-train tests, with plain Python.

    make_idx.py DIR

DIR/train-images-idx3-ubyte [240, 4, 4] u8 and train-labels-idx1-ubyte [240]
u8 in 3 classes (the brightest of three bands of the image), the same for
t10k-* with 40 examples; and broken files: images.truncated (its data cut
short), images.badmagic (a PNG signature), labels.outofrange (a label 7).
"""
import os
import random
import struct
import sys


def idx(path, code, shape, values):
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, code, len(shape)))
        f.write(struct.pack(">%dI" % len(shape), *shape))
        f.write(bytes(values))


def examples(rng, count):
    images, labels = [], []
    for _ in range(count):
        label = rng.randrange(3)
        for row in range(4):
            for col in range(4):
                band = min(col * 3 // 4, 2)
                images.append(rng.randrange(120, 256) if band == label else rng.randrange(0, 140))
        labels.append(label)
    return images, labels


out = sys.argv[1]
rng = random.Random(0)
for prefix, count in (("train", 240), ("t10k", 40)):
    images, labels = examples(rng, count)
    idx(os.path.join(out, prefix + "-images-idx3-ubyte"), 0x08, [count, 4, 4], images)
    idx(os.path.join(out, prefix + "-labels-idx1-ubyte"), 0x08, [count], labels)
images, labels = examples(rng, 10)
idx(os.path.join(out, "images.truncated"), 0x08, [10, 4, 4], images[:-5])
with open(os.path.join(out, "images.badmagic"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + bytes(images))
idx(os.path.join(out, "labels.outofrange"), 0x08, [240], [0] * 200 + [7] + [1] * 39)
