"""Name -> class registries with parsable specifications.

Selectors, measures and coverage estimators are parameterised objects. Each prints back as the
string that builds it (``mmr(lam=0.5)``), so a repr works as a CLI argument, a config value and a
dict key. ``Registry.parse`` turns such a string into an object.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from covrag.errors import ConfigError

T = TypeVar("T")


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``name(a=1, b='x')`` into its name and keyword arguments.

    Values are Python literals; a bare word that is not a literal is taken as a string.
    """
    spec = spec.strip()
    if "(" not in spec:
        if not spec:
            raise ConfigError("empty specification")
        return spec, {}
    if not spec.endswith(")"):
        raise ConfigError(f"specification {spec!r} must end with ')'")
    name, _, rest = spec.partition("(")
    try:
        call = ast.parse(f"f({rest}", mode="eval").body
    except SyntaxError as exc:
        raise ConfigError(f"cannot parse the parameters of {spec!r}: {exc.msg}") from exc
    if not isinstance(call, ast.Call) or call.args:
        raise ConfigError(f"parameters of {spec!r} must be given as name=value")
    params: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ConfigError(f"parameters of {spec!r} must be given as name=value")
        try:
            params[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            if isinstance(keyword.value, ast.Name):
                params[keyword.arg] = keyword.value.id
            else:
                raise ConfigError(
                    f"parameter {keyword.arg!r} of {spec!r} is not a literal value"
                ) from None
    return name.strip(), params


def spec_of(obj: Any, name: str) -> str:
    """``name(field=value, ...)`` for a dataclass instance, listing the fields that differ from
    their defaults (so ``mmr(lam=0.5)`` prints as ``mmr`` and both parse to the same object)."""
    args = ", ".join(
        f"{f.name}={getattr(obj, f.name)!r}"
        for f in dataclasses.fields(obj)
        if f.init and f.repr and not _is_default(f, getattr(obj, f.name))
    )
    return f"{name}({args})" if args else name


def _is_default(field: dataclasses.Field[Any], value: Any) -> bool:
    if field.default is not dataclasses.MISSING:
        return bool(value == field.default)
    if field.default_factory is not dataclasses.MISSING:
        return bool(value == field.default_factory())
    return False


class Registry(Generic[T]):
    """A registry of factories by name."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = factory
            return factory

        return decorator

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            ) from None

    def parse(self, spec: str, **overrides: Any) -> T:
        """Build the object a specification names, e.g. ``parse("mmr(lam=0.7)")``."""
        name, params = split_spec(spec)
        params.update(overrides)
        factory = self.get(name)
        try:
            return factory(**params)
        except TypeError as exc:
            raise ConfigError(f"bad parameters for {self.kind} {name!r}: {exc}") from exc
        except ValueError as exc:
            raise ConfigError(f"bad parameters for {self.kind} {name!r}: {exc}") from exc
