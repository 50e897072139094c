"""How ``covrag serve`` runs: limits, authentication, defaults and where reports live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from covrag.errors import ConfigError


@dataclass(frozen=True)
class ServerConfig:
    """Settings of the HTTP service; every field is also a ``covrag serve`` option.

    Attributes:
        api_key: When set, every ``/v1`` and ``/reports`` request must send it as
            ``Authorization: Bearer <key>`` or ``X-API-Key: <key>`` (401 otherwise).
            ``/healthz`` and the OpenAPI schema stay open.
        max_body_bytes: Request bodies larger than this are refused with 413 before parsing.
        timeout_s: Seconds a request may compute before it is answered with 504.
        workers: Threads that run the CPU-bound work, off the event loop.
        default_coverage: Coverage estimator used when a request names none.
        default_selector: Selector used when a request names none.
        reports_dir: Folder whose ``*.html`` files ``GET /reports/{name}`` serves (None: none).
        preload: Load the models of the default estimator when the server starts, so the first
            request does not pay for it.
        llm: LLM specification (``local``, ``openai(...)``) that enables ``POST /v1/plan`` and
            ``POST /v1/answer``; None leaves those routes out.
        llm_timeout_s: Seconds an LLM request may compute before it is answered with 504.
    """

    api_key: str | None = None
    max_body_bytes: int = 2_000_000
    timeout_s: float = 30.0
    workers: int = 2
    default_coverage: str = "cross-encoder"
    default_selector: str = "expected-coverage"
    reports_dir: Path | None = None
    preload: bool = True
    llm: str | None = None
    llm_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ConfigError("api_key must not be empty (leave it unset to disable auth)")
        if self.max_body_bytes < 1:
            raise ConfigError(f"max_body_bytes must be >= 1, got {self.max_body_bytes}")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if not self.llm_timeout_s > 0:
            raise ConfigError(f"llm_timeout_s must be > 0, got {self.llm_timeout_s}")
        if self.workers < 1:
            raise ConfigError(f"workers must be >= 1, got {self.workers}")
        if self.reports_dir is not None and not Path(self.reports_dir).is_dir():
            raise ConfigError(f"reports_dir {self.reports_dir} is not a folder")
