#!/usr/bin/env python3
"""Writes the PyTorch references that kiln-training-tests compares Kiln's train steps against.

For each model (an MLP, a LeNet-5-style CNN, a convolution with batch normalization, a
transformer encoder layer with a classifier head and a ResNet basic block with strided
convolutions, all small), it builds the model in PyTorch with fixed random weights, exports it to ONNX
(weights as initializers), trains it for 100 steps on a few fixed batches with the optimizer,
schedule and regularization that <model>/train.cfg gives kilnc, and saves:

  <model>/model.onnx        the forward model with its initial weights
  <model>/train.cfg         the kilnc --train-config options (the same recipe)
  <model>/init/<name>.npy   the initial weights (the train step's initial state), named and laid
                            out as the ONNX initializers (the exporter stores some weights
                            transposed, as onnx::MatMul_N)
  <model>/x.npy             inputs, [batches, batch, ...]; step i uses batch i % batches
  <model>/labels.npy        class indices, [batches, batch], int64
  <model>/losses.npy        the loss PyTorch computed at each step, [100], float64
  <model>/final/<name>.npy  the weights (and running statistics) after 100 steps

Needs torch and onnx (PyPI); run once, from anywhere (naming models generates only those):
    python3 test/training/reference/generate.py [resnet ...]
"""
import math
import os

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 100
torch.manual_seed(20261125)
torch.set_default_dtype(torch.float32)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class LeNet(nn.Module):
    """The seeds' LeNet-5 layout (5x5 convolutions, 2x2 pooling, two fully connected layers),
    narrowed to 12x12 images so that the test stays fast."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5, padding=2)
        self.conv2 = nn.Conv2d(8, 16, 5, padding=2)
        self.fc1 = nn.Linear(16 * 3 * 3, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBatchNorm(nn.Module):
    """Convolution, ReLU and batch normalization (in that order: the exporter would fold a
    normalization right after a convolution into it), trained with batch statistics."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 5)
        with torch.no_grad():
            self.bn.weight.add_(0.1 * torch.randn(4))
            self.bn.bias.add_(0.1 * torch.randn(4))

    def forward(self, x):
        x = F.max_pool2d(self.bn(torch.relu(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


class ResidualBlock(nn.Module):
    """A ResNet basic block that halves the image (a stride-2 3x3 convolution, and a stride-2 1x1
    convolution on the shortcut) after a stem convolution, so that the strided convolutions'
    input gradients flow on."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.conv1 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.down = nn.Conv2d(8, 16, 1, stride=2)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = self.conv2(torch.relu(self.conv1(x)))
        y = torch.relu(y + self.down(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class TransformerLayer(nn.Module):
    """A post-norm encoder layer (two-head attention, GELU feed-forward) and a mean-pooled
    classifier, written out so that the export is plain MatMul, Softmax and LayerNormalization."""

    def __init__(self, d=16, heads=2, ffn=32, classes=4):
        super().__init__()
        self.heads = heads
        # No bias: the keys' bias has a zero gradient (softmax ignores a shift shared by all
        # keys), so Adam would turn the rounding noise in it into full-size steps that differ
        # between any two implementations.
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ffn)
        self.ff2 = nn.Linear(ffn, d)
        self.norm2 = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)
        # Distinct scales and shifts: the exporter merges initializers that are equal, which
        # would make the two norms share one weight in ONNX.
        with torch.no_grad():
            for norm in (self.norm1, self.norm2):
                norm.weight.add_(0.1 * torch.randn(d))
                norm.bias.add_(0.1 * torch.randn(d))

    def forward(self, x):
        b, s, d = x.shape
        h, dh = self.heads, d // self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.reshape(b, s, h, dh).transpose(1, 2)
        k = k.reshape(b, s, h, dh).transpose(1, 2)
        v = v.reshape(b, s, h, dh).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(dh), dim=3)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.norm1(x + self.proj(y))
        x = self.norm2(x + self.ff2(F.gelu(self.ff1(x))))
        return self.head(x.mean(dim=1))


def onnx_layout(path, params):
    """Maps each float initializer of the exported model to (parameter name, transposed)."""
    mapping = {}
    for init in onnx.load(path).graph.initializer:
        value = onnx.numpy_helper.to_array(init)
        if value.dtype != np.float32:
            continue
        for pname, p in params.items():
            p = p.detach().numpy()
            if p.shape == value.shape and np.array_equal(p, value):
                mapping[init.name] = (pname, False)
                break
            if p.ndim == 2 and p.T.shape == value.shape and np.array_equal(p.T, value):
                mapping[init.name] = (pname, True)
                break
        else:
            raise SystemExit(f"{path}: initializer {init.name} is no parameter of the model")
    if len(set(m[0] for m in mapping.values())) != len(params):  # params: every state tensor
        raise SystemExit(f"{path}: the initializers do not cover every parameter once")
    return mapping


def exp_decay(lr, rate, steps, staircase):
    def at(step):
        e = step / steps
        return lr * rate ** (math.floor(e) if staircase else e)
    return at


MODELS = {
    "mlp": dict(
        make=Mlp, input=(16, 20), classes=5, batches=4,
        config={"optimizer": "momentum", "learning-rate": "0.05", "momentum": "0.9"}),
    "lenet": dict(
        make=LeNet, input=(8, 1, 12, 12), classes=10, batches=4,
        config={"optimizer": "sgd", "learning-rate": "0.1", "lr-schedule": "exponential",
                "decay-rate": "0.5", "decay-steps": "30", "staircase": "true",
                "l2": "0.001", "l2-weights": "fc.*weight", "ema-decay": "0.99"}),
    "batchnorm": dict(
        make=ConvBatchNorm, input=(8, 1, 8, 8), classes=5, batches=4,
        config={"optimizer": "momentum", "learning-rate": "0.05", "momentum": "0.9"}),
    "transformer": dict(
        make=TransformerLayer, input=(4, 6, 16), classes=4, batches=3,
        config={"optimizer": "adam", "learning-rate": "0.003"}),
    # Seeded on its own, so that it can be generated alone (`generate.py resnet`). At the MLP's
    # learning rate of 0.05, a ReLU input within rounding of zero changed sign at step 70 on one
    # host, and the 7e-6 that made in the loss grew to 5e-3 by step 100; at 0.02 it stays at
    # rounding level.
    "resnet": dict(
        make=ResidualBlock, input=(8, 3, 12, 12), classes=5, batches=3, seed=20261127,
        config={"optimizer": "momentum", "learning-rate": "0.02", "momentum": "0.9"}),
}


def train(name, spec):
    if "seed" in spec:
        torch.manual_seed(spec["seed"])
    model = spec["make"]()
    cfg = spec["config"]
    out = os.path.join(HERE, name)
    os.makedirs(os.path.join(out, "init"), exist_ok=True)
    os.makedirs(os.path.join(out, "final"), exist_ok=True)

    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    x = torch.randn((spec["batches"],) + spec["input"], generator=gen)
    labels = torch.randint(0, spec["classes"], (spec["batches"], spec["input"][0]), generator=gen)
    model.eval()  # exported for inference: normalization with the running statistics
    torch.onnx.export(model, (x[0],), os.path.join(out, "model.onnx"), dynamo=False,
                      opset_version=17, input_names=["x"], output_names=["logits"])
    model.train()
    with open(os.path.join(out, "train.cfg"), "w") as f:
        f.write(f"# The recipe generate.py trained {name} with in PyTorch.\n")
        for key, value in cfg.items():
            f.write(f"{key} = {value}\n")
    params = dict(model.named_parameters())
    # Batch normalization's running statistics are state too.
    tensors = {**params, **{n: b for n, b in model.named_buffers() if "running" in n}}
    onnx_names = onnx_layout(os.path.join(out, "model.onnx"), tensors)
    for oname, (pname, transposed) in onnx_names.items():
        value = tensors[pname].detach().numpy()
        np.save(os.path.join(out, "init", oname + ".npy"), np.ascontiguousarray(value.T if transposed else value))
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "labels.npy"), labels.numpy().astype(np.int64))

    lr0 = float(cfg["learning-rate"])
    if cfg["optimizer"] == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr0)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr0,
                              momentum=float(cfg.get("momentum", 0)) if cfg["optimizer"] == "momentum" else 0)
    schedule = (exp_decay(lr0, float(cfg["decay-rate"]), int(cfg["decay-steps"]), cfg.get("staircase") == "true")
                if cfg.get("lr-schedule") == "exponential" else (lambda step: lr0))
    l2 = float(cfg.get("l2", 0))
    l2_names = [n for n in params if l2 and __import__("re").fullmatch(cfg["l2-weights"], n)]
    ema_decay = float(cfg.get("ema-decay", 0))
    ema = {n: p.detach().clone() for n, p in params.items()}
    losses = []
    for step in range(STEPS):
        b = step % spec["batches"]
        for group in opt.param_groups:
            group["lr"] = schedule(step)
        opt.zero_grad()
        loss = F.cross_entropy(model(x[b]), labels[b])
        if l2_names:
            loss = loss + sum(l2 / 2 * (params[n] ** 2).sum() for n in l2_names)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if ema_decay:
            d = min(ema_decay, (1 + step) / (10 + step))
            with torch.no_grad():
                for n, p in params.items():
                    ema[n] -= (1 - d) * (ema[n] - p)
    np.save(os.path.join(out, "losses.npy"), np.array(losses, dtype=np.float64))
    for oname, (pname, transposed) in onnx_names.items():
        layout = (lambda a: np.ascontiguousarray(a.T)) if transposed else (lambda a: a)
        np.save(os.path.join(out, "final", oname + ".npy"), layout(tensors[pname].detach().numpy()))
        if ema_decay and pname in ema:
            np.save(os.path.join(out, "final", "ema." + oname + ".npy"), layout(ema[pname].numpy()))
    print(f"{name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    import sys
    for model_name, model_spec in MODELS.items():
        if len(sys.argv) < 2 or model_name in sys.argv[1:]:
            train(model_name, model_spec)
