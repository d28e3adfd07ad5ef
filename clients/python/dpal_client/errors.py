"""Exceptions raised by :class:`dpal_client.Client`.

Every error answer of ``dpal serve`` has the body ``{"error": "…", "field": "…"}``
(the spec's ``Error`` schema): ``error`` says what went wrong, ``field`` names the
request field or header at fault, never its value. :class:`DpalError` carries
both with the HTTP status; a subclass per status lets a caller catch what it can
handle (``except ConflictError``) and let the rest propagate.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class DpalError(Exception):
    """An error answer of ``dpal serve``, or no answer at all (``status`` 0).

    Attributes:
        status: the HTTP status (0 when the server could not be reached).
        error: the server's ``error`` message (never a record's values).
        field: the request field or header at fault, when the server named one.
        retry_after: seconds to wait before retrying, from ``Retry-After``, if sent.
        method, path: the request that failed.
    """

    def __init__(
        self,
        status: int,
        error: str,
        field: Optional[str] = None,
        retry_after: Optional[float] = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.status = status
        self.error = error
        self.field = field
        self.retry_after = retry_after
        self.method = method
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.method} {self.path}: " if self.method else ""
        status = f"HTTP {self.status}: " if self.status else ""
        field = f" (field {self.field})" if self.field else ""
        return f"{where}{status}{self.error}{field}"


class DpalConnectionError(DpalError):
    """The server could not be reached or closed the connection (status 0)."""


class BadRequestError(DpalError):
    """400: a field, parameter or header is invalid; ``field`` names it."""


class UnauthorizedError(DpalError):
    """401: the bearer token is missing, unknown or revoked."""


class ForbiddenError(DpalError):
    """403: the token's role may not call this operation."""


class NotFoundError(DpalError):
    """404: no such learner, request, record, search population or token."""


class RequestTimeoutError(DpalError):
    """408: the body did not arrive within the server's body deadline."""


class ConflictError(DpalError):
    """409: the state forbids it (name taken, request claimed or labelled, budget spent, key in flight)."""


class PayloadTooLargeError(DpalError):
    """413: the body exceeds the server's limit (16 MiB of events, 64 KiB otherwise)."""


class UnprocessableError(DpalError):
    """422: an ``Idempotency-Key`` was used before with a different body; nothing was observed."""


class RateLimitedError(DpalError):
    """429: the token's rate limit is exceeded; wait ``retry_after`` seconds."""


class ServiceUnavailableError(DpalError):
    """503: the learner stopped after an internal error, the store is unavailable, or too many connections."""


_BY_STATUS: Dict[int, Type[DpalError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: UnprocessableError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}


def error_for_status(status: int) -> Type[DpalError]:
    """The exception class for an HTTP status (:class:`DpalError` when none is specific)."""
    return _BY_STATUS.get(status, DpalError)
