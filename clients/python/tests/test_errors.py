"""Error answers become DpalError subclasses carrying the status, the server's
error and the field at fault (and Retry-After on 429)."""

from __future__ import annotations

import pytest

from conftest import Server, start_server, stop_server
from dpal_client import (
    BadRequestError,
    Client,
    ConflictError,
    DpalConnectionError,
    DpalError,
    NotFoundError,
    RateLimitedError,
    UnauthorizedError,
    UnprocessableError,
)


def test_probes_need_no_token(server: Server) -> None:
    anonymous = Client(server.url)
    assert anonymous.check_liveness().status == "ok"
    assert anonymous.check_readiness().status == "ready"
    assert anonymous.get_open_api()["openapi"].startswith("3.")


def test_bad_token_is_unauthorized(server: Server) -> None:
    with pytest.raises(UnauthorizedError) as e:
        Client(server.url, "dpal_admin_not-a-token").who_am_i()
    assert e.value.status == 401 and e.value.error == "missing or unknown bearer token"
    assert isinstance(e.value, DpalError)
    with pytest.raises(UnauthorizedError):
        Client(server.url).list_learners()


def test_bad_fields_are_named(admin: Client) -> None:
    with pytest.raises(BadRequestError) as e:
        admin.create_learner("Bad Name", 2)
    assert (e.value.status, e.value.field) == (400, "name")
    with pytest.raises(BadRequestError) as e:
        admin.create_learner("ok-name", 2, config={"bogus": 1})
    assert e.value.field == "config.bogus" and "config.bogus" in str(e.value)
    with pytest.raises(BadRequestError) as e:
        admin.create_learner("ok-name", 2, config={"eta": -1})
    assert e.value.field == "config.eta" and e.value.error == "stream: eta must be finite and > 0, got -1"
    with pytest.raises(BadRequestError) as e:
        admin.create_learner("ok-name", 2, config={"window": 0})
    assert e.value.field == "config.window"
    with pytest.raises(BadRequestError) as e:
        admin.create_learner("ok-name", 2, config={"selector": "nope"})
    assert e.value.field == "config.selector" and "bernoulli, exponential" in e.value.error
    assert "nope" not in e.value.error  # the value sent is never echoed
    with pytest.raises(BadRequestError) as e:
        admin.create_search("s", "rr", {"t_low": 2, "t_high": 1, "epsilon": 1})
    assert e.value.field == "params.t_high" and "t_low < t_high" in e.value.error
    with pytest.raises(BadRequestError) as e:
        admin.create_search("s", "rr", {"t_low": 1, "t_high": 2, "epsilon": 1}, halting={"posterior": 2})
    assert e.value.field == "halting.posterior"
    with pytest.raises(BadRequestError) as e:
        admin.create_learner("ok-name", 0)
    assert e.value.field == "dim"
    with pytest.raises(BadRequestError) as e:
        admin.list_learners(limit=5000)
    assert e.value.field == "limit"
    with pytest.raises(BadRequestError) as e:
        admin.create_token("root")
    assert e.value.field == "role"


def test_conflicts_and_missing(admin: Client, ingest: Client, officer: Client) -> None:
    admin.create_learner("errs", 2)
    with pytest.raises(ConflictError) as e:
        admin.create_learner("errs", 2)
    assert e.value.status == 409
    with pytest.raises(NotFoundError):
        officer.get_budget("no-such-learner")
    with pytest.raises(NotFoundError) as e:
        officer.get_record_epsilon("no-such-record")
    assert e.value.status == 404
    with pytest.raises(BadRequestError) as e:
        admin.submit_label("errs", 1, 2)
    assert e.value.field == "y"
    with pytest.raises(NotFoundError) as e:
        admin.submit_label("errs", 99, 1)
    assert e.value.field == "id"


def test_key_reused_with_another_body_is_unprocessable(ingest: Client, admin: Client) -> None:
    admin.create_learner("keys", 2)
    ingest.ingest_events("keys", [[0.1, 0.2]], idempotency_key="k-1")
    with pytest.raises(UnprocessableError) as e:
        ingest.ingest_events("keys", [[0.3, 0.4]], idempotency_key="k-1")
    assert e.value.status == 422
    with pytest.raises(BadRequestError) as e:
        ingest.ingest_events("keys", [[0.1, 0.2]], idempotency_key="k" * 200)
    assert e.value.field == "Idempotency-Key"


def test_revoked_token_is_unauthorized(admin: Client, server: Server) -> None:
    made = admin.create_token("officer")
    user = Client(server.url, made.token)
    assert user.who_am_i().token_id == made.id
    admin.revoke_token(made.id)
    with pytest.raises(UnauthorizedError):
        user.who_am_i()
    with pytest.raises(NotFoundError):
        admin.revoke_token(made.id)
    with pytest.raises(BadRequestError):
        admin.revoke_token(admin.who_am_i().token_id)  # a token cannot revoke itself


def test_rate_limit_carries_retry_after(dpal_bin: str, tmp_path) -> None:
    slow = start_server(dpal_bin, tmp_path, config={"rate_per_token": 0.5, "burst": 1})
    try:
        c = Client(slow.url, slow.admin_token)
        c.who_am_i()
        with pytest.raises(RateLimitedError) as e:
            c.who_am_i()
        assert e.value.status == 429 and e.value.retry_after is not None and e.value.retry_after > 0
    finally:
        stop_server(slow)


def test_unreachable_server() -> None:
    with pytest.raises(DpalConnectionError) as e:
        Client("http://127.0.0.1:9", "t", timeout=5).who_am_i()
    assert e.value.status == 0
