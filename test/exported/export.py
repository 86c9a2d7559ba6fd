#!/usr/bin/env python3
"""Exports the standard architectures users bring, at reduced widths, as Kiln's
exported-model test set, with ONNX Runtime's outputs as the references.

Each model is built from torchvision, transformers or plain torch.nn layers with
random weights (never downloaded ones), its batch norms calibrated on random
batches (so activations are not degenerate), exported with torch.onnx.export
(TorchScript exporter, opset 17, static shapes), and run by ONNX Runtime's CPU
provider on a fixed random input. Written in the layout of ONNX's backend tests,
which kiln-conformance reads:

    test/exported/<model>/model.onnx
    test/exported/<model>/test_data_set_0/{input,output}_N.pb

Widths are cut so that the whole set stays small (a few hundred KB) while every
layer type of the full-size model remains. The test suite then needs neither
PyTorch nor ONNX Runtime; only regenerating does:

    python3 -m venv bench/.venv-models
    bench/.venv-models/bin/pip install -r bench/requirements-models.txt
    bench/.venv-models/bin/python test/exported/export.py            # every model
    bench/.venv-models/bin/python test/exported/export.py --models unet,swin
"""
import argparse
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))


def _torch():
    import torch
    return torch


# ---------------------------------------------------------------------------------------------
# The models. Each builder returns (module, inputs, output names), inputs a list of
# (name, array).

def lstm_classifier(rng):
    """Text classifier: embedding, 2-layer bidirectional LSTM, linear head on the last step."""
    torch = _torch()
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 16)
            self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(48, 4)

        def forward(self, tokens):
            states, _ = self.lstm(self.embed(tokens))
            return self.head(states[:, -1])

    return Model(), [("tokens", rng.integers(0, 50, (2, 10)).astype(np.int64))], ["logits"]


def gru_tagger(rng):
    """Sequence tagger: embedding, GRU (sequence-major, initial state given), linear per token."""
    torch = _torch()
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 16)
            self.gru = nn.GRU(16, 20)
            self.head = nn.Linear(20, 6)

        def forward(self, tokens, state):
            states, _ = self.gru(self.embed(tokens), state)
            return self.head(states)

    return Model(), [("tokens", rng.integers(0, 50, (12, 2)).astype(np.int64)),
                     ("state", rng.standard_normal((1, 2, 20)).astype(np.float32))], ["tags"]


def text_cnn(rng):
    """Text CNN: embedding, dilated 1-D convolutions with batch norm, global max pooling."""
    torch = _torch()
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(60, 16)
            self.convs = nn.Sequential(
                nn.Conv1d(16, 24, 3, padding=1), nn.BatchNorm1d(24), nn.ReLU(),
                nn.Conv1d(24, 24, 3, padding=2, dilation=2), nn.ReLU(),
                nn.Conv1d(24, 32, 5, stride=2))
            self.head = nn.Linear(32, 3)

        def forward(self, tokens):
            x = self.convs(self.embed(tokens).transpose(1, 2))
            return self.head(nn.functional.adaptive_max_pool1d(x, 1).squeeze(2))

    return Model(), [("tokens", rng.integers(0, 60, (2, 20)).astype(np.int64))], ["logits"]


def unet(rng):
    """U-Net (Ronneberger et al.) as commonly written: double 3x3 convolutions with batch
    norm, max-pool downsampling, one up path by ConvTranspose and one by bilinear Upsample,
    skip connections padded to size with F.pad before concatenation."""
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    def double_conv(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def pad_to(x, like):
        dy = like.size()[2] - x.size()[2]
        dx = like.size()[3] - x.size()[3]
        return F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.inc = double_conv(3, 8)
            self.down1 = nn.Sequential(nn.MaxPool2d(2), double_conv(8, 16))
            self.down2 = nn.Sequential(nn.MaxPool2d(2), double_conv(16, 32))
            self.up1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.conv1 = double_conv(32, 16)
            self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv2 = double_conv(24, 8)
            self.outc = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            y = self.conv1(torch.cat([x2, pad_to(self.up1(x3), x2)], 1))
            y = self.conv2(torch.cat([x1, pad_to(self.up2(y), x1)], 1))
            return self.outc(y)

    return Model(), [("image", rng.standard_normal((1, 3, 40, 40)).astype(np.float32))], ["masks"]


def fpn_detector(rng):
    """Feature-pyramid detector head: a small strided backbone, torchvision's
    FeaturePyramidNetwork (nearest upsampling to each lateral's size, extra max-pool level)
    and torchvision's RetinaNetHead (class logits and box deltas for every anchor)."""
    torch = _torch()
    nn = torch.nn
    from torchvision.ops import FeaturePyramidNetwork
    from torchvision.ops.feature_pyramid_network import LastLevelMaxPool
    from torchvision.models.detection.retinanet import RetinaNetHead

    def stage(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(stage(3, 8), stage(8, 16))
            self.c3 = stage(16, 32)
            self.c4 = stage(32, 64)
            self.fpn = FeaturePyramidNetwork([16, 32, 64], 16, extra_blocks=LastLevelMaxPool())
            self.head = RetinaNetHead(16, num_anchors=9, num_classes=5)

        def forward(self, x):
            c2 = self.stem(x)
            c3 = self.c3(c2)
            c4 = self.c4(c3)
            features = list(self.fpn({"c2": c2, "c3": c3, "c4": c4}).values())
            out = self.head(features)
            return out["cls_logits"], out["bbox_regression"]

    return (Model(), [("image", rng.standard_normal((1, 3, 64, 48)).astype(np.float32))],
            ["class_logits", "box_deltas"])


def vit(rng):
    """torchvision's VisionTransformer: patch embedding, class token, nn.MultiheadAttention."""
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
    return model, [("image", rng.standard_normal((2, 3, 32, 32)).astype(np.float32))], ["logits"]


def bert(rng):
    """transformers' BertModel with token types, a padding mask and the pooler."""
    torch = _torch()
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32, type_vocab_size=2,
                        attn_implementation="eager")
    inner = BertModel(config)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    seq = 12
    mask = np.ones((2, seq), np.int64)
    mask[1, 9:] = 0  # the second sentence is padded
    types = (np.arange(seq)[None, :] >= 5).astype(np.int64).repeat(2, 0)
    return (Model(), [("input_ids", rng.integers(0, 100, (2, seq)).astype(np.int64)),
                     ("attention_mask", mask), ("token_type_ids", types)],
            ["last_hidden_state", "pooler_output"])


def swin(rng):
    """torchvision's SwinTransformer: shifted windows (roll, window masks), patch merging."""
    from torchvision.models.swin_transformer import SwinTransformer
    model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                            window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)
    return model, [("image", rng.standard_normal((1, 3, 64, 64)).astype(np.float32))], ["logits"]


