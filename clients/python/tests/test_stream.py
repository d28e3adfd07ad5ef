"""A stream learner end to end through the client: create it, ingest events,
claim and label the requests with a simulated expert, then read the releases,
the model, the budget, per-record ε and the ledger."""

from __future__ import annotations

import math
import random
from typing import List

import pytest

from dpal_client import (
    Client,
    ConflictError,
    Event,
    ForbiddenError,
    LedgerReport,
    LedgerReports,
    StreamConfig,
)

LEARNER = "fraud"
DIM = 2
W_TRUE = (1.0, -1.0)  # the simulated expert labels by this hyperplane


def expert(x: List[float]) -> int:
    """The simulated expert: the side of W_TRUE's hyperplane."""
    return 1 if sum(w * v for w, v in zip(W_TRUE, x)) >= 0 else -1


def point(rng: random.Random) -> List[float]:
    """A point uniform in the unit disc (inside the learner's M = 1)."""
    r, a = math.sqrt(rng.random()), rng.uniform(0, 2 * math.pi)
    return [r * math.cos(a), r * math.sin(a)]


@pytest.fixture(scope="module")
def learner(admin: Client, ingest: Client) -> str:
    """A learner of dimension 2 (mini-batches of 5 labels) fed 300 events with record ids."""
    settings = admin.create_learner(LEARNER, DIM, config=StreamConfig(window=5), max_open_requests=1000)
    assert settings.name == LEARNER and settings.config.window == 5 and settings.config.dim == DIM
    assert settings.budget == pytest.approx(settings.config.eps_select + settings.config.eps_grad)
    rng = random.Random(1)
    events = [Event(x=point(rng), id=f"rec-{i}") for i in range(300)]
    for start in range(0, len(events), 100):
        res = ingest.ingest_events(LEARNER, events[start : start + 100])
        assert (res.accepted, res.rejected) == (100, 0)
        assert [r.line for r in res.results] == list(range(1, 101))
    return LEARNER


def label_all(annotator: Client, name: str) -> int:
    """Claims and labels every open request; returns how many were labelled."""
    done = 0
    while True:
        page = annotator.list_label_requests(name, limit=100)
        todo = [r.id for r in page.requests if not r.claimed]
        if not todo:
            return done
        for rid in todo:
            claim = annotator.claim_label_request(name, rid)
            assert claim.id == rid and len(claim.x) == DIM
            ack = annotator.submit_label(name, rid, expert(claim.x))
            assert (ack.id, ack.status) == (rid, "labelled")
            done += 1


def test_learners_listed(learner: str, annotator: Client, officer: Client) -> None:
    page = annotator.list_learners(limit=10)
    assert learner in [l.name for l in page.learners] and page.total >= 1
    assert [l.name for l in officer.iter_learners(page_size=1)] == sorted(l.name for l in officer.iter_learners())


def test_label_releases_model_budget(learner: str, annotator: Client, officer: Client) -> None:
    before = annotator.list_label_requests(learner)
    assert before.open > 0 and before.open == before.unclaimed and before.max == 1000
    labelled = label_all(annotator, learner)
    assert labelled == before.open

    budget = officer.get_budget(learner)
    assert budget.learner == learner
    assert budget.stats.observed == 300 and budget.stats.labelled == labelled
    assert budget.stats.updates == labelled // 5 >= 1
    assert budget.queue.open == 0 and budget.queue.max == 1000
    assert budget.groups and all(0 <= g.epsilon <= g.budget for g in budget.groups)
    assert set(budget.series) == {g.group for g in budget.groups}
    assert 0 < budget.stats.max_epsilon_per_record <= budget.budget.epsilon

    releases = officer.list_releases(learner).releases
    assert [r.update for r in releases] == list(range(1, budget.stats.updates + 1))
    assert all(len(r.w) == DIM for r in releases)
    second = officer.list_releases(learner, after=1, limit=1).releases
    assert [r.update for r in second] == ([2] if len(releases) > 1 else [])

    model = officer.get_model(learner)
    assert (model.learner, model.update) == (learner, releases[-1].update)
    assert model.w == releases[-1].w and model.observation == releases[-1].observation

    eps = officer.get_record_epsilon("rec-7")
    assert (eps.record, eps.learner) == ("rec-7", learner)
    assert 0 < eps.epsilon <= budget.budget.epsilon and eps.group
    by_event = officer.get_record_epsilon(f"{learner}:{eps.event}")
    assert (by_event.event, by_event.epsilon) == (eps.event, eps.epsilon)

    report = officer.get_ledger(learner=learner)
    assert isinstance(report, LedgerReport) and report.entries
    assert report.meta.budget.epsilon == budget.budget.epsilon
    assert [e.seq for e in report.entries] == list(range(1, len(report.entries) + 1))
    everything = officer.get_ledger()
    assert isinstance(everything, LedgerReports) and learner in everything.learners

    assert f'learner="{learner}"' in officer.get_metrics()


def test_claims_are_exclusive(learner: str, ingest: Client, annotator: Client, annotator2: Client) -> None:
    rng = random.Random(2)
    for _ in range(20):  # the selection is random: feed events until one is selected
        ingest.ingest_events(learner, [point(rng) for _ in range(20)])
        page = annotator.list_label_requests(learner)
        if page.requests:
            break
    assert page.requests, "400 more events made no label request"
    rid = page.requests[0].id
    claim = annotator.claim_label_request(learner, rid)
    with pytest.raises(ConflictError) as e:
        annotator2.claim_label_request(learner, rid)
    assert e.value.status == 409
    with pytest.raises(ConflictError):
        annotator2.submit_label(learner, rid, 1)
    annotator.submit_label(learner, rid, expert(claim.x))
    with pytest.raises(ConflictError):
        annotator.submit_label(learner, rid, 1)  # labelled already
    label_all(annotator, learner)


def test_ingest_single_csv_and_idempotent_replay(learner: str, ingest: Client, officer: Client) -> None:
    one = ingest.ingest_event(learner, [0.1, 0.2], id="single-1", idempotency_key="single-1")
    assert one.accepted == 1 and one.results[0].event
    assert officer.get_record_epsilon("single-1").event == one.results[0].event
    observed = officer.get_budget(learner).stats.observed
    again = ingest.ingest_event(learner, [0.1, 0.2], id="single-1", idempotency_key="single-1")
    assert again == one and officer.get_budget(learner).stats.observed == observed  # nothing observed twice

    res = ingest.ingest_csv(learner, "0.1,0.2\n# a comment\n0.3,x\n1,2,3\n", idempotency_key="csv-1")
    assert (res.accepted, res.rejected) == (1, 2)
    rejected = [r for r in res.results if r.status == "rejected"]
    assert [(r.line, r.error, r.field) for r in rejected] == [(3, "invalid-input", "x"), (4, "invalid-input", "x")]


def test_roles(learner: str, ingest: Client, annotator: Client, officer: Client) -> None:
    assert ingest.who_am_i().role == "ingest"
    assert officer.who_am_i().role == "officer"
    with pytest.raises(ForbiddenError) as e:
        ingest.get_budget(learner)
    assert e.value.status == 403
    with pytest.raises(ForbiddenError):
        annotator.get_model(learner)
    with pytest.raises(ForbiddenError):
        officer.create_learner("other", 2)
