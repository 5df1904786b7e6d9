#!/usr/bin/env python3
"""make onnx-zoo: the zoo of models the graph tests run (tests/onnx/zoo, docs/graph.md), exported
by PyTorch as users export them today.

One more, the transformer on Fashion-MNIST images (fashion_transformer.onnx), is trained on the
60,000 training images and exported with its weights (its data file is committed) and PyTorch's
predictions on the 10,000 test images, which the test compares with the accelerator's.

Each of the others is built with torch.manual_seed(0) and PyTorch's own initialisation, and exported
twice: by the default exporter (torch.onnx.export, dynamo, its default opset, weights in an
external data file) as NAME.onnx, and by the TorchScript exporter at opset 17
(dynamo=False) as NAME_opset17.onnx; the batch dimension is left open in both. The weights are
not committed (ResNet-18 alone is 45 MB): each model keeps every tensor above 1 KiB in an
external data file, NAME.onnx.data, which is left out of the repository, and zoo.json records
each such tensor's mean and standard deviation per output channel, from which
tests/onnx/zoo_cases.py writes the data file again (normal values of those moments, from a fixed
seed). Batch normalisation's statistics are first measured on random inputs, as training sets
them, so that activations keep their scale through the network. Only the exporters' per-node
debug records (stack traces) are dropped from the files. The graph, the small
constants and the shape arithmetic are the exporter's.

Runs in its own virtual environment (.venv-zoo, tests/onnx/zoo/requirements.txt): PyTorch's
wheels are several GB, so `make test` never needs them.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

INLINE_BYTES = 1024  # onnx's size_threshold: smaller tensors stay in the model file


class TransformerClassifier(torch.nn.Module):
    """Two nn.TransformerEncoderLayers (d_model 64, 4 heads, GELU) over 16 tokens, the mean over
    the tokens, a linear classifier."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0,
                                             activation="gelu", batch_first=True)
            for _ in range(2))
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(dim=1))


class LstmClassifier(torch.nn.Module):
    """A two-layer nn.LSTM (16 inputs, 64 hidden) over 8 steps, a linear classifier on the last
    step's output."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 64, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1, :])


class FashionTransformer(torch.nn.Module):
    """The transformer classifier on Fashion-MNIST images (N x 1 x 28 x 28, pixel / 255): each
    image padded to 32 x 32 and cut into its 16 patches of 8 x 8, the encoder's 16 tokens of 64,
    after a linear embedding and learned positions."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(64, 64)
        self.position = torch.nn.Parameter(torch.zeros(16, 64))
        self.classifier = TransformerClassifier()

    def forward(self, x):
        x = torch.nn.functional.pad(x, (2, 2, 2, 2))
        n = x.shape[0]
        patches = x.reshape(n, 4, 8, 4, 8).permute(0, 1, 3, 2, 4).reshape(n, 16, 64)
        return self.classifier(self.embed(patches) + self.position)


def train_fashion(epochs):
    """FashionTransformer trained on the 60,000 training images (Adam, batches of 128); returns
    it and its predictions on the 10,000 test images."""
    from onnx_fashion import DATA, load
    torch.manual_seed(0)
    model = FashionTransformer()
    images, labels = load("train", 60000, DATA)
    x = torch.from_numpy(images.reshape(-1, 1, 28, 28))
    y = torch.from_numpy(labels.astype(np.int64))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x))
        for start in range(0, len(x), 128):
            batch = order[start:start + 128]
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            optimiser.step()
        print(f"fashion_transformer: epoch {epoch + 1} of {epochs}, last loss {loss.item():.3f}",
              flush=True)
    model.eval()
    test_images, test_labels = load("test", 10000, DATA)
    with torch.no_grad():
        predictions = model(torch.from_numpy(test_images.reshape(-1, 1, 28, 28))).argmax(1)
    accuracy = float((predictions.numpy() == test_labels).mean())
    print(f"fashion_transformer: accuracy {accuracy:.4f} on the 10,000 test images", flush=True)
    return model, predictions.numpy()


def export_trained(out, epochs):
    """FashionTransformer, trained, by the default exporter with its weights (NAME.onnx.data,
    committed: 67,000 parameters) and PyTorch's predictions on the test images."""
    model, predictions = train_fashion(epochs)
    path = out / "fashion_transformer.onnx"
    data = path.with_name(path.name + ".data")
    if data.exists():
        data.unlink()
    torch.onnx.export(model, (torch.zeros(2, 1, 28, 28),), str(path), input_names=["x"],
                      output_names=["logits"], dynamo=True,
                      dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    proto = without_debug_info(onnx.load(str(path), load_external_data=True))
    onnx.save_model(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data.name, size_threshold=INLINE_BYTES)
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    print(f"{path.name}: opset {opset}, {len(proto.graph.node)} nodes, "
          f"{sum(int(np.prod(t.dims)) for t in proto.graph.initializer):,} parameters", flush=True)
    return path.name, {"input": [-1, 1, 28, 28], "opset": opset,
                       "fashion_predictions": "".join(str(int(p)) for p in predictions)}


CNNS = ("resnet18", "mobilenet_v2")  # all their products are Conv2d and Linear modules
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), [3, 32, 32]),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10), [3, 32, 32]),
    "transformer": (TransformerClassifier, [16, 64]),
    "lstm": (LstmClassifier, [8, 16]),
}


