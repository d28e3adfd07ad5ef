"""Pool active-learning projects (``/v1/projects``): the dataclasses of their
schemas and the client's methods for them (:class:`ProjectsMixin`, mixed into
:class:`~dpal_client.Client`).

A project runs pool-based DP active learning (Schwethelm et al. 2024; the
server's ``active/pool``) for a team: an admin creates it (the plan is fixed
before any record exists), an ingest token uploads the pool, the admin
starts it, annotators label the records each phase selects, the rounds train
on the server, and the officer reads the plan, the per-record ε, the
releases, downloads the model and predicts new rows (no charge).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .models import Schema

__all__ = [
    "ProjectsMixin",
    "ProjectSettings",
    "ProjectProgress",
    "Project",
    "ProjectList",
    "PlanGroupRate",
    "PlanPhase",
    "PlanGroup",
    "PoissonPrivacy",
    "PoolPlan",
    "ProjectPlan",
    "PoolRecord",
    "RejectedLine",
    "PoolUpload",
    "ProjectQueueItem",
    "ProjectQueue",
    "ProjectClaim",
    "ProjectAnswer",
    "ProjectRelease",
    "ProjectReleases",
    "NetSpec",
    "ModelPrivacy",
    "ModelFile",
    "Predictions",
    "EpsilonSpan",
    "GroupPrivacy",
    "PoolPrivacy",
    "ProjectPrivacy",
    "ProjectRecordEpsilon",
]


@dataclass
class ProjectSettings(Schema):
    """A project's resolved settings."""

    dim: int
    classes: List[str]
    pool_size: int
    preset: str
    model: str
    epsilon: float
    delta: float
    epsilon_select: float
    selection: str
    acquisition: str
    p_max: float
    threshold: float
    p_min: float
    initial: int
    queries: List[int]
    batch: int
    epochs: int
    mode: str
    accounting: str
    conversion: str
    image: Optional[List[int]] = None


@dataclass
class ProjectProgress(Schema):
    """The running job's progress."""

    round: int
    steps: int
    total: int


@dataclass
class Project(Schema):
    """A project's state."""

    name: str
    state: str
    created: str
    settings: ProjectSettings
    pooled: int
    rounds: int
    round: int
    labels: int
    dropped: int
    epsilon_per_record: float
    phase: Optional[int] = None
    error: Optional[str] = None
    progress: Optional[ProjectProgress] = None


@dataclass
class ProjectList(Schema):
    """Every project."""

    projects: List[Project]


@dataclass
class PlanGroupRate(Schema):
    """A group's Poisson sampling rate in a phase."""

    group: str
    size: int
    sample_rate: float


@dataclass
class PlanPhase(Schema):
    """One training phase."""

    steps: int
    noise_multiplier: float
    groups: List[PlanGroupRate]
    expected_batch: float


@dataclass
class PlanGroup(Schema):
    """A group's planned loss at the end."""

    group: str
    size: int
    epsilon_training: float
    epsilon_selection: float
    epsilon_total: float
    epsilon_add_remove: Optional[float] = None
    epsilon_replace: Optional[float] = None


@dataclass
class PoissonPrivacy(Schema):
    """Poisson selection's per-record guarantee (docs/pool.md, Theorem 1)."""

    initial_rate: float
    p_max: float
    entry_rate: float
    worst_entry: str
    epsilon_training: float
    epsilon: float


@dataclass
class PoolPlan(Schema):
    """The plan (active/pool's Plan)."""

    phases: List[PlanPhase]
    groups: List[PlanGroup]
    selection: str
    poisson: Optional[PoissonPrivacy] = None


@dataclass
class ProjectPlan(Schema):
    """The stored plan, fixed before any record was read."""

    name: str
    created: str
    settings: ProjectSettings
    plan: PoolPlan
    epsilon_per_record: float
    delta: float


@dataclass
class PoolRecord(Schema):
    """One pool record."""

    x: List[float]
    id: Optional[str] = None


@dataclass
class RejectedLine(Schema):
    """A refused line, by number (never its values)."""

    line: int
    error: str


@dataclass
class PoolUpload(Schema):
    """What an upload stored."""

    accepted: int
    first: int
    rejected: int
    rejected_lines: List[RejectedLine]
    pooled: int
    pool_size: int
    state: str


