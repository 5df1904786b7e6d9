"""What the graph tests share (graph_cases.py, zoo_cases.py): running `tpu infer` on an ONNX
model, comparing its outputs with onnxruntime's, and the RTL against the functional model."""
import subprocess
import sys
import time


def add_arguments(parser):
    """The options every graph test script takes."""
    from pathlib import Path
    parser.add_argument("--list", action="store_true", help="the cases, one per line")
    parser.add_argument("--case")
    parser.add_argument("--tpu", help="the tpu tool")
    parser.add_argument("--work", type=Path, help="a folder for the files of the run")
    parser.add_argument("--backend", default="model", choices=["model", "rtl"])


def fail(text):
    print(f"FAIL: {text}")
    sys.exit(1)


def infer(tpu, model_path, inputs, work, backend, batch=None):
    """`tpu infer --stats` of the model on the inputs (arrays, in the graph's order) on a
    backend, in runs of `batch` inputs where given: its outputs (arrays) and what it printed."""
    import numpy as np
    command = [tpu, "infer", "--net", str(model_path), "--backend", backend, "--stats"]
    if batch:
        command += ["--batch", str(batch)]
    for i, value in enumerate(inputs):
        np.save(work / f"x{i}.npy", value)
        command += ["--in", str(work / f"x{i}.npy")]
    outputs = [work / f"y{o}_{backend}.npy" for o in range(len(outputs_of(model_path)))]
    for path in outputs:
        command += ["--out", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        fail(f"tpu infer on {backend}: exit {result.returncode}: {result.stderr.strip()}")
    return [np.load(path) for path in outputs], result.stdout


def weights_once(tpu, model_path, inputs, work, backend, outputs, stdout, what):
    """The inputs again in runs of 16: the same bits as in one run, and the weights written into
    the core's memory no more than in one run (they stay resident), as --stats reports them."""
    import re
    split, split_stdout = infer(tpu, model_path, inputs, work, backend, batch=16)
    for o, (a, b) in enumerate(zip(split, outputs)):
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            fail(f"{what} output {o}: runs of 16 give other bits than one run")
    pattern = r"resident for all (\d+) run\(s\): (\d+) bytes"
    once, split_figures = re.search(pattern, stdout), re.search(pattern, split_stdout)
    if not once or not split_figures:
        fail(f"{what}: no figure of the weights written in --stats")
    runs, written = int(split_figures.group(1)), int(split_figures.group(2))
    if written != int(once.group(2)) or written == 0:
        fail(f"{what}: {written} bytes of weights written in {runs} runs, "
             f"{once.group(2)} in one")
    print(f"{what}: {len(inputs[0])} inputs in {runs} run(s) of 16, the same bits as in one; "
          f"{written} bytes of weights written once, resident")


def outputs_of(model_path):
    import onnx
    return [o.name for o in onnx.load(str(model_path), load_external_data=False).graph.output]


def compare(ours, ref, tolerance, what, agree=None):
    """Every output within `tolerance` of the largest output magnitude of onnxruntime's; for
    rows of scores, the argmax the same on at least `agree` rows (default: every row whose top
    two onnxruntime puts further apart than the tolerance)."""
    import numpy as np
    if ours.shape != ref.shape:
        fail(f"{what}: shape {ours.shape}, onnxruntime's {ref.shape}")
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    worst = float(np.max(np.abs(ours - ref)))
    apart = f"2^{np.log2(worst / scale):.1f}" if worst > 0 else "0"
    line = (f"{what}: largest difference {apart} of the largest output {scale:.3g} "
            f"(bar 2^{np.log2(tolerance):.0f})")
    if not worst <= tolerance * scale:
        print(line)
        fail(f"{what}: largest difference {worst:.3g} > 2^{np.log2(tolerance):.0f} x {scale:.3g}")
    if ref.ndim == 2 and ref.shape[1] > 1:
        same = np.argmax(ours, axis=1) == np.argmax(ref, axis=1)
        line += f"; argmax the same on {int(np.sum(same))} of {len(same)}"
        if agree is None:
            top2 = np.sort(ref, axis=1)[:, -2:]
            decided = (top2[:, 1] - top2[:, 0]) > tolerance * scale
            if not np.all(same | ~decided):
                print(line)
                fail(f"{what}: argmax differs where onnxruntime's top two are apart")
        else:
            line += f" (bar {agree})"
            if int(np.sum(same)) < agree:
                print(line)
                fail(f"{what}: argmax the same on only {int(np.sum(same))} of {len(same)}")
    print(line)


def rtl_matches_model(tpu, model_path, inputs, work, what):
    """The model on --backend rtl and on model: every output the same bits. Prints the RTL's
    time."""
    start = time.monotonic()
    rtl, _ = infer(tpu, model_path, inputs, work, "rtl")
    seconds = time.monotonic() - start
    model, _ = infer(tpu, model_path, inputs, work, "model")
    for o, (a, b) in enumerate(zip(rtl, model)):
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            import numpy as np
            fail(f"{what} output {o}: {int(np.sum(a != b))} values differ between rtl and model")
    print(f"{what}: {len(inputs[0])} inputs on the RTL in {seconds:.1f} s, every output "
          f"bit-identical to the functional model's")
