"""Exceptions covrag raises; each message says what to fix."""

from __future__ import annotations


class CovragError(Exception):
    """Base class of covrag's errors."""


class DataError(CovragError, ValueError):
    """Malformed input data. Names the file, the line (1-based) and the field at fault."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ConfigError(CovragError, ValueError):
    """A bad name or parameter in a selector, measure or estimator specification."""


class MissingExtraError(CovragError, ImportError):
    """An optional dependency is missing; names the extra that installs it."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"this feature needs the '{package}' package: install it with "
            f"pip install 'covrag[{extra}]'"
        )
        self.package = package
        self.extra = extra


class LLMError(CovragError, RuntimeError):
    """An LLM backend failed: unreachable, timed out, refused, or still failing after retries."""


class StructuredOutputError(LLMError):
    """An LLM's answer did not parse or validate after the bounded retries.

    Attributes:
        attempts: ``(raw text, what was wrong with it)`` for every attempt, in order.
    """

    def __init__(self, task: str, attempts: list[tuple[str, str]]) -> None:
        self.task = task
        self.attempts = attempts
        shown = "\n".join(
            f"  attempt {i}: {problem}\n    got: {_clip(raw)}"
            for i, (raw, problem) in enumerate(attempts, start=1)
        )
        super().__init__(
            f"{task}: the LLM gave no valid answer in {len(attempts)} attempts:\n{shown}"
        )


def _clip(text: str, limit: int = 400) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"
