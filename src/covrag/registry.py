"""Name -> class registries with typed, parsable specifications.

Selectors, measures, coverage estimators, LLM backends, index kinds and aspect sources are
registered by name. Parameterised objects print back as the string that builds them
(``mmr(lam=0.5)``), so a repr works as a CLI argument, a config value and a dict key;
``Registry.parse`` turns such a string into an object.

The name is written once, on the class (``name = "mmr"``; another attribute for registries made
with ``key=``): ``@SELECTORS.register`` reads it. The parameters of a specification are checked
against the annotated types of the class's dataclass fields (or of its ``__init__``) before the
object is built: ``greedy-coverage(cost_aware=no)`` is an error naming the parameter, the type it
expects and the value, never a truthy string. An int is accepted for a float, a bool is not an
int; ``Literal[...]`` choices, unions and ``None`` are checked; annotations the checker cannot
resolve or does not know are not checked.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from covrag.errors import ConfigError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


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
        if keyword.arg in params:
            raise ConfigError(f"parameter {keyword.arg!r} of {spec!r} is given twice")
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


def parameter_types(factory: Callable[..., Any]) -> dict[str, Any]:
    """Parameter name -> resolved annotation (``Any`` when unannotated or unresolvable).

    Dataclasses contribute their ``init`` fields; other callables their keyword parameters.
    Annotations written as strings (``from __future__ import annotations``) are evaluated in the
    namespace of the module that wrote them.
    """
    if isinstance(factory, type) and dataclasses.is_dataclass(factory):
        return {
            f.name: _resolve(f.type, _owner_namespace(factory, f.name))
            for f in dataclasses.fields(factory)
            if f.init
        }
    target: Any = factory
    if isinstance(factory, type):  # the __init__ the class runs, for the globals that wrote it
        target = next(vars(k)["__init__"] for k in factory.__mro__ if "__init__" in vars(k))
    namespace = dict(getattr(target, "__globals__", {}))
    result: dict[str, Any] = {}
    for name, parameter in inspect.signature(factory).parameters.items():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.VAR_POSITIONAL):
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            result["**"] = Any
            continue
        annotation = parameter.annotation
        result[name] = Any if annotation is parameter.empty else _resolve(annotation, namespace)
    return result


def _owner_namespace(cls: type, field: str) -> dict[str, Any]:
    """The globals of the module of the class (in ``cls``'s MRO) that annotated ``field``."""
    for klass in cls.__mro__:
        if field in klass.__dict__.get("__annotations__", {}):
            module = sys.modules.get(klass.__module__)
            return dict(vars(module)) if module is not None else {}
    return {}


def _resolve(annotation: Any, namespace: dict[str, Any]) -> Any:
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, namespace)  # annotations of covrag's own classes
    except Exception:  # a name imported only for type checkers: leave the parameter unchecked
        return Any


def matches(expected: Any, value: Any) -> bool:
    """Whether ``value`` is acceptable for a parameter annotated ``expected``."""
    origin = get_origin(expected)
    if expected is Any or expected is object:
        return True
    if origin is Literal:
        return any(type(value) is type(c) and value == c for c in get_args(expected))
    if origin is Union or origin is types.UnionType:
        return any(matches(arg, value) for arg in get_args(expected))
    if expected is None or expected is type(None):
        return value is None
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin in (tuple, list, frozenset, set):
        return _matches_collection(expected, origin, value)
    if isinstance(expected, type):
        try:
            return isinstance(value, expected)
        except TypeError:  # a protocol that is not runtime-checkable
            return True
    return True  # forms the checker does not know (callables, type variables...)


def _matches_collection(expected: Any, origin: type, value: Any) -> bool:
    items: Any = value
    if not isinstance(value, origin):
        return False
    args = get_args(expected)
    if not args:
        return True
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return len(args) == len(items) and all(
            matches(a, v) for a, v in zip(args, items, strict=True)
        )
    return all(matches(args[0], v) for v in items)


