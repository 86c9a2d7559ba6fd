"""Helpers for the scripts that write one-node ONNX models for the import
tests: the folder (argv[1]), value infos and a model saver."""
import os
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper as h

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def info(name, shape, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def save(name, node, inputs, outputs, inits=(), opset=17, domains=()):
    """Writes out/<name>.onnx: `node` alone, importing the default domain at
    `opset` (None: not at all) and the (domain, version) pairs `domains`."""
    graph = h.make_graph([node], name, inputs, outputs, list(inits))
    imports = [h.make_opsetid("", opset)] if opset is not None else []
    imports += [h.make_opsetid(d, v) for d, v in domains]
    model = h.make_model(graph, opset_imports=imports, ir_version=8)
    onnx.save(model, os.path.join(out, name + ".onnx"))
