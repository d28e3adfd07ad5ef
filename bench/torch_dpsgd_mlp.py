#!/usr/bin/env python3
"""An independent DP-SGD reference for dpal's MNIST MLP, in PyTorch on one
CPU thread: does dpal's DP-SGD learn as well as a plain textbook one at the
same (ε, δ)?

What it trains: the MLP 784-H1[-H2…]-10 (ReLU or tanh; PyTorch's default
nn.Linear initialisation, weights and biases uniform in ±1/√fan_in, or zero
biases with --zero-bias as dpal does), softmax cross-entropy, on MNIST
pixels scaled to [0, 1] (60 000 training, 10 000 test images, read from
<data-dir>/mnist/*.gz).

The DP-SGD step, written out with nothing shared with dpal:
  * Poisson sampling: each of the n records joins the batch independently
    with probability q = batch/n (an empty batch is still a step);
  * per-example gradients of each example's own loss: each dense layer's
    is a_i g_iᵀ (weights) and g_i (bias), a_i its input and g_i the
    gradient at its output, taken from autograd on the summed loss. The
    default (--per-example closed) takes their squared norm as
    (‖a_i‖² + 1)·‖g_i‖² per layer and the clipped sum as Aᵀ·diag(c)·G;
    --per-example explicit materialises every example's full gradient
    (--chunk examples at a time) and is ~2 s per step of 1 024 examples
    here, too slow to train with; --check compares the two, and a_i g_iᵀ
    with autograd's gradient of one example's loss, before training;
  * clipping: g_i · min(1, C/‖g_i‖);
  * noise: the clipped sum plus N(0, (σC)²) per coordinate (a continuous
    normal from torch: fine for a reference, NOT for a release);
  * divided by the expected batch size q·n = batch (not the realised one);
  * SGD with momentum (PyTorch's form: m ← μm + g, θ ← θ − lr·m).
steps = ⌈epochs·n/batch⌉, as dpal. σ is --sigma, or when absent it is read
from `dpal account noise --epsilon E --delta D --sample-rate q --steps T
--json` (the dpal binary is --dpal), so ε is the one dpal charges.

Usage:
  /usr/bin/python3 bench/torch_dpsgd_mlp.py --epsilon 3 --batch 1024 --clip 1 \
      --lr 1 --epochs 10 --seeds 1,2 [--hidden 256] [--activation relu] \
      [--per-example explicit|closed] [--zero-bias] [--dpal /tmp/dpal-mlp] \
      [--data-dir /work/shared/data] [--csv out.csv] [--check]
Prints one line per epoch (test accuracy) and one summary line per seed;
--csv appends one row per seed (flags, σ, final and per-epoch accuracy).
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from torch_mlp import load_idx  # noqa: E402  (bench/ is on sys.path when run as a script)


def load_mnist(data_dir, split):
    d = os.path.join(data_dir, "mnist")
    x = load_idx(os.path.join(d, split + "-images-idx3-ubyte.gz")).reshape(-1, 784).astype(np.float32) / 255
    y = load_idx(os.path.join(d, split + "-labels-idx1-ubyte.gz")).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def init_mlp(g, sizes, zero_bias):
    """[(W in×out, b out)] per layer, PyTorch's nn.Linear default init."""
    layers = []
    for fin, fout in zip(sizes[:-1], sizes[1:]):
        bound = 1 / math.sqrt(fin)
        w = (torch.rand(fin, fout, generator=g) * 2 - 1) * bound
        b = torch.zeros(fout) if zero_bias else (torch.rand(fout, generator=g) * 2 - 1) * bound
        layers.append([w, b])
    return layers


def forward(layers, x, act):
    """Logits, plus each layer's input a and pre-activation z (z requires
    grad so that backward leaves ∂(Σ_i loss_i)/∂z, row i = example i's own
    output gradient g_i, since example i's loss depends on row i only)."""
    ins, zs = [], []
    h = x
    for k, (w, b) in enumerate(layers):
        ins.append(h)
        z = (h @ w + b).detach().requires_grad_(True)
        zs.append(z)
        h = z if k == len(layers) - 1 else act(z)
    return h, ins, zs


def output_grads(layers, x, y, act):
    logits, ins, zs = forward(layers, x, act)
    loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
    # The graph starts at the z's (detached), so run backward layer by layer.
    gs = [None] * len(layers)
    g = torch.autograd.grad(loss, zs[-1])[0]
    gs[-1] = g
    for k in range(len(layers) - 2, -1, -1):
        h = act(zs[k])
        gh = g @ layers[k + 1][0].T
        g = torch.autograd.grad(h, zs[k], grad_outputs=gh)[0]
        gs[k] = g
    # Detached: the update must not record a graph through the activations.
    return [a.detach() for a in ins], gs