@dataclass
class ProjectQueueItem(Schema):
    """An open record of the queue (no values)."""

    index: int
    status: str
    claimed: bool
    id: Optional[str] = None


@dataclass
class ProjectQueue(Schema):
    """The phase's open records and counts."""

    phase: int
    items: List[ProjectQueueItem]
    open: int
    labelled: int
    skipped: int
    next: Optional[int] = None


@dataclass
class ProjectClaim(Schema):
    """A claimed record: its values and the classes to choose from."""

    index: int
    x: List[float]
    classes: List[str]
    until: str
    id: Optional[str] = None
    image: Optional[List[int]] = None


@dataclass
class ProjectAnswer(Schema):
    """A stored label or skip."""

    index: int
    status: str
    phase_done: bool


@dataclass
class ProjectRelease(Schema):
    """A released model."""

    round: int
    time: str
    labelled: int
    steps: int
    epsilon_max: float
    seconds: float


@dataclass
class ProjectReleases(Schema):
    """The releases, by round."""

    releases: List[ProjectRelease]


@dataclass
class NetSpec(Schema):
    """The network."""

    arch: str
    inputs: int
    classes: int
    hidden: Optional[List[int]] = None
    activation: Optional[str] = None
    dropout: Optional[float] = None
    image: Optional[List[int]] = None


@dataclass
class ModelPrivacy(Schema):
    """The project's privacy record in a model file."""

    private: bool
    project: str
    round: int
    rounds: int
    selection: str
    epsilon: float
    delta: float
    ledger: str


@dataclass
class ModelFile(Schema):
    """A model file, the format `dpal train --out` writes and `dpal predict` reads."""

    format: str
    version: int
    spec: NetSpec
    params: List[float]
    class_names: Optional[List[str]] = None
    privacy: Optional[ModelPrivacy] = None


@dataclass
class Predictions(Schema):
    """A release's predictions (post-processing: no charge)."""

    round: int
    classes: List[str]
    predictions: List[str]
    probabilities: List[List[float]]


@dataclass
class EpsilonSpan(Schema):
    """The smallest and largest ledger ε of a set of records."""

    min: float
    max: float


@dataclass
class GroupPrivacy(Schema):
    """A set of records' ε, read from the ledger per record, beside the plan's."""

    group: str
    records: int
    planned_epsilon: float
    ledger_epsilon: EpsilonSpan


@dataclass
class PoolPrivacy(Schema):
    """The per-group report (active/pool's PrivacyOf)."""

    epsilon: float
    delta: float
    not_selected: GroupPrivacy
    all_records: EpsilonSpan
    max_deviation: float
    guarantee: str
    trained: Optional[List[GroupPrivacy]] = None


@dataclass
class ProjectPrivacy(Schema):
    """Per-group and per-record ε of a project, read from its ledger."""

    round: int
    privacy: PoolPrivacy
    charges: int


@dataclass
class ProjectRecordEpsilon(Schema):
    """One pool record's ε, read from the ledger."""

    index: int
    group: str
    epsilon: float
    delta: float
    budget: float
    id: Optional[str] = None


#: A pool record as :meth:`ProjectsMixin.upload_pool` takes it: the features,
#: or (client id, features).
PoolRow = Any