#: Parameters that seed a random generator: numpy's take only integers >= 0, so a negative one is
#: refused when the specification is read, for every class that has one.
SEED_PARAMETERS = frozenset({"seed", "random_state"})


def check_seed(what: str, value: object) -> None:
    """Refuse a seed numpy's generators cannot take (a negative integer), naming ``what``.

    Raises:
        ConfigError: ``value`` is an integer below 0.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise ConfigError(f"{what} must be an integer >= 0 (a random seed), got {value}")


_WORDS = {
    bool: "a bool (True or False)",
    int: "an integer",
    float: "a number",
    str: "a string",
    type(None): "None",
}


def describe(expected: Any) -> str:
    """A type as a user reads it: ``a number``, ``one of 'a', 'b'``, ``an integer or None``."""
    origin = get_origin(expected)
    if origin is Literal:
        return "one of " + ", ".join(repr(c) for c in get_args(expected))
    if origin is Union or origin is types.UnionType:
        return " or ".join(describe(arg) for arg in get_args(expected))
    if expected is None:
        return "None"
    if expected in _WORDS:
        return _WORDS[expected]
    if isinstance(expected, type):
        return f"a {expected.__name__}"
    return str(expected).replace("typing.", "")


class Registry(Generic[T]):
    """A registry of classes (or other factories) by name.

    Args:
        kind: What the entries are, for messages (``selector``, ``index kind``).
        key: The class attribute that holds an entry's name (``name`` unless told).

    Example:
        >>> from dataclasses import dataclass
        >>> widgets: Registry[object] = Registry("widget")
        >>> @widgets.register
        ... @dataclass(frozen=True)
        ... class Knob:
        ...     name = "knob"  # not annotated: a class attribute, not a field
        ...     turns: float = 1.0
        >>> widgets.parse("knob(turns=2)")
        Knob(turns=2)
        >>> widgets.parse("knob(turns=yes)")
        Traceback (most recent call last):
        ...
        covrag.errors.ConfigError: bad parameters for widget 'knob': turns must be a number, ...
    """

    def __init__(self, kind: str, *, key: str = "name") -> None:
        self.kind = kind
        self.key = key
        self._entries: dict[str, Callable[..., T]] = {}

    def register(self, factory: F) -> F:
        """Register ``factory`` (a class) under the name it carries in its own ``key`` attribute.

        Usable as a class decorator. The name must be set on the class itself, not inherited,
        so a subclass never silently takes its parent's entry.
        """
        name = vars(factory).get(self.key) if hasattr(factory, "__dict__") else None
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"{self.kind} {getattr(factory, '__name__', factory)!r} must set its own "
                f"{self.key!r} (a non-empty string) to be registered"
            )
        if name in self._entries:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = factory
        return factory

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            ) from None

    def check(self, name: str, params: dict[str, Any]) -> None:
        """Raise ConfigError unless every parameter is known to ``name`` and of its type."""
        expected = parameter_types(self.get(name))
        for param, value in params.items():
            if param not in expected:
                if "**" in expected:
                    continue
                known = ", ".join(p for p in expected if p != "**") or "none"
                raise ConfigError(
                    f"bad parameters for {self.kind} {name!r}: unknown parameter {param!r} "
                    f"(known: {known})"
                )
            if not matches(expected[param], value):
                raise ConfigError(
                    f"bad parameters for {self.kind} {name!r}: {param} must be "
                    f"{describe(expected[param])}, got {value!r}"
                )
            if param in SEED_PARAMETERS:
                check_seed(f"bad parameters for {self.kind} {name!r}: {param}", value)

    def parse(self, spec: str, **overrides: Any) -> T:
        """Build the object a specification names, e.g. ``parse("mmr(lam=0.7)")``.

        Raises:
            ConfigError: an unknown name (with suggestions), an unknown parameter, a value of
                the wrong type, or one the class itself rejects.
        """
        name, params = split_spec(spec)
        params.update(overrides)
        factory = self.get(name)
        self.check(name, params)
        try:
            return factory(**params)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad parameters for {self.kind} {name!r}: {exc}") from exc
