#!/usr/bin/env python3
"""Writes the LeNet-5 of the training demo as an ONNX model with seeded initial weights.

    python3 examples/train/lenet.py OUT.onnx [--batch 100] [--seed 0]

The model of the classic MNIST convolutional example: 5x5 convolutions of 32 and
64 channels (same padding) each followed by ReLU and 2x2 max pooling, a
512-unit fully connected layer with ReLU, and 10 logits. Input `image`
[batch, 1, 28, 28] f32, output `logits` [batch, 10]. Convolution and fully
connected weights are drawn from a normal distribution truncated at two
standard deviations, with He's scale sqrt(2 / fan_in); biases start at zero.
Needs only numpy and onnx (Debian: python3-numpy, python3-onnx).
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def truncated_normal(rng, shape, fan_in):
    std = np.sqrt(2.0 / fan_in)
    values = rng.standard_normal(size=shape)
    while True:  # redraw beyond two standard deviations, as TensorFlow's truncated_normal
        outside = np.abs(values) > 2
        if not outside.any():
            break
        values[outside] = rng.standard_normal(size=int(outside.sum()))
    return (values * std).astype(np.float32)


def build(batch, seed):
    rng = np.random.default_rng(seed)
    weights = {
        "conv1.w": truncated_normal(rng, (32, 1, 5, 5), 25),
        "conv1.b": np.zeros(32, np.float32),
        "conv2.w": truncated_normal(rng, (64, 32, 5, 5), 800),
        "conv2.b": np.zeros(64, np.float32),
        "fc1.w": truncated_normal(rng, (512, 3136), 3136),
        "fc1.b": np.zeros(512, np.float32),
        "fc2.w": truncated_normal(rng, (10, 512), 512),
        "fc2.b": np.zeros(10, np.float32),
    }
    same = dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2])
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], "conv1", **same),
        helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], "pool1", **pool),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], "conv2", **same),
        helper.make_node("Relu", ["c2"], ["r2"], "relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], "pool2", **pool),
        helper.make_node("Flatten", ["p2"], ["flat"], "flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.w", "fc1.b"], ["h"], "fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r3"], "relu3"),
        helper.make_node("Gemm", ["r3", "fc2.w", "fc2.b"], ["logits"], "fc2", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "lenet5",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, 1, 28, 28])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])],
        [numpy_helper.from_array(w, name) for name, w in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="kiln examples/train/lenet.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    onnx.save(build(args.batch, args.seed), args.output)


if __name__ == "__main__":
    main()