class ProjectsMixin:
    """The project methods of :class:`~dpal_client.Client` (one per operationId)."""

    def _json(self, method: str, path: str, **kw: Any) -> Any:  # provided by Client
        raise NotImplementedError

    def _request(self, method: str, path: str, **kw: Any) -> Tuple[int, bytes]:  # provided by Client
        raise NotImplementedError

    def create_project(
        self,
        name: str,
        classes: Sequence[str],
        pool_size: int,
        epsilon: float,
        initial: int,
        queries: Sequence[int],
        *,
        dim: Optional[int] = None,
        image: Optional[Sequence[int]] = None,
        **settings: Any,
    ) -> Project:
        """``POST /v1/projects`` (createProject, admin): a pool project; its plan is computed and stored now.

        Args:
            name: 1–63 characters of ``a-z0-9_-``.
            classes: the class names, in label order.
            pool_size: the number of records the upload will deliver (the plan's n).
            epsilon: every record's total ε.
            initial: the initial labelled set's (expected) size.
            queries: the (expected) sizes of the T selections.
            dim: features per record, or ``image`` = (height, width, channels).
            settings: any other field of the spec's ``CreateProject`` (``model``,
                ``preset``, ``delta``, ``selection``, ``acquisition``, ``p_max``,
                ``threshold``, ``batch``, ``epochs``, …); defaults as ``dpal pool run``.

        Raises ``BadRequestError`` naming the field, ``ConflictError`` if the name is taken.
        """
        body: Dict[str, Any] = {"name": name, "classes": list(classes), "pool_size": pool_size, "epsilon": epsilon,
                                "initial": initial, "queries": list(queries)}
        if dim is not None:
            body["dim"] = dim
        if image is not None:
            body["image"] = list(image)
        body.update({k: v for k, v in settings.items() if v is not None})
        return Project.from_dict(self._json("POST", "/v1/projects", json_body=body))

    def list_projects(self) -> ProjectList:
        """``GET /v1/projects`` (listProjects, officer or annotator): every project."""
        return ProjectList.from_dict(self._json("GET", "/v1/projects"))

    def get_project(self, name: str) -> Project:
        """``GET /v1/projects/{name}`` (getProject, officer or annotator): state and the running job's progress."""
        return Project.from_dict(self._json("GET", f"/v1/projects/{name}"))

    def get_project_plan(self, name: str) -> ProjectPlan:
        """``GET /v1/projects/{name}/plan`` (getProjectPlan, officer): per-phase σ and rates, per-group ε, ε per record."""
        return ProjectPlan.from_dict(self._json("GET", f"/v1/projects/{name}/plan"))

    def upload_pool(self, name: str, rows: Iterable[PoolRow], start: Optional[int] = None, chunk: int = 5000) -> PoolUpload:
        """``POST /v1/projects/{name}/pool`` (uploadPool, ingest): upload pool records as JSON Lines.

        ``rows`` are feature sequences or ``(id, features)`` pairs; they are sent
        in requests of ``chunk`` records, each after the first with ``start`` set
        to the records already stored so that a retried request cannot append
        twice (pass ``start`` for the first too when resuming an upload). Returns the
        last answer with ``accepted`` and ``rejected`` summed over the requests
        (``rejected_lines`` numbers the lines of each request).
        """
        total: Optional[PoolUpload] = None
        batch: List[str] = []

        def send(lines: List[str], at: Optional[int]) -> PoolUpload:
            _, raw = self._request("POST", f"/v1/projects/{name}/pool", query={"start": at},
                                   body=("\n".join(lines) + "\n").encode("utf-8"), content_type="application/x-ndjson")
            return PoolUpload.from_dict(json.loads(raw))

        def merge(a: Optional[PoolUpload], b: PoolUpload) -> PoolUpload:
            if a is not None:
                b.accepted += a.accepted
                b.rejected += a.rejected
                b.first = a.first
                b.rejected_lines = a.rejected_lines + b.rejected_lines
            return b

        for row in rows:
            if isinstance(row, tuple) and len(row) == 2 and isinstance(row[0], str):
                rec = {"id": row[0], "x": [float(v) for v in row[1]]}
            else:
                rec = {"x": [float(v) for v in row]}
            batch.append(json.dumps(rec))
            if len(batch) == chunk:
                total = merge(total, send(batch, start))
                start = total.first + total.accepted
                batch = []
        if batch or total is None:
            total = merge(total, send(batch, start))
        return total

    def upload_pool_idx(self, name: str, images: bytes, start: Optional[int] = None) -> PoolUpload:
        """``POST /v1/projects/{name}/pool`` (uploadPool, ingest): upload pool images as one IDX file.

        ``images`` is an IDX file of unsigned-byte images (MNIST's format, gzipped
        or not) whose image size is the project's ``dim``; the server scales each
        byte by 1/255, as ``dpal train`` loads MNIST. ``rejected_lines`` number
        the images from 1.
        """
        _, raw = self._request("POST", f"/v1/projects/{name}/pool", query={"start": start},
                               body=images, content_type="application/x-idx")
        return PoolUpload.from_dict(json.loads(raw))

    def start_project(self, name: str) -> Project:
        """``POST /v1/projects/{name}/start`` (startProject, admin): start a ready project, or resume a paused or failed one."""
        return Project.from_dict(self._json("POST", f"/v1/projects/{name}/start"))

    def cancel_project(self, name: str) -> Project:
        """``POST /v1/projects/{name}/cancel`` (cancelProject, admin): cancel the running or queued job (paused)."""
        return Project.from_dict(self._json("POST", f"/v1/projects/{name}/cancel"))

    def close_phase(self, name: str) -> Project:
        """``POST /v1/projects/{name}/close`` (closePhase, admin): drop the open selections and train the next round."""
        return Project.from_dict(self._json("POST", f"/v1/projects/{name}/close"))

    def list_project_queue(self, name: str, after: Optional[int] = None, limit: Optional[int] = None) -> ProjectQueue:
        """``GET /v1/projects/{name}/queue`` (listProjectQueue, annotator): the phase's open records (no values)."""
        return ProjectQueue.from_dict(self._json("GET", f"/v1/projects/{name}/queue", query={"after": after, "limit": limit}))

    def claim_project_record(self, name: str, index: int) -> ProjectClaim:
        """``POST /v1/projects/{name}/queue/{index}/claim`` (claimProjectRecord, annotator): claim a record for 15 minutes and read it."""
        return ProjectClaim.from_dict(self._json("POST", f"/v1/projects/{name}/queue/{index}/claim"))

    def label_project_record(self, name: str, index: int, label: str) -> ProjectAnswer:
        """``POST /v1/projects/{name}/queue/{index}/label`` (labelProjectRecord, annotator): label a claimed record by class name."""
        return ProjectAnswer.from_dict(self._json("POST", f"/v1/projects/{name}/queue/{index}/label", json_body={"label": label}))

    def skip_project_record(self, name: str, index: int, reason: str) -> ProjectAnswer:
        """``POST /v1/projects/{name}/queue/{index}/skip`` (skipProjectRecord, annotator): skip a claimed record, saying why."""
        return ProjectAnswer.from_dict(self._json("POST", f"/v1/projects/{name}/queue/{index}/skip", json_body={"reason": reason}))

    def list_project_releases(self, name: str) -> ProjectReleases:
        """``GET /v1/projects/{name}/releases`` (listProjectReleases, officer): the released models, by round."""
        return ProjectReleases.from_dict(self._json("GET", f"/v1/projects/{name}/releases"))

    def get_project_model(self, name: str, round: Optional[int] = None) -> ModelFile:
        """``GET /v1/projects/{name}/model`` (getProjectModel, officer): a release's model file (default the last)."""
        return ModelFile.from_dict(self._json("GET", f"/v1/projects/{name}/model", query={"round": round}))

    def download_project_model(self, name: str, path: str, round: Optional[int] = None) -> int:
        """Saves a release's model file (getProjectModel) to ``path``, as ``dpal train --out`` writes it; returns its round."""
        raw = self._request("GET", f"/v1/projects/{name}/model", query={"round": round})[1]
        with open(path, "wb") as f:
            f.write(raw)
        return int(json.loads(raw)["privacy"]["round"])

    def predict_project(self, name: str, rows: Sequence[Sequence[float]], round: Optional[int] = None) -> Predictions:
        """``POST /v1/projects/{name}/predict`` (predictProject, officer): classes and probabilities of new rows (no charge)."""
        body = {"x": [[float(v) for v in r] for r in rows]}
        return Predictions.from_dict(self._json("POST", f"/v1/projects/{name}/predict", query={"round": round}, json_body=body))

    def get_project_privacy(self, name: str) -> ProjectPrivacy:
        """``GET /v1/projects/{name}/privacy`` (getProjectPrivacy, officer): per-group ε from the ledger beside the plan's."""
        return ProjectPrivacy.from_dict(self._json("GET", f"/v1/projects/{name}/privacy"))

    def get_project_record_epsilon(self, name: str, index: int) -> ProjectRecordEpsilon:
        """``GET /v1/projects/{name}/records/{index}/epsilon`` (getProjectRecordEpsilon, officer): one pool record's ε."""
        return ProjectRecordEpsilon.from_dict(self._json("GET", f"/v1/projects/{name}/records/{index}/epsilon"))

    def wait_project(self, name: str, states: Sequence[str] = ("labelling", "done"), timeout: float = 3600, poll: float = 0.5) -> Project:
        """Polls getProject until the project is in one of ``states``; raises ``RuntimeError`` if it failed, ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.get_project(name)
            if p.state in states:
                return p
            if p.state == "failed":
                raise RuntimeError(f"project {name} failed: {p.error}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"project {name} is still {p.state}")
            time.sleep(poll)
