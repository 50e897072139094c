"""Request-size caps of the LLM routes, checked before any model work.

The schema bounds every field for any server (``MAX_TEXT`` characters, ``MAX_CONTEXT`` passages);
these are the operator's tighter caps (:class:`~covrag.server.config.ServerConfig`), which bound
what one request may make the model read and write. A field over its cap is a 422 naming the
field, the cap and the setting that sets it (``ServerConfig.max_llm_tokens``, ``--max-pairs``;
the others are :class:`~covrag.server.config.ServerConfig` fields); text over the token cap is a
413 (the request is too large for the model, whatever its body size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from covrag.schema.http_answer import AnswerRequest
from covrag.schema.http_plan import PlanRequest
from covrag.server.config import ServerConfig
from covrag.server.service import RequestFieldError, RequestTooLarge, check_pair_count
from covrag.tokens import default_counter


def _over(what: str, cap: int, setting: str) -> str:
    return f"{what}, over this server's limit of {cap:,} ({setting})"


def check_question(question: str, config: ServerConfig) -> None:
    """422 on ``question`` when it is longer than ``max_question_chars``."""
    if len(question) > config.max_question_chars:
        raise RequestFieldError(
            "question",
            _over(
                f"{len(question):,} characters",
                config.max_question_chars,
                "ServerConfig.max_question_chars",
            )
            + "; ask a shorter question",
        )


def check_plan(request: PlanRequest, config: ServerConfig) -> None:
    """The caps of ``/v1/plan``: the question's length."""
    check_question(request.question, config)


def check_answer(
    request: AnswerRequest, config: ServerConfig, estimator: Callable[[], Any]
) -> None:
    """The caps of ``/v1/answer``: the question's length, the passages, ``max_tokens``, the
    tokens of the question and passages, and (with aspects) the pairs ``estimator()``, the
    route's coverage estimator, would score.

    Raises:
        RequestFieldError: A field over its cap (422).
        RequestTooLarge: The question and passages over ``max_llm_tokens`` tokens (413).
    """
    check_question(request.question, config)
    n = len(request.passages)
    if n > config.max_llm_passages:
        raise RequestFieldError(
            "passages",
            _over(f"{n:,} passages", config.max_llm_passages, "ServerConfig.max_llm_passages")
            + "; send fewer (POST /v1/select picks a covering few)",
        )
    if request.max_tokens > config.max_completion_tokens:
        raise RequestFieldError(
            "max_tokens",
            _over(
                f"{request.max_tokens:,} tokens asked for",
                config.max_completion_tokens,
                "ServerConfig.max_completion_tokens",
            ),
        )
    counts = default_counter().count([request.question, *(p.text for p in request.passages)])
    if sum(counts) > config.max_llm_tokens:
        raise RequestTooLarge(
            "passages",
            _over(
                f"the question and passages are {sum(counts):,} tokens",
                config.max_llm_tokens,
                "ServerConfig.max_llm_tokens",
            )
            + "; send fewer or shorter passages",
        )
    if request.aspects:
        sketches = [len(a.answers) for a in request.aspects]
        check_pair_count(estimator(), n, sketches, config.max_pairs)