def clipped_sum_explicit(layers, ins, gs, clip, chunk=128):
    """Σ_i clip(∇θ_i) with every ∇θ_i materialised."""
    sums = [[torch.zeros_like(w), torch.zeros_like(b)] for w, b in layers]
    m = ins[0].shape[0]
    for lo in range(0, m, chunk):
        hi = min(lo + chunk, m)
        per = [(torch.einsum("bi,bj->bij", a[lo:hi], g[lo:hi]), g[lo:hi]) for a, g in zip(ins, gs)]
        sq = sum(gw.flatten(1).pow(2).sum(1) + gb.pow(2).sum(1) for gw, gb in per)
        c = torch.clamp(clip / sq.sqrt().clamp_min(1e-12), max=1.0)
        for s, (gw, gb) in zip(sums, per):
            s[0] += torch.einsum("b,bij->ij", c, gw)
            s[1] += c @ gb
    return sums


def clip_factors_closed(ins, gs, clip):
    sq = sum((a.pow(2).sum(1) + 1) * g.pow(2).sum(1) for a, g in zip(ins, gs))
    return torch.clamp(clip / sq.sqrt().clamp_min(1e-12), max=1.0)


def clipped_sum_closed(layers, ins, gs, clip):
    """The same sum via ‖∇W_i‖² + ‖∇b_i‖² = (‖a_i‖² + 1)‖g_i‖²."""
    c = clip_factors_closed(ins, gs, clip)
    return [[a.T @ (c[:, None] * g), c @ g] for a, g in zip(ins, gs)]


def accuracy(layers, x, y, act):
    with torch.no_grad():
        h = x
        for k, (w, b) in enumerate(layers):
            h = h @ w + b
            if k < len(layers) - 1:
                h = act(h)
        return (h.argmax(1) == y).float().mean().item()


