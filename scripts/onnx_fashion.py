#!/usr/bin/env python3
"""A Fashion-MNIST classifier from outside the project, end to end (docs/networks.md).

Trains scikit-learn's MLPClassifier on Fashion-MNIST, exports it to ONNX with skl2onnx (opset
17, the class probabilities as the one output), imports it with `tpu import`, runs the test
images through `tpu infer` and compares the accuracy with scikit-learn's own on the same images.
Fails (exit 1) if they differ by more than --points.

Usage:
  onnx_fashion.py --tpu PATH --out DIR [--train N] [--test N] [--epochs E] [--hidden 256,128]
                  [--backend model|rtl|host] [--points 0.5]

`make onnx-fashion` runs it on all 60,000 training and 10,000 test images; a test runs it on a
small model (tests/onnx/CMakeLists.txt).
"""
import argparse
import gzip
import subprocess
import sys
import time
import warnings
from pathlib import Path

DATA = Path("/usr/share/datasets/fashion-mnist")


def idx(path, header):
    import numpy as np
    with gzip.open(path, "rb") as file:
        data = file.read()
    return np.frombuffer(data, dtype=np.uint8, offset=header)


def load(kind, count, data_dir):
    """The first `count` images of a split as float32 rows of pixel / 255, and their labels."""
    prefix = "train" if kind == "train" else "t10k"
    images = idx(data_dir / f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    labels = idx(data_dir / f"{prefix}-labels-idx1-ubyte.gz", 8)
    return (images[:count] / 255.0).astype("float32"), labels[:count]


def export(classifier, sample, path):
    """The classifier as ONNX (opset 17) with the probabilities as its only output."""
    import onnx
    from onnx import utils
    from skl2onnx import to_onnx
    model = to_onnx(classifier, sample, target_opset={"": 17, "ai.onnx.ml": 1},
                    options={id(classifier): {"zipmap": False}})
    full = path.with_suffix(".full.onnx")
    onnx.save(model, full)
    outputs = [output.name for output in model.graph.output if output.name != "label"]
    utils.extract_model(str(full), str(path), [model.graph.input[0].name], outputs)
    full.unlink()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tpu", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--train", type=int, default=60000)
    parser.add_argument("--test", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--hidden", default="256,128")
    parser.add_argument("--backend", default="model", choices=["model", "rtl", "host"])
    parser.add_argument("--points", type=float, default=0.5)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    args.out.mkdir(parents=True, exist_ok=True)
    x_train, y_train = load("train", args.train, args.data)
    x_test, y_test = load("test", args.test, args.data)
    hidden = tuple(int(h) for h in args.hidden.split(","))
    classifier = MLPClassifier(hidden_layer_sizes=hidden, max_iter=args.epochs, batch_size=128,
                               random_state=1)
    print(f"training scikit-learn MLPClassifier 784-{'-'.join(map(str, hidden))}-10 on "
          f"{len(x_train)} images, {args.epochs} epochs", flush=True)
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier.fit(x_train, y_train)
    print(f"  trained in {time.monotonic() - start:.0f} s", flush=True)
    library = classifier.predict(x_test)
    library_accuracy = float(np.mean(library == y_test))

    model = args.out / "fashion_mlp.onnx"
    export(classifier, x_test[:1], model)
    net = args.out / "fashion_mlp.json"
    for command in (["import", str(model), "--out", str(net), "--force"],
                    ["infer", "--net", str(net), "--in", str(args.out / "x_test.npy"), "--out",
                     str(args.out / "y_test.npy"), "--backend", args.backend]):
        if command[0] == "infer":
            np.save(args.out / "x_test.npy", x_test)
        result = subprocess.run([args.tpu, *command], capture_output=True, text=True, check=False)
        print(result.stdout.strip())
        if result.returncode != 0:
            print(f"onnx_fashion: tpu {command[0]} failed: {result.stderr.strip()}")
            return 1
    probabilities = np.load(args.out / "y_test.npy")
    ours = np.argmax(probabilities, axis=1)
    accuracy = float(np.mean(ours == y_test))
    difference = 100.0 * (accuracy - library_accuracy)
    print(f"scikit-learn accuracy        {library_accuracy:.4f} ({len(y_test)} test images)")
    print(f"accelerator ({args.backend}) accuracy  {accuracy:.4f}")
    print(f"difference                   {difference:+.2f} points; "
          f"{int(np.sum(ours == library))} of {len(y_test)} predictions the same")
    if abs(difference) > args.points:
        print(f"onnx_fashion: the accuracies differ by more than {args.points} points")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
