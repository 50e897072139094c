"""How ``covrag serve`` runs: limits, authentication, defaults and where reports live."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from covrag.errors import ConfigError
from covrag.pipeline.config import DEFAULT_COVERAGE, DEFAULT_SELECTOR

#: The environment variable ``covrag serve`` reads the API key from when none is given.
API_KEY_ENV = "COVRAG_API_KEY"

#: The environment variable ``covrag serve`` reads :attr:`ServerConfig.processes` from (it has
#: no option: the CLI's options are capped, issue 33).
PROCESSES_ENV = "COVRAG_SERVE_PROCESSES"

#: Default cap on the pairs one request may have a cross-encoder score. The shipped int8
#: cross-encoder scores about 300 short pairs a second on 2 CPU cores (Perspectrum dev pairs,
#: 34 tokens on average; docs/USAGE.md, "Security and limits"), so 10,000 pairs is about the
#: default 30 s timeout on such a machine: a request the server can usually finish.
DEFAULT_MAX_PAIRS = 10_000

#: Default caps of the LLM routes, checked before any model work (413 / 422). A question is a
#: sentence or two; 50 passages of about 320 tokens each are 16,000 tokens of text, of which the
#: writer keeps ``max_words`` words a passage in its prompts; 1,200 completion tokens is the
#: 1.5x of ``covrag ask``'s 800 that a rewrite may write.
DEFAULT_MAX_QUESTION_CHARS = 2_000
DEFAULT_MAX_LLM_PASSAGES = 50
DEFAULT_MAX_LLM_TOKENS = 16_000
DEFAULT_MAX_COMPLETION_TOKENS = 1_200


@dataclass(frozen=True)
class ServerConfig:
    """Settings of the HTTP service; every field is also a ``covrag serve`` option, whose help
    is the field's ``metadata["help"]``.

    ``selectors`` / ``coverages``: the specs requests may choose (None: the defaults of
    :mod:`covrag.server.specs`); every model and path a request can reach is written here, by
    the operator, never in a request.

    ``api_key``: when set, every ``/v1`` and ``/reports`` request must send it as
    ``Authorization: Bearer <key>`` or ``X-API-Key: <key>`` (401 otherwise); ``/healthz`` and the
    OpenAPI schema stay open. ``llm``: an LLM specification (``local``, ``openai(...)``) that
    enables ``POST /v1/plan`` and ``POST /v1/answer``; None leaves those routes out.
    """

    api_key: str | None = field(
        default=None,
        metadata={"help": f"require this key (Bearer or X-API-Key); also read from ${API_KEY_ENV}"},
    )
    max_body_bytes: int = field(
        default=2_000_000, metadata={"help": "larger bodies get 413, before parsing"}
    )
    timeout_s: float = field(
        default=30.0,
        metadata={
            "help": "seconds per request before a 504; the model work stops at its next batch"
        },
    )
    max_pairs: int = field(
        default=DEFAULT_MAX_PAIRS,
        metadata={
            "help": "most (passage, aspect) pairs one request may have the cross-encoder "
            "score (passages x aspects, answer sketches counted); more is a 422"
        },
    )
    model_wait_s: float = field(
        default=1.0,
        metadata={
            "help": "seconds a request waits for the model while another request uses it, "
            "then a 429 with Retry-After"
        },
    )
    body_timeout_s: float = field(
        default=10.0,
        metadata={"help": "seconds a request body may take to arrive in full before a 408"},
    )
    workers: int = field(default=2, metadata={"help": "threads for the CPU-bound work"})
    processes: int = field(
        default=1,
        metadata={
            "help": "server processes (replicas) on the one port, each with its own models, "
            f"locks and threads (covrag serve: ${PROCESSES_ENV})"
        },
    )
    default_coverage: str = field(
        default=DEFAULT_COVERAGE,
        metadata={
            "help": "coverage estimator when a request names none (cross-encoder, embedding, ...)"
        },
    )
    default_selector: str = field(
        default=DEFAULT_SELECTOR, metadata={"help": "selector when a request names none"}
    )
    selectors: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "help": "selector specs requests may choose, models included (default: every "
            "selector with its defaults, and mmr(lam=0.3), mmr(lam=0.7), ...); "
            "--selector is always offered"
        },
    )
    coverages: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "help": "coverage estimator specs requests may choose, models included (default: "
            "gold, embedding, cross-encoder with covrag's models); --coverage is always offered"
        },
    )
    reports_dir: Path | None = field(
        default=None,
        metadata={"help": "folder of HTML reports to serve (GET /reports/{name}.html)"},
    )
    preload: bool = field(
        default=True,
        metadata={
            "help": "load the default models at start-up (--no-preload: at the first request)"
        },
    )
    llm: str | None = field(
        default=None,
        metadata={
            "help": "LLM spec (e.g. local) that enables POST /v1/plan and /v1/answer (default: off)"
        },
    )
    llm_timeout_s: float = field(
        default=600.0,
        metadata={
            "help": "seconds per /v1/plan or /v1/answer request before a 504; the LLM stops "
            "at its next token (local and transformers models) or call"
        },
    )
    max_question_chars: int = field(
        default=DEFAULT_MAX_QUESTION_CHARS,
        metadata={"help": "longest question /v1/plan and /v1/answer take, in characters (422)"},
    )
    max_llm_passages: int = field(
        default=DEFAULT_MAX_LLM_PASSAGES,
        metadata={"help": "most passages one /v1/answer request may send (422)"},
    )
    max_llm_tokens: int = field(
        default=DEFAULT_MAX_LLM_TOKENS,
        metadata={
            "help": "most tokens of question and passage text one /v1/answer request may "
            "send (MiniLM WordPiece tokens, as budgets count them); more is a 413"
        },
    )
    max_completion_tokens: int = field(
        default=DEFAULT_MAX_COMPLETION_TOKENS,
        metadata={"help": "largest max_tokens a /v1/answer request may ask for (422)"},
    )

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ConfigError("api_key must not be empty (leave it unset to disable auth)")
        if self.max_body_bytes < 1:
            raise ConfigError(f"max_body_bytes must be >= 1, got {self.max_body_bytes}")
        for name in ("selectors", "coverages"):
            specs = getattr(self, name)
            if specs is not None:
                if not specs:
                    raise ConfigError(f"{name} must list at least one spec (or be unset)")
                object.__setattr__(self, name, tuple(specs))
        if not self.body_timeout_s > 0:
            raise ConfigError(f"body_timeout_s must be > 0, got {self.body_timeout_s}")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if not self.llm_timeout_s > 0:
            raise ConfigError(f"llm_timeout_s must be > 0, got {self.llm_timeout_s}")
        if self.max_pairs < 1:
            raise ConfigError(f"max_pairs must be >= 1, got {self.max_pairs}")
        if not self.model_wait_s >= 0:
            raise ConfigError(f"model_wait_s must be >= 0, got {self.model_wait_s}")
        for name in (
            "max_question_chars",
            "max_llm_passages",
            "max_llm_tokens",
            "max_completion_tokens",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("workers", "processes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.reports_dir is not None and not Path(self.reports_dir).is_dir():
            raise ConfigError(f"reports_dir {self.reports_dir} is not a folder")
