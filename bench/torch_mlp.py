#!/usr/bin/env python3
"""Time dpal's three DP-SGD models non-privately in PyTorch on one CPU
thread and compare with dpal's DP-SGD epoch benchmark, in one run:
logistic regression 784-10 (and, as logreg-scatter, 3969-10 on
scatter-shaped rows: 16 384 records, see dpsgd's benchData), the MLP 784-256-10 (ReLU) and the tanh CNN of
Papernot et al. / Tramer & Boneh (conv 16@8x8 s2 p3, tanh, maxpool 2/1,
conv 32@4x4 s2, tanh, maxpool 2/1, dense 512-32, tanh, dense 32-10).

PyTorch side: plain tensors (no nn.Module hooks), softmax cross-entropy,
plain SGD, batch 256, one full epoch over MNIST's 60 000 training images
(234 steps), float32 as PyTorch defaults; the best of three epochs counts
(one for the CNN). dpal side: `go test ./dpsgd -bench Epoch -cpu 1`
(Poisson sampling, clipping, exact noise and update included), one
epoch per model, right after PyTorch. Both sides are reported by wall clock
and by CPU time (PyTorch's process time; the dpal test binary's, less a run
that only loads MNIST): on a machine shared with other work the CPU-time
ratio is the steadier one. With --cpu 1,2 dpal also runs on two cores
(`-cpu 2`), and its wall-clock rate is compared with PyTorch's one-thread
figure (the issue's two-core target is 1.2x it); CPU time says nothing about
a two-core speed-up, so that line reports it only for the record.

Usage: /usr/bin/python3 bench/torch_mlp.py [--data-dir ../shared/data] [--skip-dpal] [--openblas] [--models mlp,logreg,cnn] [--cpu 1,2]
Needs `import torch` (Debian: apt-get install python3-torch libopenblas0;
without an optimised BLAS Debian's torch falls back to the reference BLAS,
measured here at 0.7 GFLOPS, and the comparison is meaningless).
"""
import argparse
import gzip
import os
import re
import resource
import subprocess
import sys
import tempfile
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


