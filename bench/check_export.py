"""Checks a model exported by kiln-train against onnxruntime.

    /tmp/torchenv/bin/python bench/check_export.py build/examples/train/lenet-trained.onnx \
        [--data /usr/share/datasets/fashion-mnist] [--predictions build/examples/train/predictions.npy]

Compiles the exported model with kilnc, runs the held-out images through it
(kiln-run) and through onnxruntime, and prints how far the logits are apart
and how many predicted classes agree between the two and with kiln-train's
--predictions (the train step's eval entry). Needs numpy and onnxruntime.
"""
import argparse
import gzip
import os
import subprocess
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")


def idx(path, header):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        return np.frombuffer(f.read()[header:], np.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--predictions")
    args = parser.parse_args()

    graph = onnx.load(args.model).graph
    initializers = {i.name for i in graph.initializer}
    (data_input,) = [i for i in graph.input if i.name not in initializers]
    batch, *row = [d.dim_value for d in data_input.type.tensor_type.shape.dim]
    images = idx(os.path.join(args.data, "t10k-images-idx3-ubyte.gz"), 16)
    images = (images.astype(np.float64) * (1 / 255)).astype(np.float32).reshape(-1, *row)
    count = len(images) // batch * batch

    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    with tempfile.TemporaryDirectory() as work:
        artifact = os.path.join(work, "model.kiln")
        subprocess.run([os.path.join(BIN, "kilnc"), args.model, "-o", artifact], check=True)
        kiln, reference = [], []
        for first in range(0, count, batch):
            x = images[first:first + batch]
            np.save(os.path.join(work, "x.npy"), x)
            subprocess.run([os.path.join(BIN, "kiln-run"), artifact, "--input",
                            data_input.name + "=" + os.path.join(work, "x.npy"),
                            "--output-dir", work], check=True, stdout=subprocess.DEVNULL)
            (name,) = [o.name for o in graph.output]
            kiln.append(np.load(os.path.join(work, name + ".npy")))
            reference.append(session.run(None, {data_input.name: x})[0])
    kiln, reference = np.concatenate(kiln), np.concatenate(reference)
    print("%d images; max |kiln - onnxruntime| of the logits: %.3g" %
          (count, np.abs(kiln - reference).max()))
    print("classes agreeing, kilnc-compiled export vs onnxruntime: %d of %d" %
          ((kiln.argmax(1) == reference.argmax(1)).sum(), count))
    if args.predictions:
        predicted = np.load(args.predictions)[:count]
        print("classes agreeing, export (kilnc) vs the train step's eval entry: %d of %d" %
              ((kiln.argmax(1) == predicted).sum(), count))
        print("classes agreeing, export (onnxruntime) vs the train step's eval entry: %d of %d" %
              ((reference.argmax(1) == predicted).sum(), count))


if __name__ == "__main__":
    main()
