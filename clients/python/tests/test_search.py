"""A search population through the client: create, add scores, run, read."""

from __future__ import annotations

import pytest

from dpal_client import Client, ForbiddenError, Halting, LedgerReport, SearchParams


def test_search(admin: Client, ingest: Client, officer: Client) -> None:
    search = admin.create_search(
        "hosts", "rr", SearchParams(t_low=1, t_high=10, epsilon=0.5), halting=Halting(max_queries=200), top=2, budget=200
    )
    assert (search.name, search.oracle, search.top, search.params.t_high) == ("hosts", "rr", 2, 10.0)
    scores = [0.5] * 40
    scores[17] = 12.0  # the anomaly
    res = ingest.add_scores("hosts", scores)
    assert [r.status for r in res.results] == ["accepted"] * 40
    assert [r.index for r in res.results] == list(range(40))  # 0 included
    res = ingest.add_scores("hosts", [(40, 0.25), (41, -1.0)])
    assert [(r.status, r.index, r.field) for r in res.results] == [("accepted", 40, None), ("rejected", None, "score")]
    with pytest.raises(ForbiddenError):
        ingest.run_search("hosts")

    run = admin.run_search("hosts")
    assert run.run == 1 and run.size == 41
    assert len(run.result.top) == 2 and run.result.queries > 0
    assert run.result.epsilon_spent == pytest.approx(0.5 * run.result.queries)

    detail = officer.get_search("hosts")
    assert detail.search.name == "hosts" and [r.run for r in detail.runs] == [1]
    assert detail.runs[0].result.top == run.result.top
    assert detail.groups and detail.groups[0].epsilon > 0
    report = officer.get_ledger(search="hosts")
    assert isinstance(report, LedgerReport) and len(report.entries) >= 1
