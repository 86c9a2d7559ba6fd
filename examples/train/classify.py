#!/usr/bin/env python3
"""Classifies Fashion-MNIST test images with a compiled inference artifact.

    classify.py MODEL.kiln DATA_DIR PREDICTIONS.npy WORK_DIR [COUNT]

Runs kiln-run on the first COUNT (default: the artifact's batch) test images,
prints the first ten with their true classes, the accuracy over COUNT, and how
many predictions agree with PREDICTIONS.npy (what kiln-train's evaluation of
the train step predicted for the same images).
"""
import gzip
import os
import subprocess
import sys

import numpy as np

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def idx(path, header):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return np.frombuffer(f.read()[header:], np.uint8)


def first(data_dir, stem):
    path = os.path.join(data_dir, stem)
    return path + ".gz" if os.path.exists(path + ".gz") else path


def main():
    model, data_dir, predictions, work = sys.argv[1:5]
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 100
    kiln_run = os.path.join(os.path.dirname(os.path.abspath(model)), "..", "..", "bin", "kiln-run")
    kiln_run = os.environ.get("KILN_RUN", kiln_run)
    images = idx(first(data_dir, "t10k-images-idx3-ubyte"), 16).reshape(-1, 1, 28, 28)[:count]
    labels = idx(first(data_dir, "t10k-labels-idx1-ubyte"), 8)[:count]
    os.makedirs(work, exist_ok=True)
    np.save(os.path.join(work, "images.npy"), images.astype(np.float32) / np.float32(255))
    subprocess.run([kiln_run, model, "--input", "image=" + os.path.join(work, "images.npy"),
                    "--output-dir", work], check=True, stdout=subprocess.DEVNULL)
    classes = np.load(os.path.join(work, "logits.npy")).argmax(axis=1)
    for i in range(10):
        mark = "" if classes[i] == labels[i] else "   (wrong)"
        print("  image %d: %-12s true: %-12s%s" % (i, CLASSES[classes[i]], CLASSES[labels[i]], mark))
    print("accuracy on these %d test images: %.1f%%" % (count, 100 * (classes == labels).mean()))
    agree = (classes == np.load(predictions)[:count]).sum()
    print("%d of %d agree with the train step's evaluation" % (agree, count))


if __name__ == "__main__":
    main()