def sigma_from_dpal(dpal, eps, delta, q, steps):
    out = subprocess.run([dpal, "account", "noise", "--epsilon", str(eps), "--delta", str(delta),
                          "--sample-rate", repr(q), "--steps", str(steps), "--json"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    for k in ("noise_multiplier", "sigma"):
        if k in d:
            return float(d[k])
    sys.exit("no noise multiplier in dpal's output: " + out)


def check(layers, x, y, act, clip):
    """Explicit and closed clipped sums agree, and the per-example output
    gradients give autograd's gradient of one example's loss."""
    ins, gs = output_grads(layers, x, y, act)
    e, c = clipped_sum_explicit(layers, ins, gs, clip), clipped_sum_closed(layers, ins, gs, clip)
    worst = max((a - b).abs().max().item() / max(a.abs().max().item(), 1e-12) for pe, pc in zip(e, c) for a, b in zip(pe, pc))
    params = [t.clone().requires_grad_(True) for wb in layers for t in wb]
    pl = [params[i:i + 2] for i in range(0, len(params), 2)]
    logits, _, _ = forward(pl, x[:1], act)
    h = x[:1]
    for k, (w, b) in enumerate(pl):
        h = h @ w + b
        if k < len(pl) - 1:
            h = act(h)
    auto = torch.autograd.grad(torch.nn.functional.cross_entropy(h, y[:1], reduction="sum"), params)
    mine = [t for a, g in zip(ins, gs) for t in (torch.outer(a[0], g[0]), g[0])]
    worst_auto = max((a - b).abs().max().item() / max(a.abs().max().item(), 1e-12) for a, b in zip(auto, mine))
    print(f"check: explicit vs closed clipped sum, max rel diff {worst:.2e}; "
          f"per-example gradient vs autograd {worst_auto:.2e}", flush=True)
    if worst > 1e-4 or worst_auto > 1e-4:
        sys.exit("check failed")


def train(args, seed, sigma, xtr, ytr, xte, yte):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    act = torch.relu if args.activation == "relu" else torch.tanh
    sizes = [784] + [int(h) for h in args.hidden.split(",")] + [10]
    layers = init_mlp(g, sizes, args.zero_bias)
    mom = [[torch.zeros_like(w), torch.zeros_like(b)] for w, b in layers]
    n = xtr.shape[0]
    q = args.batch / n
    steps = math.ceil(args.epochs * n / args.batch)
    per_epoch = n / args.batch
    if args.per_example == "explicit":
        def clipped(layers, ins, gs, clip):
            return clipped_sum_explicit(layers, ins, gs, clip, args.chunk)
    else:
        clipped = clipped_sum_closed
    if args.check:
        check(layers, xtr[:64], ytr[:64], act, args.clip)
    accs, start, next_epoch = [], time.time(), 1
    for s in range(1, steps + 1):
        idx = (torch.rand(n, generator=g) < q).nonzero().flatten()
        if len(idx) > 0:
            ins, gs = output_grads(layers, xtr[idx], ytr[idx], act)
            sums = clipped(layers, ins, gs, args.clip)
        else:
            sums = [[torch.zeros_like(w), torch.zeros_like(b)] for w, b in layers]
        for (w, b), (sw, sb), (mw, mb) in zip(layers, sums, mom):
            for p, sp, mp in ((w, sw, mw), (b, sb, mb)):
                noisy = (sp + sigma * args.clip * torch.randn(sp.shape, generator=g)) / args.batch
                mp.mul_(args.momentum).add_(noisy)
                p.sub_(args.lr * mp)
        if s >= min(round(next_epoch * per_epoch), steps) or s == steps:
            if len(accs) < math.ceil(args.epochs):
                accs.append(accuracy(layers, xte, yte, act))
                print(f"seed {seed} epoch {len(accs)} step {s}: test accuracy {accs[-1]:.4f} "
                      f"({time.time() - start:.0f} s)", flush=True)
            next_epoch += 1
    return accs, steps, time.time() - start


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.path.join(repo, "..", "shared", "data"))
    ap.add_argument("--epsilon", type=float, default=3)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--sigma", type=float, help="noise multiplier (default: from `dpal account noise`)")
    ap.add_argument("--dpal", default="dpal", help="dpal binary for the calibration")
    ap.add_argument("--batch", type=int, default=1024, help="expected batch size (q = batch/n)")
    ap.add_argument("--clip", type=float, default=1)
    ap.add_argument("--lr", type=float, default=1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--epochs", type=float, default=10)
    ap.add_argument("--hidden", default="256", help="hidden widths, comma-separated")
    ap.add_argument("--activation", choices=["relu", "tanh"], default="relu")
    ap.add_argument("--zero-bias", action="store_true", help="start biases at zero (dpal) instead of PyTorch's init")
    ap.add_argument("--per-example", choices=["explicit", "closed"], default="closed")
    ap.add_argument("--chunk", type=int, default=128, help="explicit: examples materialised at once")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--check", action="store_true", help="check the per-example gradients first")
    ap.add_argument("--csv", help="append one row per seed here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    xtr, ytr = load_mnist(args.data_dir, "train")
    xte, yte = load_mnist(args.data_dir, "t10k")
    n = xtr.shape[0]
    steps = math.ceil(args.epochs * n / args.batch)
    sigma = args.sigma or sigma_from_dpal(args.dpal, args.epsilon, args.delta, args.batch / n, steps)
    print(f"torch {torch.__version__}: MLP 784-{args.hidden.replace(',', '-')}-10 {args.activation}, "
          f"ε={args.epsilon} δ={args.delta} σ={sigma:.6f} q={args.batch / n:.6g} steps={steps} "
          f"C={args.clip} lr={args.lr} momentum={args.momentum} ({args.per_example} per-example gradients)", flush=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        accs, steps, secs = train(args, seed, sigma, xtr, ytr, xte, yte)
        print(f"seed {seed}: final test accuracy {accs[-1]:.4f} in {secs:.0f} s", flush=True)
        if args.csv:
            new = not os.path.exists(args.csv)
            with open(args.csv, "a", newline="") as f:
                w = csv.writer(f)
                if new:
                    w.writerow(["impl", "model", "activation", "epsilon", "delta", "sigma", "batch", "clip", "lr",
                                "momentum", "epochs", "steps", "seed", "test_accuracy", "per_epoch", "flags"])
                w.writerow(["torch-" + args.per_example + ("-zerobias" if args.zero_bias else ""),
                            "mlp:" + args.hidden, args.activation, args.epsilon, args.delta, f"{sigma:.6f}",
                            args.batch, args.clip, args.lr, args.momentum, args.epochs, steps, seed,
                            f"{accs[-1]:.4f}", " ".join(f"{a:.4f}" for a in accs), " ".join(sys.argv[1:])])


if __name__ == "__main__":
    main()
