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
