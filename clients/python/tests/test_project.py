"""A pool project through the client: create, upload, run the first phase,
label with a simulated expert, finish, download the model, read ε per record."""

from __future__ import annotations

import json
import random

import pytest

from dpal_client import BadRequestError, Client, ConflictError, ForbiddenError


def blobs(n: int, seed: int):
    """A 3-class pool in 4 dimensions (class c shifted along axis c)."""
    g = random.Random(seed)
    rows, classes = [], []
    for _ in range(n):
        c = g.randrange(3)
        x = [0.1 * g.gauss(0, 1) for _ in range(4)]
        x[c] += 0.4
        rows.append(x)
        classes.append(c)
    return rows, classes


def test_project(admin: Client, ingest: Client, annotator: Client, officer: Client, tmp_path) -> None:
    names = ["a", "b", "c"]
    rows, truth = blobs(500, 1)
    p = admin.create_project("blobs", names, pool_size=500, epsilon=4, initial=60, queries=[30, 30], dim=4, batch=24, epochs=4)
    assert p.state == "uploading" and 0 < p.epsilon_per_record <= 4
    with pytest.raises(ConflictError):
        admin.create_project("blobs", names, pool_size=500, epsilon=4, initial=60, queries=[30], dim=4)
    with pytest.raises(BadRequestError) as e:
        admin.create_project("bad", names, pool_size=500, epsilon=-1, initial=60, queries=[30], dim=4)
    assert e.value.field == "epsilon"
    plan = officer.get_project_plan("blobs")
    assert plan.plan.poisson is not None and plan.plan.phases[0].noise_multiplier > 0

    with pytest.raises(ForbiddenError):
        annotator.upload_pool("blobs", [[0, 0, 0, 0]])
    up = ingest.upload_pool("blobs", [(f"r{i}", x) for i, x in enumerate(rows)], chunk=200)
    assert (up.accepted, up.rejected, up.pooled, up.state) == (500, 0, 500, "ready")

    admin.start_project("blobs")
    phases = 0
    while True:
        p = officer.wait_project("blobs", timeout=120, poll=0.05)
        if p.state == "done":
            break
        phases += 1
        q = annotator.list_project_queue("blobs")
        for item in q.items:  # the simulated expert: the true class
            claim = annotator.claim_project_record("blobs", item.index)
            assert claim.id == f"r{item.index}" and claim.classes == names
            annotator.label_project_record("blobs", item.index, names[truth[item.index]])
    assert phases == 3 and p.round == 3

    rels = officer.list_project_releases("blobs").releases
    assert [r.round for r in rels] == [1, 2, 3]
    path = tmp_path / "model.json"
    assert officer.download_project_model("blobs", str(path)) == 3
    model = json.loads(path.read_text())
    assert model["format"] and model["class_names"] == names and model["privacy"]["project"] == "blobs"

    test, test_truth = blobs(200, 2)
    pred = officer.predict_project("blobs", test)
    acc = sum(names[t] == p for t, p in zip(test_truth, pred.predictions)) / len(test)
    assert acc > 0.6, acc

    priv = officer.get_project_privacy("blobs")
    eps = plan.epsilon_per_record
    assert priv.privacy.all_records.max == pytest.approx(eps) and priv.privacy.all_records.min == pytest.approx(eps)
    labelled = priv.privacy.trained[0].records
    assert labelled > 0
    rec = officer.get_project_record_epsilon("blobs", 7)
    assert rec.id == "r7" and rec.epsilon == pytest.approx(eps) and rec.epsilon <= rec.budget


def test_project_idx_upload(admin: Client, ingest: Client) -> None:
    """A pool of 2x2 images uploads as one gzipped IDX file."""
    import gzip
    import struct

    n = 120
    idx = bytes([0, 0, 0x08, 3]) + struct.pack(">III", n, 2, 2) + bytes(i % 256 for i in range(4 * n))
    admin.create_project("idx", ["a", "b"], pool_size=n, epsilon=4, initial=30, queries=[10], dim=4, batch=24, epochs=2)
    with pytest.raises(BadRequestError):
        ingest.upload_pool_idx("idx", idx[:-3] + b"")  # cut inside the last image
    up = ingest.upload_pool_idx("idx", gzip.compress(idx), start=0)
    assert (up.accepted, up.rejected, up.pooled, up.state) == (n, 0, n, "ready")
