#!/usr/bin/env python3
"""Writes the example model, its input and its reference output.

A small image classifier, Conv(3x3, 4 filters, pad 1) -> Relu -> MaxPool(2x2)
-> Flatten -> Gemm(64 -> 10) -> Softmax, on a batch of two 8x8 images, with
fixed pseudo-random weights. The reference output is computed here in double
precision with plain Python, independently of Kiln. The files follow the
layout of ONNX's backend tests (model.onnx, test_data_set_0/input_0.pb,
output_0.pb), so kiln-conformance can check them.

Needs only python3 and protoc (protobuf-compiler); run from anywhere:
    python3 examples/cnn/generate.py
"""
import math
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ONNX_PROTO_DIR = "/usr/include/onnx"
BATCH, SIZE, FILTERS, CLASSES = 2, 8, 4, 10

rng = random.Random(20261121)


def uniform(n, scale):
    return [round(rng.uniform(-scale, scale), 4) for _ in range(n)]


x = [round(rng.uniform(0.0, 1.0), 4) for _ in range(BATCH * SIZE * SIZE)]
conv_w = uniform(FILTERS * 9, 0.5)
conv_b = uniform(FILTERS, 0.1)
flat = FILTERS * (SIZE // 2) * (SIZE // 2)
fc_w = uniform(CLASSES * flat, 0.3)  # [CLASSES, flat], used with transB = 1
fc_b = uniform(CLASSES, 0.1)


def reference():
    out = []
    for n in range(BATCH):
        img = x[n * SIZE * SIZE:(n + 1) * SIZE * SIZE]
        pooled = []
        for f in range(FILTERS):
            conv = [[0.0] * SIZE for _ in range(SIZE)]
            for i in range(SIZE):
                for j in range(SIZE):
                    acc = conv_b[f]
                    for di in range(3):
                        for dj in range(3):
                            ii, jj = i + di - 1, j + dj - 1
                            if 0 <= ii < SIZE and 0 <= jj < SIZE:
                                acc += img[ii * SIZE + jj] * conv_w[f * 9 + di * 3 + dj]
                    conv[i][j] = max(acc, 0.0)
            for i in range(0, SIZE, 2):
                for j in range(0, SIZE, 2):
                    pooled.append(max(conv[i][j], conv[i][j + 1],
                                      conv[i + 1][j], conv[i + 1][j + 1]))
        logits = [fc_b[c] + sum(pooled[k] * fc_w[c * flat + k] for k in range(flat))
                  for c in range(CLASSES)]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        out.extend(e / total for e in exps)
    return out


def dims(shape):
    return " ".join(f"dims: {d}" for d in shape)


def floats(values):
    return " ".join(f"float_data: {v!r}" for v in values)


def tensor(name, shape, values):
    return f'name: "{name}" data_type: 1 {dims(shape)} {floats(values)}'


def value_info(name, shape):
    d = " ".join(f"dim {{ dim_value: {s} }}" for s in shape)
    return f'name: "{name}" type {{ tensor_type {{ elem_type: 1 shape {{ {d} }} }} }}'


MODEL = f"""
ir_version: 8
producer_name: "kiln-examples"
opset_import {{ domain: "" version: 17 }}
graph {{
  name: "cnn"
  node {{ name: "conv" op_type: "Conv" input: "image" input: "conv_w" input: "conv_b"
         output: "conv_out"
         attribute {{ name: "kernel_shape" type: INTS ints: 3 ints: 3 }}
         attribute {{ name: "pads" type: INTS ints: 1 ints: 1 ints: 1 ints: 1 }} }}
  node {{ name: "relu" op_type: "Relu" input: "conv_out" output: "relu_out" }}
  node {{ name: "pool" op_type: "MaxPool" input: "relu_out" output: "pool_out"
         attribute {{ name: "kernel_shape" type: INTS ints: 2 ints: 2 }}
         attribute {{ name: "strides" type: INTS ints: 2 ints: 2 }} }}
  node {{ name: "flatten" op_type: "Flatten" input: "pool_out" output: "flat" }}
  node {{ name: "fc" op_type: "Gemm" input: "flat" input: "fc_w" input: "fc_b" output: "logits"
         attribute {{ name: "transB" type: INT i: 1 }} }}
  node {{ name: "softmax" op_type: "Softmax" input: "logits" output: "probabilities" }}
  initializer {{ {tensor("conv_w", [FILTERS, 1, 3, 3], conv_w)} }}
  initializer {{ {tensor("conv_b", [FILTERS], conv_b)} }}
  initializer {{ {tensor("fc_w", [CLASSES, flat], fc_w)} }}
  initializer {{ {tensor("fc_b", [CLASSES], fc_b)} }}
  input {{ {value_info("image", [BATCH, 1, SIZE, SIZE])} }}
  output {{ {value_info("probabilities", [BATCH, CLASSES])} }}
}}
"""


def encode(message, text, path):
    proto = os.path.join(ONNX_PROTO_DIR, "onnx.proto")
    binary = subprocess.run(["protoc", f"--encode=onnx.{message}", f"-I{ONNX_PROTO_DIR}", proto],
                            input=text.encode(), capture_output=True, check=True).stdout
    with open(path, "wb") as f:
        f.write(binary)


def main():
    os.makedirs(os.path.join(HERE, "test_data_set_0"), exist_ok=True)
    encode("ModelProto", MODEL, os.path.join(HERE, "model.onnx"))
    encode("TensorProto", tensor("image", [BATCH, 1, SIZE, SIZE], x),
           os.path.join(HERE, "test_data_set_0", "input_0.pb"))
    probs = reference()
    encode("TensorProto", tensor("probabilities", [BATCH, CLASSES], probs),
           os.path.join(HERE, "test_data_set_0", "output_0.pb"))
    for n in range(BATCH):
        row = probs[n * CLASSES:(n + 1) * CLASSES]
        print(f"image {n}: class {row.index(max(row))}, p = {max(row):.6f}", file=sys.stderr)


if __name__ == "__main__":
    main()
