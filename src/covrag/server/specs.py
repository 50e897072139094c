"""What a request may choose: the operator's closed lists of selector and coverage specs.

A client never names a file, a folder or a model: every parameter that does (``model=``, and any
parameter that would load another model, such as a cross-encoder's ``batch_size``) is set by the
operator, in the specs given to ``covrag serve --selectors / --coverages``. A request names one of
those specs and may change only the parameters listed in :data:`SELECTOR_TUNABLES` and
:data:`ESTIMATOR_TUNABLES` (scores, thresholds, seeds, switches), each type-checked by the
registry and kept within bounds, so no value can load anything, run for an unbounded time or
allocate without limit. Anything else is a :class:`~covrag.errors.ConfigError` that names the
parameter but never echoes the value a client gave for an operator's parameter, so the answer is
the same whether a path exists or not. Parameters a new class adds are the operator's until they
are listed here.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from covrag.errors import ConfigError
from covrag.registry import Registry, parameter_types, split_spec
from covrag.schema.http import MAX_PASSAGES
from covrag.selectors.exclusion import EXCLUDE_MODES
from covrag.selectors.facility import SIMILARITIES
from covrag.selectors.optimize import OPTIMIZERS

T = TypeVar("T")


@dataclass(frozen=True)
class Tunable:
    """How a request may set one parameter (its type is checked by the registry first).

    A number must be finite and lie in ``[low, high]``; a string must be one of ``choices``;
    a bool or None (where the parameter's type allows it) needs nothing more.
    """

    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def problem(self, param: str, value: Any) -> str | None:
        """Why ``value`` is refused for ``param``, or None when it is fine."""
        if value is None or isinstance(value, bool):
            return None
        if isinstance(value, str):
            if value in self.choices:
                return None
            return f"{param} must be one of {', '.join(map(repr, self.choices))}, got {value!r}"
        if isinstance(value, int | float) and self.low is not None and self.high is not None:
            if math.isfinite(value) and self.low <= value <= self.high:
                return None
            return f"{param} must lie in [{_num(self.low)}, {_num(self.high)}], got {value!r}"
        return f"{param} cannot be set to {value!r}"

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.low is not None and self.high is not None:
            return f"in [{_num(self.low)}, {_num(self.high)}]"
        return "True or False"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


_FLAG = Tunable()
_SEED = Tunable(0, 2**32 - 1)
_PENALTY = Tunable(0, 1e6)
_EXCLUDE = Tunable(choices=EXCLUDE_MODES)
_OPTIMIZER = Tunable(choices=tuple(OPTIMIZERS))
_CLUSTERS = Tunable(1, MAX_PASSAGES)

#: Selector parameters a request may set, by selector. Everything else is the operator's
#: (``lmvu``'s model, ``exact``'s time limit).
SELECTOR_TUNABLES: dict[str, dict[str, Tunable]] = {
    "mmr": {"lam": Tunable(0, 1)},
    "random": {"seed": _SEED},
    "greedy-coverage": {"cost_aware": _FLAG, "exclude": _EXCLUDE, "penalty": _PENALTY},
    "expected-coverage": {
        "power": Tunable(0.001, 100),
        "cost_aware": _FLAG,
        "exclude": _EXCLUDE,
        "penalty": _PENALTY,
        "optimizer": _OPTIMIZER,
    },
    "facility-location": {
        "cost_aware": _FLAG,
        "similarity": Tunable(choices=SIMILARITIES),
        "optimizer": _OPTIMIZER,
    },
    "cluster": {"n_clusters": _CLUSTERS, "random_state": _SEED},
    "mmkp": {
        "cap": Tunable(1, MAX_PASSAGES),
        "fill": _FLAG,
        "cost_aware": _FLAG,
        "n_clusters": _CLUSTERS,
        "random_state": _SEED,
    },
    "exact": {"exclude": _EXCLUDE, "penalty": _PENALTY, "strict": _FLAG},
}

#: Estimator parameters a request may set. ``model``, ``batch_size`` and ``max_length`` are the
#: operator's: each distinct value loads (and keeps) another model.
ESTIMATOR_TUNABLES: dict[str, dict[str, Tunable]] = {
    "embedding": {"threshold": Tunable(0, 1)},
    "cross-encoder": {"threshold": Tunable(0, 1)},
}

#: Named selector variants offered by default, besides every selector with its defaults; and
#: the spec offered for a selector whose registered defaults do not suit a shared server.
SELECTOR_VARIANTS = (
    "mmr(lam=0.3)",
    "mmr(lam=0.7)",
    "greedy-coverage(cost_aware=True)",
    "expected-coverage(cost_aware=True)",
)
SERVER_DEFAULTS = {"exact": "exact(time_limit=10.0)"}


def default_selector_specs(registry: Registry[Any]) -> tuple[str, ...]:
    """Every registered selector with its default parameters, then :data:`SELECTOR_VARIANTS`."""
    return (*(SERVER_DEFAULTS.get(n, n) for n in registry.names()), *SELECTOR_VARIANTS)


_MISSING = object()


def _same(a: Any, b: Any) -> bool:
    """Equal values of compatible types: ``10 == 10.0``, but ``True`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


@dataclass(frozen=True)
class _Entry(Generic[T]):
    spec: str  # canonical, as listed in the schema
    name: str
    params: dict[str, Any]  # as the operator wrote them
    obj: T

    def has(self, params: Mapping[str, Any]) -> bool:
        return all(_same(getattr(self.obj, p, _MISSING), v) for p, v in params.items())


class SpecMenu(Generic[T]):
    """The specs of one registry that requests may choose, and the parameters they may tune.

    Args:
        registry: Selectors or coverage estimators.
        specs: The operator's specs (duplicates, also equivalent ones, are listed once); each is
            built here, so an unknown name or a bad parameter fails at start-up.
        tunables: Per name, the parameters a request may set.
    """

    def __init__(
        self,
        registry: Registry[T],
        specs: Sequence[str],
        tunables: Mapping[str, Mapping[str, Tunable]],
    ) -> None:
        self.registry = registry
        self.tunables = tunables
        self.entries: list[_Entry[T]] = []
        for spec in specs:
            obj = registry.parse(spec)
            if repr(obj) not in self.specs:
                name, params = split_spec(spec)
                self.entries.append(_Entry(repr(obj), name, params, obj))

    @property
    def specs(self) -> list[str]:
        return [e.spec for e in self.entries]

    def resolve(self, spec: str) -> T:
        """The object a request's ``spec`` names, built afresh.

        Raises:
            ConfigError: a name not offered, an operator's parameter, or a tunable one of the
                wrong type or out of bounds.
        """
        name, params = split_spec(spec)
        kind = self.registry.kind
        entries = [e for e in self.entries if e.name == name]
        if not entries:
            offered = sorted({e.name for e in self.entries})
            close = difflib.get_close_matches(name, offered, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"{kind} {name!r} is not offered by this server{hint} "
                f"(offered: {', '.join(self.specs)})"
            )
        exact = next((e for e in entries if e.has(params)), None)
        if exact is not None:
            return self.registry.parse(exact.name, **exact.params)
        tunable = self.tunables.get(name, {})
        allowed = ", ".join(tunable) or "none"
        expected = parameter_types(self.registry.get(name))
        unknown = [p for p in params if p not in expected and "**" not in expected]
        if unknown:
            raise ConfigError(
                f"bad parameters for {kind} {name!r}: unknown parameter {unknown[0]!r} "
                f"(a request may set: {allowed})"
            )
        fixed = {p: v for p, v in params.items() if p not in tunable}
        tuned = {p: v for p, v in params.items() if p in tunable}
        base = next((e for e in entries if e.has(fixed)), None)
        if base is None:
            unmatched = [p for p in fixed if not any(e.has({p: fixed[p]}) for e in entries)]
            param = (unmatched or list(fixed))[0]
            raise ConfigError(
                f"parameter {param!r} of {kind} {name!r} is set by the server's operator, "
                f"not by a request (a request may set: {allowed})"
            )
        self.registry.check(name, tuned)
        for param, value in tuned.items():
            problem = tunable[param].problem(param, value)
            if problem is not None:
                raise ConfigError(f"bad parameters for {kind} {name!r}: {problem}")
        return self.registry.parse(name, **{**base.params, **tuned})

    def json_schema(self, what: str) -> dict[str, Any]:
        """The OpenAPI schema of a request field that names one of these specs (or null)."""
        tuned = {
            name: self.tunables[name]
            for name in dict.fromkeys(e.name for e in self.entries)
            if self.tunables.get(name)
        }
        choices: list[dict[str, Any]] = [{"type": "string", "enum": self.specs}]
        if tuned:
            pattern = "^(" + "|".join(tuned) + r")\(.*\)$"
            choices.append({"type": "string", "pattern": pattern, "maxLength": 200})
        notes = "; ".join(
            f"{name}: " + ", ".join(f"{p} {t.describe()}" for p, t in params.items())
            for name, params in tuned.items()
        )
        description = (
            f"{what}: one of the listed specs (the server's default when unset)"
            + (f", or one with these parameters changed: {notes}" if notes else "")
            + ". Models and paths are the server operator's, never a request's."
        )
        return {"anyOf": [*choices, {"type": "null"}], "default": None, "description": description}
