"""Dataclasses for the request and answer shapes of ``dpal serve``.

Each class is named after its schema in ``components/schemas`` of the
OpenAPI document (``service/openapi.json``, served at ``/openapi.json``) and
has the same fields; a JSON key that is a Python keyword gets a trailing
underscore (``StreamConfig.lambda_``). Answers are decoded with
:meth:`Schema.from_dict`, which ignores keys it does not know, so a newer server
that adds fields does not break an older client. Times (``format: date-time``)
are kept as the server's RFC 3339 strings: Python before 3.11 cannot parse
their nanoseconds, and a caller that needs a ``datetime`` knows which
precision it wants.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar, Union

__all__ = [
    "Schema",
    "ProbeStatus",
    "Identity",
    "StreamConfig",
    "LearnerSettings",
    "Learner",
    "LearnerPage",
    "Event",
    "LineResult",
    "IngestResult",
    "PendingRequest",
    "RequestPage",
    "Claim",
    "Label",
    "LabelAck",
    "Release",
    "ReleasePage",
    "Model",
    "PrivacyBudget",
    "GroupSpend",
    "StreamStats",
    "Queue",
    "SpendPoint",
    "Budget",
    "RecordEpsilon",
    "PLDTerm",
    "PrivacyLoss",
    "LedgerEntry",
    "LedgerMeta",
    "LedgerReport",
    "LedgerReports",
    "CreatedToken",
    "SearchParams",
    "Halting",
    "Search",
    "SearchResult",
    "SearchRun",
    "SearchDetail",
    "ScoreResult",
    "ScoreResults",
]

T = TypeVar("T", bound="Schema")


def _json_key(f: "dataclasses.Field[Any]") -> str:
    return str(f.metadata.get("json", f.name))


def _decode(tp: Any, value: Any) -> Any:
    """Converts decoded JSON ``value`` to the annotated type ``tp``."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Union:  # Optional[X]
        inner = [a for a in args if a is not type(None)]
        return _decode(inner[0], value) if len(inner) == 1 else value
    if origin in (list, List):
        return [_decode(args[0], v) for v in value] if args else list(value)
    if origin in (dict, Dict):
        return {k: _decode(args[1], v) for k, v in value.items()} if args else dict(value)
    if isinstance(tp, type) and issubclass(tp, Schema):
        return tp.from_dict(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # JSON has one number type: 2 is a float field's 2.0
    return value


def _encode(value: Any) -> Any:
    if isinstance(value, Schema):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


class Schema:
    """Base of the schema dataclasses: decoding from and encoding to JSON objects."""

    @classmethod
    def from_dict(cls: Type[T], data: Dict[str, Any]) -> T:
        """Builds the dataclass from a decoded JSON object, ignoring unknown keys."""
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            key = _json_key(f)
            if key in data:
                kwargs[f.name] = _decode(hints[f.name], data[key])
        return cls(**kwargs)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object of this value; fields that are ``None`` are left out."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is not None:
                out[_json_key(f)] = _encode(v)
        return out


# --- probes and identity ---------------------------------------------------


@dataclass
class ProbeStatus(Schema):
    """A liveness or readiness answer: ``ok``, ``ready`` or ``store unavailable``."""

    status: str


@dataclass
class Identity(Schema):
    """The caller: its role (ingest, annotator, officer or admin) and public token id."""

    role: str
    token_id: str


# --- learners --------------------------------------------------------------


@dataclass
class StreamConfig(Schema):
    """The settings of ``dpal stream`` (stream.Config).

    In :meth:`Client.create_learner` every field is optional and overrides the
    private detector's defaults; in answers every field is filled in. See the
    spec's ``StreamConfig`` for each field's meaning (``window`` is N for FLSW,
    L, the mini-batch size, for FLMB; ``eps_select``/``eps_grad`` are ε_s/ε_g).
    """

    dim: Optional[int] = None
    m: Optional[float] = None
    norm_mode: Optional[str] = None
    selector: Optional[str] = None
    eps_select: Optional[float] = None
    eps_grad: Optional[float] = None
    b: Optional[float] = None
    calibration: Optional[str] = None
    tau: Optional[float] = None
    shrinking_slab: Optional[bool] = None
    policy: Optional[str] = None
    window: Optional[int] = None
    eta: Optional[float] = None
    lambda_: Optional[float] = field(default=None, metadata={"json": "lambda"})
    loss: Optional[str] = None
    radius: Optional[float] = None
    label_budget: Optional[int] = None
    update: Optional[str] = None
    delta: Optional[float] = None
    clip: Optional[float] = None
    final_share: Optional[float] = None
    non_private: Optional[bool] = None


@dataclass
class LearnerSettings(Schema):
    """A created learner's settings, defaults filled in."""

    name: str
    config: StreamConfig
    budget: float
    max_open_requests: int


@dataclass
class Learner(Schema):
    """A learner as listed."""

    name: str
    dim: int
    created: str


@dataclass
class LearnerPage(Schema):
    """A page of learners by name; ``next`` is the ``after`` of the next page (None on the last)."""

    learners: List[Learner]
    total: int
    next: Optional[str] = None


# --- ingest ----------------------------------------------------------------


@dataclass
class Event(Schema):
    """One event: its features and, optionally, the client's record id (no ``:`` or ``/``)."""

    x: List[float]
    id: Optional[str] = None


@dataclass
class LineResult(Schema):
    """The acceptance of one input line (1-based ``line``); ``field`` names a rejected line's fault."""

    line: int
    status: str
    event: Optional[int] = None
    error: Optional[str] = None
    field: Optional[str] = None


@dataclass
class IngestResult(Schema):
    """Acceptance per line, committed before it was returned."""

    accepted: int
    rejected: int
    results: List[LineResult]


# --- label requests --------------------------------------------------------


@dataclass
class PendingRequest(Schema):
    """An open label request, without its record; ``claimed``: a live claim holds it."""

    id: int
    claimed: bool


@dataclass
class RequestPage(Schema):
    """A page of open label requests with the queue's true counts."""

    requests: List[PendingRequest]
    open: int
    unclaimed: int
    max: int
    oldest_age_seconds: float


@dataclass
class Claim(Schema):
    """A claimed request: the record to label (``record``: the client's id, if it sent one)."""

    id: int
    x: List[float]
    record: Optional[str] = None


@dataclass
class Label(Schema):
    """A label for request ``id``: ``y`` is 1 or -1."""

    id: int
    y: int


@dataclass
class LabelAck(Schema):
    """The label is committed, with any update it triggered (``status``: ``labelled``)."""

    id: int
    status: str


# --- releases, model, budget -----------------------------------------------


@dataclass
class Release(Schema):
    """One released model (T_i, w_{T_i}): ``observation`` T_i, ``update`` i (1-based)."""

    observation: int
    update: int
    w: List[float]
    time: str


@dataclass
class ReleasePage(Schema):
    """A page of releases, by update."""

    releases: List[Release]


@dataclass
class Model(Schema):
    """The currently published model."""

    learner: str
    update: int
    observation: int
    w: List[float]


@dataclass
class PrivacyBudget(Schema):
    """A ledger's budget per record (group): ε and δ."""

    epsilon: float
    delta: float


@dataclass
class GroupSpend(Schema):
    """One ledger group's spend: ε and δ composed as the ledger composes them, ε left."""

    group: str
    epsilon: float
    delta: float
    charges: int
    budget: float
    remaining: float


@dataclass
class StreamStats(Schema):
    """A learner's progress and spend (stream.Stats)."""

    observed: int
    requested: int
    labelled: int
    pending: int
    buffered: int
    updates: int
    eps_select: float
    eps_grad: float
    max_epsilon_per_record: float
    budget_reached: bool


@dataclass
class Queue(Schema):
    """The learner's queue of open label requests, its bound and masked selections."""

    open: int
    max: int
    oldest_age_seconds: float
    masked: int


@dataclass
class SpendPoint(Schema):
    """A group's ε per record after one of its ledger entries."""

    time: str
    epsilon: float


@dataclass
class Budget(Schema):
    """A learner's spend against its budget, its counters, queue and ε series per group."""

    learner: str
    budget: PrivacyBudget
    groups: List[GroupSpend]
    stats: StreamStats
    queue: Queue
    series: Dict[str, List[SpendPoint]]


@dataclass
class RecordEpsilon(Schema):
    """What one record has spent; ``group`` is None when it spent nothing."""

    record: str
    learner: str
    event: int
    epsilon: float
    delta: float
    group: Optional[str] = None


# --- ledger ----------------------------------------------------------------


@dataclass
class PLDTerm(Schema):
    """A mechanism accounted by its privacy-loss distribution."""

    kind: str
    count: int
    noise_multiplier: Optional[float] = None
    scale: Optional[float] = None
    sample_rate: Optional[float] = None
    sensitivity: Optional[int] = None
    epsilon: Optional[float] = None
    delta: Optional[float] = None
    part: Optional[int] = None


@dataclass
class PrivacyLoss(Schema):
    """One release's privacy loss (account.Loss)."""

    mechanism: str
    params: Optional[Dict[str, float]] = None
    epsilon: Optional[float] = None
    delta: Optional[float] = None
    rho: Optional[float] = None
    orders: Optional[List[float]] = None
    rdp: Optional[List[float]] = None
    pld: Optional[List[PLDTerm]] = None


@dataclass
class LedgerEntry(Schema):
    """One charge in the ledger."""

    seq: int
    time: str
    groups: List[str]
    loss: PrivacyLoss
    once: Optional[str] = None
    note: Optional[str] = None


@dataclass
class LedgerMeta(Schema):
    """A ledger's settings."""

    version: int
    budget: PrivacyBudget
    conversion: str
    created: str


@dataclass
class LedgerReport(Schema):
    """One ledger: the JSON of ``dpal ledger show --json``."""

    meta: LedgerMeta
    entries: List[LedgerEntry]
    groups: List[GroupSpend]


@dataclass
class LedgerReports(Schema):
    """Every ledger: learners' and search populations' by name."""

    learners: Dict[str, LedgerReport]
    searches: Dict[str, LedgerReport]


# --- tokens ----------------------------------------------------------------


@dataclass
class CreatedToken(Schema):
    """A new token (shown only in this answer), its public id and role."""

    token: str
    id: str
    role: str


# --- searches --------------------------------------------------------------


@dataclass
class SearchParams(Schema):
    """The public parameters of a search: thresholds t_ℓ < t_h (eq. 1) and per-answer ε."""

    t_low: float
    t_high: float
    epsilon: float
    clip: Optional[bool] = None
    mean_level: Optional[float] = None


@dataclass
class Halting(Schema):
    """The halting rules of a search (``budget`` is set by the server from the population's)."""

    budget: Optional[float] = None
    posterior: Optional[float] = None
    delta: Optional[float] = None
    ben_or_hassidim: Optional[bool] = None
    max_queries: Optional[int] = None


@dataclass
class Search(Schema):
    """A search population's settings."""

    name: str
    oracle: str
    params: SearchParams
    halting: Halting
    top: int
    budget: float
    created: str


@dataclass
class SearchResult(Schema):
    """What a search found (groupsearch.Result): the top indices, best first."""

    top: List[int]
    posterior_top: List[float]
    max_posterior: float
    queries: int
    epsilon_spent: float
    halted_by: str


@dataclass
class SearchRun(Schema):
    """One stored search result; its indices are the clients' own."""

    run: int
    time: str
    size: int
    result: SearchResult


@dataclass
class SearchDetail(Schema):
    """A population's settings, stored runs and spend."""

    search: Search
    runs: List[SearchRun]
    groups: List[GroupSpend]


@dataclass
class ScoreResult(Schema):
    """The acceptance of one scores line: ``index`` on every accepted line (0
    included), ``field`` (index or score) on a rejected one."""

    line: int
    status: str
    index: Optional[int] = None
    error: Optional[str] = None
    field: Optional[str] = None


@dataclass
class ScoreResults(Schema):
    """Acceptance per scores line."""

    results: List[ScoreResult]
