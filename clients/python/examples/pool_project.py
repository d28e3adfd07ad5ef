#!/usr/bin/env python3
"""A pool active-learning project on MNIST through dpal_client, end to end.

Creates a project on a running ``dpal serve`` (the plan is fixed before any
record exists), uploads a random subset of MNIST's training images as the
pool, starts it, labels every record each phase selects with a simulated
expert (MNIST's own label), waits for the rounds to train on the server,
downloads the final model, predicts MNIST's test set with it (post-processing,
no charge) and prints the accuracy, the labels asked and ε per group read
from the project's ledger.

    dpal serve --store /tmp/mnist.db            # prints the admin token once
    python3 clients/python/examples/pool_project.py --token TOKEN \\
        --data /work/shared/data/mnist --pool-size 20000 --epsilon 8

Only the standard library and dpal_client are needed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import struct
import sys
import time
from typing import List, Tuple

from dpal_client import Client


def read_idx(path: str) -> Tuple[List[List[float]], int]:
    """Reads an IDX image file (gzip'd): rows of pixels scaled to [0, 1]."""
    with gzip.open(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic == 2049:  # labels
            return [[float(b)] for b in f.read(n)], 1
        rows, cols = struct.unpack(">II", f.read(8))
        raw = f.read(n * rows * cols)
    d = rows * cols
    return [[raw[i * d + j] / 255.0 for j in range(d)] for i in range(n)], d


def load(data: str, part: str) -> Tuple[List[List[float]], List[int]]:
    """MNIST's train or t10k part: images and labels."""
    x, _ = read_idx(os.path.join(data, f"{part}-images-idx3-ubyte.gz"))
    y, _ = read_idx(os.path.join(data, f"{part}-labels-idx1-ubyte.gz"))
    return x, [int(v[0]) for v in y]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--token", default=os.environ.get("DPAL_TOKEN"), help="an admin token (default $DPAL_TOKEN)")
    ap.add_argument("--data", default="../shared/data/mnist", help="directory of MNIST's IDX files")
    ap.add_argument("--name", default="mnist")
    ap.add_argument("--pool-size", type=int, default=20000)
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--initial", type=int, default=2000)
    ap.add_argument("--queries", default="2000,600,200,200")
    ap.add_argument("--model", default="logreg")
    ap.add_argument("--subset-seed", type=int, default=1, help="seed of the pool subset (not a DP randomness)")
    a = ap.parse_args()
    if not a.token:
        ap.error("--token (or $DPAL_TOKEN) is required")

    admin = Client(a.url, a.token, timeout=600)
    roles = {r: Client(a.url, admin.create_token(r).token, timeout=600) for r in ("ingest", "annotator", "officer")}
    ingest, annotator, officer = roles["ingest"], roles["annotator"], roles["officer"]

    t0 = time.monotonic()
    x, y = load(a.data, "train")
    idx = sorted(random.Random(a.subset_seed).sample(range(len(x)), a.pool_size))
    classes = [str(c) for c in range(10)]
    queries = [int(q) for q in a.queries.split(",")]
    admin.create_project(a.name, classes, pool_size=a.pool_size, epsilon=a.epsilon, initial=a.initial, queries=queries,
                         image=[28, 28, 1], model=a.model)
    plan = officer.get_project_plan(a.name)
    print(f"plan: ε per record {plan.epsilon_per_record:.4f} (target {a.epsilon}), δ {plan.delta:g}, "
          f"{len(plan.plan.phases)} phases, σ {[round(p.noise_multiplier, 3) for p in plan.plan.phases]}")
    up = ingest.upload_pool(a.name, ((f"train-{i}", x[i]) for i in idx), chunk=2000)
    print(f"pool: {up.accepted} records uploaded, {up.rejected} rejected ({time.monotonic() - t0:.0f} s)")

    admin.start_project(a.name)
    asked = 0
    while True:
        p = officer.wait_project(a.name, timeout=7200, poll=1)
        if p.state == "done":
            break
        q = annotator.list_project_queue(a.name, limit=1000)
        while q.items:
            for item in q.items:  # the simulated expert: MNIST's label of the record
                annotator.claim_project_record(a.name, item.index)
                annotator.label_project_record(a.name, item.index, classes[y[idx[item.index]]])
                asked += 1
            q = annotator.list_project_queue(a.name, limit=1000)
        print(f"phase {p.phase}: labelled; {asked} labels so far ({time.monotonic() - t0:.0f} s)")

    path = f"{a.name}-model.json"
    round_ = officer.download_project_model(a.name, path)
    tx, ty = load(a.data, "t10k")
    right = 0
    for lo in range(0, len(tx), 2000):
        pred = officer.predict_project(a.name, tx[lo:lo + 2000])
        right += sum(int(p) == t for p, t in zip(pred.predictions, ty[lo:lo + 2000]))
    priv = officer.get_project_privacy(a.name).privacy
    print(f"model of round {round_} saved to {path}; test accuracy {right / len(tx):.4f} on {len(tx)} images")
    print(f"labels: {asked} asked")
    print(f"ε per group (ledger, {priv.guarantee}):")
    for g in priv.trained + [priv.not_selected]:
        print(f"  {g.group:12s} {g.records:6d} records  ε min {g.ledger_epsilon.min:.6f}  max {g.ledger_epsilon.max:.6f}  (plan {g.planned_epsilon:.6f})")
    rec = officer.get_project_record_epsilon(a.name, 0)
    print(f"record 0 ({rec.id}, {rec.group}): ε {rec.epsilon:.6f} of budget {rec.budget}")
    print(json.dumps({"accuracy": right / len(tx), "labels": asked, "seconds": round(time.monotonic() - t0)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
