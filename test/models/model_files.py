"""What the model generators under test/models share: a one-graph ONNX model
and its test data set, written in the layout of ONNX's backend tests
(model.onnx, test_data_set_0/input_N.pb and output_N.pb), which
kiln-conformance reads. Needs numpy and onnx."""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def tensor(rng, shape, scale=1.0):
    """Multiples of 1/32 in [-scale, scale], float32: products and sums of a
    few of these are exact in float32, whatever the order."""
    steps = int(round(scale * 32))
    return (rng.integers(-steps, steps + 1, size=shape) / 32.0).astype(np.float32)


def save(directory, name, nodes, inputs, outputs, initializers):
    """Writes the graph `name` of `nodes` and its test data into `directory`;
    inputs, outputs and initializers are lists of (name, array), every tensor
    float32 (outputs are converted)."""
    def value_info(tensor_name, array):
        return helper.make_tensor_value_info(tensor_name, TensorProto.FLOAT, list(array.shape))

    graph = helper.make_graph(nodes, name, [value_info(n, a) for n, a in inputs],
                              [value_info(n, a) for n, a in outputs],
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="kiln-test")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(directory, "model.onnx"))

    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, (tensor_name, array) in enumerate(tensors):
            with open(os.path.join(data, f"{kind}_{i}.pb"), "wb") as f:
                proto = numpy_helper.from_array(array.astype(np.float32), tensor_name)
                f.write(proto.SerializeToString())
