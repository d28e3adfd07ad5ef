"""The client against the server's own OpenAPI document: every operation has a
method named after its operationId, every answer schema a dataclass with the
schema's fields."""

from __future__ import annotations

import dataclasses
import re

import dpal_client
from dpal_client import Client, Schema
from dpal_client.models import _json_key

# Operations that are not the API: the embedded page and the redirect to it.
NOT_API = {"getPage", "redirectToPage"}

# Schemas the client takes as method arguments or plain values instead of a
# dataclass: request bodies (the methods' keyword arguments), the text bodies,
# the role (a string) and the OpenAPI document itself (a dict).
NO_DATACLASS = {
    "CreateLearner",
    "CreateToken",
    "CreateSearch",
    "EventBatch",
    "EventCsv",
    "ScoreCsv",
    "Role",
    "OpenApiDocument",
    "Error",  # DpalError carries it
    "CreateProject",
    "PoolRecords",
    "PoolCsv",
    "PredictRows",
    "ProjectLabel",
    "ProjectSkip",
}


def snake(operation_id: str) -> str:
    """createLearner → create_learner, getOpenApi → get_open_api, whoAmI → who_am_i."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


def test_every_operation_has_a_method(admin: Client) -> None:
    spec = admin.get_open_api()
    missing = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if not isinstance(op, dict) or "operationId" not in op or op["operationId"] in NOT_API:
                continue
            name = snake(op["operationId"])
            fn = getattr(Client, name, None)
            if fn is None:
                missing.append(f"{method.upper()} {path}: {name}")
            else:
                assert fn.__doc__ and op["operationId"] in fn.__doc__, f"{name}'s docstring names {op['operationId']}"
    assert not missing, f"operations without a method: {missing}"


def test_every_schema_has_a_dataclass_with_its_fields(admin: Client) -> None:
    schemas = admin.get_open_api()["components"]["schemas"]
    for name, schema in schemas.items():
        if name in NO_DATACLASS:
            continue
        cls = getattr(dpal_client, name, None)
        assert cls is not None and issubclass(cls, Schema), f"no dataclass for schema {name}"
        keys = {_json_key(f) for f in dataclasses.fields(cls)}
        props = set(schema.get("properties", {}))
        assert keys == props, f"{name}: client fields {sorted(keys)} != spec properties {sorted(props)}"
        required = {_json_key(f) for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
        assert required == set(schema.get("required", [])), f"{name}: required fields differ"
