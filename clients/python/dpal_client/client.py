"""The client of ``dpal serve``'s HTTP/JSON API.

One method per operation of the OpenAPI document (``/openapi.json``), named
after its ``operationId`` in snake case (``createLearner`` →
:meth:`Client.create_learner`), plus a few conveniences built on them
(:meth:`Client.iter_learners`, :meth:`Client.ingest_event`,
:meth:`Client.ingest_csv`). Hand-written over :mod:`urllib.request`: no
third-party dependency.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

from .errors import DpalConnectionError, DpalError, error_for_status
from .projects import ProjectsMixin
from .models import (
    Budget,
    Claim,
    CreatedToken,
    Event,
    Halting,
    Identity,
    IngestResult,
    LabelAck,
    Learner,
    LearnerPage,
    LearnerSettings,
    LedgerReport,
    LedgerReports,
    Model,
    ProbeStatus,
    RecordEpsilon,
    ReleasePage,
    RequestPage,
    ScoreResults,
    Search,
    SearchDetail,
    SearchParams,
    SearchRun,
    StreamConfig,
)

__all__ = ["Client", "EventLike"]

#: An event as :meth:`Client.ingest_events` takes it: an :class:`Event`, a
#: mapping with ``x`` (and optionally ``id``), or the features alone.
EventLike = Union[Event, Mapping[str, Any], Sequence[float]]

_USER_AGENT = "dpal-client-python/0.1"


def _event_json(e: EventLike) -> Dict[str, Any]:
    if isinstance(e, Event):
        return e.to_dict()
    if isinstance(e, Mapping):
        return dict(e)
    return {"x": [float(v) for v in e]}


def _settings(value: Any) -> Any:
    """A dataclass argument as JSON; a plain dict passes through."""
    return value.to_dict() if hasattr(value, "to_dict") else value


class Client(ProjectsMixin):
    """A client of one ``dpal serve`` at ``base_url`` (``http://127.0.0.1:8080``), with one bearer token.

    The token's role decides what the server allows (docs/serve.md): ``ingest``
    sends events and scores, ``annotator`` lists, claims and labels requests,
    ``officer`` reads releases, models, budgets, ε per record and ledgers,
    ``admin`` creates learners, searches and tokens and may do everything.

    Every method raises a :class:`~dpal_client.DpalError` subclass for an error
    answer (``BadRequestError`` for 400, ``UnauthorizedError`` for 401, …), with
    the HTTP status and the server's ``error`` and ``field``, and
    :class:`~dpal_client.DpalConnectionError` when the server cannot be reached.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 60.0) -> None:
        """Args:
        base_url: the server's address, scheme included; a trailing slash is ignored.
        token: the bearer token (None: only the probes and the spec work).
        timeout: seconds to wait for a connection and for each read.
        """
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # --- transport ---------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        json_body: Any = None,
        body: Optional[bytes] = None,
        content_type: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        ok_statuses: Tuple[int, ...] = (),
    ) -> Tuple[int, bytes]:
        """Sends one request; returns (status, body) of a 2xx answer (or one in ok_statuses)."""
        url = self.base_url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        hdrs = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        if json_body is not None:
            body = json.dumps(json_body).encode("utf-8")
            content_type = "application/json"
        if content_type:
            hdrs["Content-Type"] = content_type
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=body, headers=hdrs, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            if e.code in ok_statuses:
                return e.code, raw
            raise _error(e.code, raw, e.headers, method, path) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise DpalConnectionError(0, f"cannot reach {self.base_url}: {reason}", method=method, path=path) from e

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        _, raw = self._request(method, path, **kw)
        return json.loads(raw) if raw else None

    # --- probes and the document -------------------------------------------

    def check_liveness(self) -> ProbeStatus:
        """``GET /healthz`` (checkLiveness): the process answers; no token needed."""
        return ProbeStatus.from_dict(self._json("GET", "/healthz"))

    def check_readiness(self) -> ProbeStatus:
        """``GET /readyz`` (checkReadiness): ``ready``, or ``store unavailable`` (the 503 answer, returned, not raised)."""
        _, raw = self._request("GET", "/readyz", ok_statuses=(503,))
        return ProbeStatus.from_dict(json.loads(raw))

    def get_open_api(self) -> Dict[str, Any]:
        """``GET /openapi.json`` (getOpenApi): the OpenAPI 3 document this client follows."""
        return self._json("GET", "/openapi.json")

    def get_metrics(self) -> str:
        """``GET /metrics`` (getMetrics, officer): the Prometheus text exposition."""
        _, raw = self._request("GET", "/metrics", headers={"Accept": "text/plain"})
        return raw.decode("utf-8")

    def who_am_i(self) -> Identity:
        """``GET /v1/whoami`` (whoAmI): the caller's role and public token id."""
        return Identity.from_dict(self._json("GET", "/v1/whoami"))

    # --- learners ----------------------------------------------------------

    def create_learner(
        self,
        name: str,
        dim: int,
        config: Union[StreamConfig, Mapping[str, Any], None] = None,
        budget: Optional[float] = None,
        max_open_requests: Optional[int] = None,
    ) -> LearnerSettings:
        """``POST /v1/learners`` (createLearner, admin): a stream learner with its own ledger.

        Args:
            name: 1–63 characters of ``a-z0-9_-``, starting with a letter or digit.
            dim: the feature dimension d.
            config: settings over the private detector's defaults (unknown fields are refused).
            budget: per-record ε budget, at least ε_s + ε_g (None: ε_s + ε_g).
            max_open_requests: bound on open label requests (None: 10 000).

        Returns the settings with every default filled in. Raises
        ``BadRequestError`` naming the field for an invalid setting (``name``,
        ``dim``, ``budget``; a setting by its path: ``config.eta`` for an invalid
        value, ``config.selector`` for an unknown name, ``config.bogus`` for an
        unknown setting),
        ``ConflictError`` if the name is taken.
        """
        body: Dict[str, Any] = {"name": name, "dim": dim}
        if config is not None:
            body["config"] = _settings(config)
        if budget is not None:
            body["budget"] = budget
        if max_open_requests is not None:
            body["max_open_requests"] = max_open_requests
        return LearnerSettings.from_dict(self._json("POST", "/v1/learners", json_body=body))

    def list_learners(self, after: Optional[str] = None, limit: Optional[int] = None) -> LearnerPage:
        """``GET /v1/learners`` (listLearners, officer or annotator): a page of learners by name.

        ``after``: list names after this one (a page's ``next``); ``limit``: at most 1000 (default 1000).
        """
        return LearnerPage.from_dict(self._json("GET", "/v1/learners", query={"after": after, "limit": limit}))

    def iter_learners(self, page_size: Optional[int] = None) -> Iterator[Learner]:
        """Every learner, by name, following :meth:`list_learners`' ``next`` cursor."""
        after: Optional[str] = None
        while True:
            page = self.list_learners(after=after, limit=page_size)
            yield from page.learners
            if not page.next:
                return
            after = page.next

    # --- ingest ------------------------------------------------------------

    def ingest_events(
        self, name: str, events: Iterable[EventLike], idempotency_key: Optional[str] = None
    ) -> IngestResult:
        """``POST /v1/learners/{name}/events`` (ingestEvents, ingest): a batch as JSON Lines.

        Each event is an :class:`Event`, a mapping ``{"x": [...], "id": "..."}``
        or the features alone. The batch is committed durably before the answer,
        which says per line (1-based) whether it was accepted; a rejected line
        (``field`` names the fault) does not fail the call.

        ``idempotency_key`` names the batch: None makes a fresh one (uuid4). To
        retry a batch whose answer was lost, send it again with the *same* key
        and the same events: the server returns the stored answer and observes
        nothing twice. The same key with different events raises
        ``UnprocessableError`` (422); a key still being committed ``ConflictError``.
        """
        lines = "".join(json.dumps(_event_json(e)) + "\n" for e in events)
        return self._ingest(name, lines.encode("utf-8"), "application/x-ndjson", idempotency_key)

    def ingest_event(
        self,
        name: str,
        x: Sequence[float],
        id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> IngestResult:
        """``POST /v1/learners/{name}/events`` (ingestEvents) with one event as ``application/json``.

        ``id`` is the client's record id, for :meth:`get_record_epsilon`. Prefer
        :meth:`ingest_events` for many events: each call waits for an fsync.
        """
        event: Dict[str, Any] = {"x": [float(v) for v in x]}
        if id is not None:
            event["id"] = id
        return self._ingest(name, json.dumps(event).encode("utf-8"), "application/json", idempotency_key)

    def ingest_csv(self, name: str, csv: str, idempotency_key: Optional[str] = None) -> IngestResult:
        """``POST /v1/learners/{name}/events`` (ingestEvents) with ``text/csv``: one event's features per line, no header."""
        return self._ingest(name, csv.encode("utf-8"), "text/csv", idempotency_key)

    def _ingest(self, name: str, body: bytes, content_type: str, key: Optional[str]) -> IngestResult:
        headers = {"Idempotency-Key": key or uuid.uuid4().hex}
        data = self._json(
            "POST", f"/v1/learners/{_seg(name)}/events", body=body, content_type=content_type, headers=headers
        )
        return IngestResult.from_dict(data)

    # --- label requests ----------------------------------------------------

    def list_label_requests(
        self, name: str, after: Optional[int] = None, limit: Optional[int] = None
    ) -> RequestPage:
        """``GET /v1/learners/{name}/requests`` (listLabelRequests, annotator): open requests (ids only) and the queue's counts.

        ``after``: list request ids after this one; ``limit``: at most 1000.
        """
        data = self._json("GET", f"/v1/learners/{_seg(name)}/requests", query={"after": after, "limit": limit})
        return RequestPage.from_dict(data)

    def claim_label_request(self, name: str, id: int) -> Claim:
        """``POST /v1/learners/{name}/requests/{id}/claim`` (claimLabelRequest, annotator).

        Claims the request for 15 minutes and returns its record. Raises
        ``ConflictError`` if it is labelled or another annotator holds it,
        ``NotFoundError`` if there is no such request.
        """
        return Claim.from_dict(self._json("POST", f"/v1/learners/{_seg(name)}/requests/{int(id)}/claim"))

    def submit_label(self, name: str, id: int, y: int) -> LabelAck:
        """``POST /v1/learners/{name}/labels`` (submitLabel, annotator): label request ``id`` with ``y`` = 1 or -1.

        The caller must hold a live claim on the request (an admin may label one
        nobody holds), else ``ConflictError``. An update the label triggers is
        charged to the ledger before its release is stored.
        """
        return LabelAck.from_dict(self._json("POST", f"/v1/learners/{_seg(name)}/labels", json_body={"id": id, "y": y}))

    # --- releases, model, budget, ε ----------------------------------------

    def list_releases(self, name: str, after: Optional[int] = None, limit: Optional[int] = None) -> ReleasePage:
        """``GET /v1/learners/{name}/releases`` (listReleases, officer): the released models (T_i, w_i), by update.

        ``after``: list updates after this number; ``limit``: at most 1000.
        """
        data = self._json("GET", f"/v1/learners/{_seg(name)}/releases", query={"after": after, "limit": limit})
        return ReleasePage.from_dict(data)

    def get_model(self, name: str) -> Model:
        """``GET /v1/learners/{name}/model`` (getModel, officer): the currently published model."""
        return Model.from_dict(self._json("GET", f"/v1/learners/{_seg(name)}/model"))

    def get_budget(self, name: str) -> Budget:
        """``GET /v1/learners/{name}/budget`` (getBudget, officer): spend per ledger group against the budget, counters, queue."""
        return Budget.from_dict(self._json("GET", f"/v1/learners/{_seg(name)}/budget"))

    def get_record_epsilon(self, record: str) -> RecordEpsilon:
        """``GET /v1/records/{id}/epsilon`` (getRecordEpsilon, officer): what one record spent.

        ``record`` is a client record id, or ``learner:event`` (an event id the
        ingest answer gave). Raises ``NotFoundError`` for an unknown record.
        """
        return RecordEpsilon.from_dict(self._json("GET", f"/v1/records/{_seg(record)}/epsilon"))

    def get_ledger(
        self, learner: Optional[str] = None, search: Optional[str] = None
    ) -> Union[LedgerReport, LedgerReports]:
        """``GET /v1/ledger`` (getLedger, officer): one ledger's report, or all of them.

        With ``learner`` or ``search`` a :class:`LedgerReport` (the JSON of
        ``dpal ledger show --json``); with neither, :class:`LedgerReports` by name.
        """
        data = self._json("GET", "/v1/ledger", query={"learner": learner, "search": search})
        if learner is None and search is None:
            return LedgerReports.from_dict(data)
        return LedgerReport.from_dict(data)

    # --- tokens ------------------------------------------------------------

    def create_token(self, role: str) -> CreatedToken:
        """``POST /v1/tokens`` (createToken, admin): a token of ``role`` (ingest, annotator, officer, admin).

        The token is shown only in this answer; the server keeps its hash.
        """
        return CreatedToken.from_dict(self._json("POST", "/v1/tokens", json_body={"role": role}))

    def revoke_token(self, id: str) -> None:
        """``DELETE /v1/tokens/{id}`` (revokeToken, admin): revoke the token of this public id.

        Raises ``BadRequestError`` for the caller's own token, ``NotFoundError`` for an unknown id.
        """
        self._request("DELETE", f"/v1/tokens/{_seg(id)}")

    # --- search populations ------------------------------------------------

    def create_search(
        self,
        name: str,
        oracle: str,
        params: Union[SearchParams, Mapping[str, Any]],
        halting: Union[Halting, Mapping[str, Any], None] = None,
        top: Optional[int] = None,
        budget: Optional[float] = None,
    ) -> Search:
        """``POST /v1/searches`` (createSearch, admin): a population for the noisy binary search.

        Args:
            oracle: rr, noisy-max, binarized or mean.
            params: thresholds t_low < t_high and the per-answer ε.
            halting: halting rules (the budget rule is the population's budget).
            top: size of the top set (None: 1).
            budget: the population's ledger ε (None: 100 answers' worth).

        Raises ``BadRequestError`` naming the field for an invalid setting
        (``name``, ``oracle``, ``top``, ``budget``; a setting by its path:
        ``params.t_high``, ``halting.posterior``), ``ConflictError`` if the
        name is taken.
        """
        body: Dict[str, Any] = {"name": name, "oracle": oracle, "params": _settings(params)}
        if halting is not None:
            body["halting"] = _settings(halting)
        if top is not None:
            body["top"] = top
        if budget is not None:
            body["budget"] = budget
        return Search.from_dict(self._json("POST", "/v1/searches", json_body=body))

    def get_search(self, name: str) -> SearchDetail:
        """``GET /v1/searches/{name}`` (getSearch, officer): settings, stored runs and spend."""
        return SearchDetail.from_dict(self._json("GET", f"/v1/searches/{_seg(name)}"))

    def add_scores(
        self, name: str, scores: Union[str, Iterable[Union[float, Tuple[int, float]]]]
    ) -> ScoreResults:
        """``POST /v1/searches/{name}/scores`` (addScores, ingest): scores, finite and ≥ 0.

        ``scores`` is CSV text (lines ``index,score`` or ``score``) or an
        iterable of scores or ``(index, score)`` pairs; a score without an index
        gets the next index after those stored, and a later score for an index
        replaces the earlier.
        """
        if not isinstance(scores, str):
            lines = []
            for s in scores:
                if isinstance(s, tuple):
                    lines.append(f"{int(s[0])},{float(s[1])!r}")
                else:
                    lines.append(repr(float(s)))
            scores = "\n".join(lines) + "\n"
        data = self._json(
            "POST", f"/v1/searches/{_seg(name)}/scores", body=scores.encode("utf-8"), content_type="text/csv"
        )
        return ScoreResults.from_dict(data)

    def run_search(self, name: str) -> SearchRun:
        """``POST /v1/searches/{name}/runs`` (runSearch, admin): search the stored scores; each answer is charged first.

        Raises ``ConflictError`` when the scores do not fit the model or the budget is spent.
        """
        return SearchRun.from_dict(self._json("POST", f"/v1/searches/{_seg(name)}/runs"))


def _seg(value: Any) -> str:
    """One path segment, percent-encoded (a record id may hold any printable character)."""
    return urllib.parse.quote(str(value), safe="")


def _error(status: int, raw: bytes, headers: Any, method: str, path: str) -> DpalError:
    """The exception of an error answer: the ``Error`` schema's error and field, and Retry-After."""
    message, field = "", None
    try:
        data = json.loads(raw)
        if isinstance(data, dict):
            message = str(data.get("error", ""))
            field = data.get("field")
    except ValueError:
        message = raw.decode("utf-8", "replace").strip()
    retry_after = None
    value = headers.get("Retry-After") if headers is not None else None
    if value:
        try:
            retry_after = float(value)
        except ValueError:
            pass  # an HTTP date: dpal serve sends seconds, another proxy may not
    cls = error_for_status(status)
    return cls(status, message or f"HTTP {status}", field, retry_after, method, path)