def init(g, *shape, fan_in):
    """PyTorch's default uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    return ((torch.rand(*shape, generator=g) * 2 - 1) / fan_in ** 0.5).requires_grad_(True)


def logreg(g):
    w, b = init(g, 784, 10, fan_in=784), torch.zeros(10, requires_grad=True)
    return [w, b], lambda x: x @ w + b


SCATTER_DIM, SCATTER_ROWS = 3969, 16384


def logreg_scatter(g):
    """Logistic regression on ScatterNet features (81 channels of 7x7)."""
    w, b = init(g, SCATTER_DIM, 10, fan_in=SCATTER_DIM), torch.zeros(10, requires_grad=True)
    return [w, b], lambda x: x @ w + b


def scatter_shaped(x):
    """dpsgd's benchData: the first SCATTER_ROWS images, each row its pixels
    repeated to SCATTER_DIM values, the shape of the scatter features (a
    dense model's cost depends on the shape only)."""
    x = x[:SCATTER_ROWS]
    reps = -(-SCATTER_DIM // x.shape[1])
    return x.repeat(1, reps)[:, :SCATTER_DIM].contiguous()


def mlp(g):
    w1, b1 = init(g, 784, 256, fan_in=784), torch.zeros(256, requires_grad=True)
    w2, b2 = init(g, 256, 10, fan_in=256), torch.zeros(10, requires_grad=True)
    return [w1, b1, w2, b2], lambda x: torch.relu(x @ w1 + b1) @ w2 + b2


def cnn(g):
    F = torch.nn.functional
    c1, cb1 = init(g, 16, 1, 8, 8, fan_in=64), init(g, 16, fan_in=64)
    c2, cb2 = init(g, 32, 16, 4, 4, fan_in=256), init(g, 32, fan_in=256)
    w1, b1 = init(g, 512, 32, fan_in=512), init(g, 32, fan_in=512)
    w2, b2 = init(g, 32, 10, fan_in=32), init(g, 10, fan_in=32)

    def forward(x):
        h = x.view(-1, 1, 28, 28)
        h = F.max_pool2d(torch.tanh(F.conv2d(h, c1, cb1, stride=2, padding=3)), 2, 1)
        h = F.max_pool2d(torch.tanh(F.conv2d(h, c2, cb2, stride=2)), 2, 1)
        return torch.tanh(h.flatten(1) @ w1 + b1) @ w2 + b2

    return [c1, cb1, c2, cb2, w1, b1, w2, b2], forward


MODELS = {  # name: (builder, dpal benchmark name, PyTorch epochs timed)
    "logreg": (logreg, "logreg-784-10", 3),
    "logreg-scatter": (logreg_scatter, "logreg-3969-10", 3),
    "mlp": (mlp, "mlp-784-256-10", 3),
    "cnn": (cnn, "cnn", 1),
}


def torch_epoch_rate(build, x, y, repeats, batch=256):
    """Best examples/s over the epochs, by wall clock and by this process's
    CPU time (which a machine shared with other work does not inflate)."""
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    params, forward = build(g)
    n = x.shape[0]
    steps = n // batch
    best, best_cpu = 0.0, 0.0
    for _ in range(repeats):
        perm = torch.randperm(n, generator=g)
        start, start_cpu = time.perf_counter(), time.process_time()
        for s in range(steps):
            idx = perm[s * batch:(s + 1) * batch]
            loss = torch.nn.functional.cross_entropy(forward(x[idx]), y[idx])
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, gr in zip(params, grads):
                    p -= 0.1 * gr
        best = max(best, steps * batch / (time.perf_counter() - start))
        best_cpu = max(best_cpu, steps * batch / (time.process_time() - start_cpu))
    return best, best_cpu


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def dpal_epoch_rates(repo, openblas, names, cpus):
    """dpal's examples/s per model from one compiled dpsgd test binary, by
    wall clock (the benchmark's own ex/s) and by CPU time: each model's
    epoch runs in its own process, less the CPU of a run that only loads
    MNIST (the benchmark loads it before its sub-benchmarks)."""
    with tempfile.TemporaryDirectory() as tmp:
        return _dpal_epoch_rates(repo, openblas, names, cpus, os.path.join(tmp, "dpsgd.test"))


def _dpal_epoch_rates(repo, openblas, names, cpus, binary):
    cmd = ["go", "test", "-c", "-o", binary, "./dpsgd"]
    env = dict(os.environ)
    if openblas:
        cmd[2:2] = ["-tags", "openblas"]
        env["CGO_LDFLAGS"] = "-lopenblas"
    subprocess.run(cmd, cwd=repo, env=env, check=True)

    def run(pattern, ncpu):
        before = children_cpu()
        out = subprocess.run([binary, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", "1x",
                              "-test.cpu", str(ncpu)], cwd=os.path.join(repo, "dpsgd"), env=env,
                             capture_output=True, text=True, check=True).stdout
        return out, children_cpu() - before

    _, load_cpu = run("Epoch/none$", 1)
    rates = {}
    for m in names:
        for ncpu in cpus:
            out, cpu = run("Epoch/" + MODELS[m][1] + "$", ncpu)
            r = re.search(r"Epoch/" + re.escape(MODELS[m][1]) + r"\S*\s+(\d+)\s+(\d+) ns/op\s+([0-9.e+]+) ex/s", out)
            if not r:
                sys.exit("could not read dpal's ex/s for " + m + " from:\n" + out)
            ops, ns, rate = int(r.group(1)), float(r.group(2)), float(r.group(3))
            examples = rate * ops * ns * 1e-9  # the examples the timed epochs processed
            rates[m, ncpu] = (rate, examples / max(cpu - load_cpu, 1e-9))
    return rates


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=os.path.join(repo, "..", "shared", "data"))
    ap.add_argument("--skip-dpal", action="store_true")
    ap.add_argument("--openblas", action="store_true",
                    help="build dpal with -tags openblas (cgo, needs libopenblas-dev)")
    ap.add_argument("--models", default="logreg,mlp,cnn",  # logreg-scatter on request
                    help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--cpu", default="1",
                    help="comma-separated core counts to run dpal at (go test -cpu), e.g. 1,2")
    args = ap.parse_args()
    cpus = [int(c) for c in args.cpu.split(",") if c]
    if not cpus or min(cpus) < 1:
        sys.exit(f"--cpu {args.cpu!r}: want core counts >= 1, e.g. 1,2")
    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in MODELS:
            sys.exit(f"unknown model {m!r}: choose from {', '.join(MODELS)}")
    mn = os.path.join(args.data_dir, "mnist")
    x = torch.from_numpy(load_idx(os.path.join(mn, "train-images-idx3-ubyte.gz")).reshape(-1, 784).astype(np.float32) / 255)
    y = torch.from_numpy(load_idx(os.path.join(mn, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    t = {}
    for m in names:
        build, _, repeats = MODELS[m]
        if m == "logreg-scatter":
            t[m] = torch_epoch_rate(build, scatter_shaped(x), y[:SCATTER_ROWS], repeats)
        else:
            t[m] = torch_epoch_rate(build, x, y, repeats)
        print(f"pytorch {torch.__version__} non-private {m}, 1 thread: {t[m][0]:,.0f} ex/s "
              f"({t[m][1]:,.0f} per CPU-second)", flush=True)
    if args.skip_dpal:
        return
    d = dpal_epoch_rates(repo, args.openblas, names, cpus)
    blas = "OpenBLAS (cgo)" if args.openblas else "dpal's own kernels"
    for m in names:
        for ncpu in cpus:
            rate, per_cpu = d[m, ncpu]
            if ncpu == 1:
                print(f"dpal DP-SGD {m} (σ 1.1, C 1, {blas}), 1 core: {rate:,.0f} ex/s ({per_cpu:,.0f} per CPU-second); "
                      f"ratio dpal/pytorch: {rate / t[m][0]:.3f} by wall clock, {per_cpu / t[m][1]:.3f} by CPU time")
                continue
            print(f"dpal DP-SGD {m} (σ 1.1, C 1, {blas}), {ncpu} cores: {rate:,.0f} ex/s ({per_cpu:,.0f} per CPU-second); "
                  f"ratio to pytorch's 1 thread by wall clock: {rate / t[m][0]:.3f}")


if __name__ == "__main__":
    main()
