"""dpal_client: a typed Python client of ``dpal serve`` (stream learners, pool projects, searches, tokens, ledgers).

    from dpal_client import Client
    c = Client("http://127.0.0.1:8080", token)
    c.ingest_events("fraud", [[0.1, 0.2, 0.3]])

Methods are the operationIds of the server's OpenAPI document in snake case;
answers are the dataclasses of :mod:`dpal_client.models`, named after the
document's schemas; error answers raise :class:`DpalError` subclasses.
"""

from .client import Client, EventLike
from .errors import (
    BadRequestError,
    ConflictError,
    DpalConnectionError,
    DpalError,
    ForbiddenError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    RequestTimeoutError,
    ServiceUnavailableError,
    UnauthorizedError,
    UnprocessableError,
)
from .models import *  # noqa: F401,F403  (the schema dataclasses, models.__all__)
from .models import __all__ as _schemas
from .projects import *  # noqa: F401,F403  (the project schemas and ProjectsMixin)
from .projects import __all__ as _projects

__version__ = "0.1.0"

__all__ = [
    "Client",
    "EventLike",
    "DpalError",
    "DpalConnectionError",
    "BadRequestError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "RequestTimeoutError",
    "ConflictError",
    "PayloadTooLargeError",
    "UnprocessableError",
    "RateLimitedError",
    "ServiceUnavailableError",
] + list(_schemas) + list(_projects)