def without_debug_info(proto):
    """The model without the exporters' per-node debug records (the dynamo exporter's stack
    traces, with this machine's paths and the script's line numbers): the graph is unchanged, the
    files are half the size and the same from any checkout."""
    for node in proto.graph.node:
        del node.metadata_props[:]
        node.ClearField("doc_string")
    return proto


def significant(value):
    """A moment to 4 significant digits: what a random tensor of it needs, and zoo.json small."""
    return float(f"{float(value):.4g}")


def calibrate_batch_norm(model, shape):
    """Batch normalisation's running statistics measured on random inputs, as training would set
    them: with PyTorch's initial ones (mean 0, variance 1) nothing is normalised, and in
    MobileNet v2 the activations shrink to 1e-9 by the last layer."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not norms:
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches below
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(32, *shape))


def bf16_operands_report(name, model, shape):
    """How far PyTorch itself moves from its fp32 outputs when its convolutions' and linear
    layers' operands are rounded to bf16 (batch normalisation folded in first, as the exporter
    does), on the 64 inputs the zoo test uses: the rounding the accelerator's contract has, apart
    from the order of the sums. Printed, for docs/graph.md."""
    import torch.fx.experimental.optimization as fx_optimization
    x = torch.from_numpy(np.random.default_rng(7).normal(0, 1, [64] + shape).astype(np.float32))
    with torch.no_grad():
        reference = model(x).numpy()
        rounded = fx_optimization.fuse(model)
        for module in rounded.modules():
            if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
                module.weight.copy_(module.weight.to(torch.bfloat16).float())
                module.register_forward_pre_hook(
                    lambda _, inputs: (inputs[0].to(torch.bfloat16).float(),))
        y = rounded(x).numpy()
    worst = np.abs(y - reference).max() / np.abs(reference).max()
    same = int((y.argmax(1) == reference.argmax(1)).sum())
    print(f"{name}: PyTorch with bf16 operands differs from its fp32 run by 2^{np.log2(worst):.1f} "
          f"of the largest output; argmax the same on {same} of 64", flush=True)


def export(name, out, dynamo):
    build, shape = MODELS[name]
    torch.manual_seed(0)
    model = build()
    calibrate_batch_norm(model, shape)
    model.eval()
    if dynamo and name in CNNS:
        bf16_operands_report(name, model, shape)
    example = torch.randn(2, *shape)
    path = out / (f"{name}.onnx" if dynamo else f"{name}_opset17.onnx")
    # Gradients stay on, as in a training script: without them nn.TransformerEncoderLayer takes
    # its fused fast path, which the TorchScript exporter cannot export.
    if dynamo:
        torch.onnx.export(model, (example,), str(path), input_names=["x"],
                          output_names=["logits"], dynamo=True,
                          dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    else:
        torch.onnx.export(model, (example,), str(path), input_names=["x"],
                          output_names=["logits"], dynamo=False, opset_version=17,
                          dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    proto = without_debug_info(onnx.load(str(path), load_external_data=True))
    values = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    data = path.with_name(path.name + ".data")
    if data.exists():
        data.unlink()
    onnx.save_model(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data.name, size_threshold=INLINE_BYTES)
    data.unlink()  # not committed: zoo_cases.py writes it again from the moments
    moments = {}
    for tensor in onnx.load(str(path), load_external_data=False).graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        array = values[tensor.name]
        if array.dtype != np.float32:
            sys.exit(f"{path.name}: {tensor.name} is {array.dtype}: only float32 weights can be "
                     "written again from their moments")
        # Per output channel (the first axis) where there is one, so that each filter keeps its
        # scale (batch normalisation folded in gives each its own).
        rows = array.reshape(array.shape[0], -1) if array.ndim >= 2 else array.reshape(1, -1)
        moments[tensor.name] = [[significant(r.mean()), significant(r.std())] for r in rows]
    ops = sorted({node.op_type for node in proto.graph.node})
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    print(f"{path.name}: opset {opset}, {len(proto.graph.node)} nodes, "
          f"{sum(int(np.prod(t.dims)) for t in proto.graph.initializer):,} parameters; "
          f"{', '.join(ops)}", flush=True)
    return path.name, {"input": [-1] + shape, "opset": opset, "moments": moments}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent /
                        "tests" / "onnx" / "zoo")
    parser.add_argument("--epochs", type=int, default=3,
                        help="training epochs of the Fashion-MNIST transformer")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    zoo = {}
    for name in MODELS:
        for dynamo in (True, False):
            file, entry = export(name, args.out, dynamo)
            zoo[file] = entry
    file, entry = export_trained(args.out, args.epochs)
    zoo[file] = entry
    lines = [f"{json.dumps(file)}: {json.dumps(zoo[file], separators=(',', ':'))}"
             for file in sorted(zoo)]
    (args.out / "zoo.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {len(zoo)} models and zoo.json into {args.out} (torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}, onnx {onnx.__version__})")


if __name__ == "__main__":
    main()