def densenet(rng):
    """torchvision's DenseNet: each layer's batch norm, ReLU and convolutions read the
    concatenation of its block's input and every feature map before it (growth 16, channel
    counts whole blocks of 16, so the blocked layout joins them); batch 2."""
    from torchvision.models.densenet import DenseNet
    model = DenseNet(growth_rate=16, block_config=(4, 4), num_init_features=32, bn_size=2,
                     num_classes=10)
    return model, [("image", rng.standard_normal((2, 3, 32, 32)).astype(np.float32))], ["logits"]


def squeezenet(rng):
    """torchvision's SqueezeNet Fire modules: each concatenates its 1x1 and 3x3 expand
    convolutions along channels, which Kiln's convolutions write into their slots of the
    concatenation in place (at batch 2 the slots' images are apart); ceil-mode max pools
    between them, as in squeezenet1_1."""
    torch = _torch()
    from torchvision.models.squeezenet import Fire
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 32, kernel_size=3, stride=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(32, 16, 32, 32), Fire(64, 16, 32, 32),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(64, 16, 48, 48),
        nn.Conv2d(96, 10, kernel_size=1), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())
    return model, [("image", rng.standard_normal((2, 3, 40, 40)).astype(np.float32))], ["logits"]


MODELS = {
    "lstm_classifier": lstm_classifier,
    "gru_tagger": gru_tagger,
    "text_cnn": text_cnn,
    "unet": unet,
    "fpn_detector": fpn_detector,
    "vit": vit,
    "bert": bert,
    "swin": swin,
    "densenet": densenet,
    "squeezenet": squeezenet,
}


# ---------------------------------------------------------------------------------------------

def export(name, out_dir):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from models import calibrate_batch_norms
    torch = _torch()
    torch.manual_seed(0)
    rng = np.random.default_rng(20261126)
    model, inputs, output_names = MODELS[name](rng)
    # Library initializations meant for training from scratch leave heads degenerate: zeros
    # (ViT's classifier), or a prior bias over tiny weights (RetinaNet's logits, all -4.6).
    # PyTorch's default initialization of every convolution and linear layer instead gives
    # outputs of order one, so the references test something.
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.modules.conv._ConvNd)):
            module.reset_parameters()
    image = next((a for _, a in inputs if a.dtype == np.float32 and a.ndim == 4), None)
    if image is not None:
        calibrate_batch_norms(model, image.shape)
    model.eval()
    # nn.MultiheadAttention's fused inference path has no ONNX export; users turn it off.
    torch.backends.mha.set_fastpath_enabled(False)

    directory = os.path.join(out_dir, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    path = os.path.join(directory, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, tuple(torch.from_numpy(a) for _, a in inputs), path,
                          opset_version=17, input_names=[n for n, _ in inputs],
                          output_names=output_names, dynamo=False)
    proto = onnx.load(path)
    proto.producer_name, proto.producer_version = "kiln-test-export", ""
    onnx.checker.check_model(proto)
    onnx.save(proto, path)

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = session.run(None, dict(inputs))
    names = [o.name for o in session.get_outputs()]
    for kind, tensors in (("input", inputs), ("output", list(zip(names, outputs)))):
        for i, (tensor_name, array) in enumerate(tensors):
            with open(os.path.join(directory, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(array), tensor_name).SerializeToString())
    ops = sorted({node.op_type for node in proto.graph.node})
    size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(directory)
               for f in files)
    print(f"{name}: {len(proto.graph.node)} nodes, {size // 1024} KB, ops {' '.join(ops)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated subset of: {', '.join(MODELS)}")
    parser.add_argument("--out", default=HERE, help="where the model folders go (default: here)")
    args = parser.parse_args()
    for name in args.models.split(","):
        if name not in MODELS:
            parser.error(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        export(name, args.out)


if __name__ == "__main__":
    main()
