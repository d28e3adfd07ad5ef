#!/usr/bin/env python3
"""Time the MLP 784-256-10 non-privately in PyTorch on one CPU thread and
compare with dpal's DP-SGD epoch benchmark.

PyTorch side: plain tensors (no nn.Module hooks), ReLU, softmax
cross-entropy, plain SGD, batch 256, one full epoch over MNIST's 60 000
training images (234 steps), float32 as PyTorch defaults; the best of three
epochs counts. dpal side: `go test ./dpsgd -bench Epoch/mlp -cpu 1`
(Poisson sampling, clipping, exact noise and update included).

Usage: /usr/bin/python3 bench/torch_mlp.py [--data-dir ../shared/data] [--skip-dpal] [--openblas]
Needs `import torch` (Debian: apt-get install python3-torch libopenblas0;
without an optimised BLAS Debian's torch falls back to the reference BLAS,
measured here at 0.7 GFLOPS, and the comparison is meaningless).
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import time

# One core: BLAS and OpenMP threads too, not only torch's intra-op pool.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def torch_epoch_rate(x, y, batch=256, repeats=3):
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    w1 = (torch.rand(784, 256, generator=g) * 2 - 1) / 28.0
    b1 = torch.zeros(256)
    w2 = (torch.rand(256, 10, generator=g) * 2 - 1) / 16.0
    b2 = torch.zeros(10)
    params = [w1, b1, w2, b2]
    for p in params:
        p.requires_grad_(True)
    n = x.shape[0]
    steps = n // batch
    best = 0.0
    for _ in range(repeats):
        perm = torch.randperm(n, generator=g)
        start = time.perf_counter()
        for s in range(steps):
            idx = perm[s * batch:(s + 1) * batch]
            h = torch.relu(x[idx] @ w1 + b1)
            loss = torch.nn.functional.cross_entropy(h @ w2 + b2, y[idx])
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, gr in zip(params, grads):
                    p -= 0.1 * gr
        best = max(best, steps * batch / (time.perf_counter() - start))
    return best


def dpal_epoch_rate(repo, openblas):
    cmd = ["go", "test", "./dpsgd", "-run", "XXX", "-bench", "Epoch/mlp", "-benchtime", "1x", "-cpu", "1"]
    env = dict(os.environ)
    if openblas:
        cmd[2:2] = ["-tags", "openblas"]
        env["CGO_LDFLAGS"] = "-lopenblas"
    out = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=True).stdout
    m = re.search(r"([0-9.e+]+) ex/s", out)
    if not m:
        sys.exit("could not read dpal's ex/s from:\n" + out)
    return float(m.group(1))


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=os.path.join(repo, "..", "shared", "data"))
    ap.add_argument("--skip-dpal", action="store_true")
    ap.add_argument("--openblas", action="store_true",
                    help="build dpal with -tags openblas (cgo, needs libopenblas-dev)")
    args = ap.parse_args()
    mn = os.path.join(args.data_dir, "mnist")
    x = torch.from_numpy(load_idx(os.path.join(mn, "train-images-idx3-ubyte.gz")).reshape(-1, 784).astype(np.float32) / 255)
    y = torch.from_numpy(load_idx(os.path.join(mn, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    t = torch_epoch_rate(x, y)
    print(f"pytorch {torch.__version__} non-private, 1 thread: {t:,.0f} ex/s")
    if args.skip_dpal:
        return
    d = dpal_epoch_rate(repo, args.openblas)
    blas = "OpenBLAS (cgo)" if args.openblas else "gonum pure Go"
    print(f"dpal DP-SGD (σ 1.1, C 1, {blas}), 1 core: {d:,.0f} ex/s")
    print(f"ratio dpal/pytorch: {d / t:.3f}")


if __name__ == "__main__":
    main()
