from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from covrag.coverage import ESTIMATORS
from covrag.errors import ConfigError
from covrag.evaluation import MEASURES
from covrag.llm import BACKENDS
from covrag.plan import ASPECT_SOURCES
from covrag.registry import Registry, spec_of, split_spec
from covrag.retrieve import INDEX_KINDS
from covrag.selectors import SELECTORS, parse_selector


def test_split_spec_parses_literals_and_bare_words() -> None:
    assert split_spec("mmr") == ("mmr", {})
    assert split_spec("mmr(lam=0.7)") == ("mmr", {"lam": 0.7})
    assert split_spec("x(a=1, b='s', c=None, d=True, e=word)") == (
        "x",
        {"a": 1, "b": "s", "c": None, "d": True, "e": "word"},
    )


@pytest.mark.parametrize("spec", ["mmr(0.7)", "mmr(lam=0.7", "mmr(lam=[1,)", "mmr(lam=f(1))", ""])
def test_split_spec_rejects_malformed(spec: str) -> None:
    with pytest.raises(ConfigError):
        split_spec(spec)


def test_registry_round_trips_repr_and_suggests_names() -> None:
    registry: Registry[object] = Registry("widget")

    @registry.register
    @dataclass(frozen=True)
    class Knob:
        name: ClassVar[str] = "knob"
        turns: float = 1.0
        label: str = "x"

        def __repr__(self) -> str:
            return spec_of(self, "knob")

    built = registry.parse("knob(turns=2.5)")
    assert repr(built) == "knob(turns=2.5)"
    assert repr(registry.parse("knob(turns=1.0, label='y')")) == "knob(label='y')"
    assert registry.parse(repr(built)) == built
    with pytest.raises(ConfigError, match="did you mean knob"):
        registry.parse("knobb")
    with pytest.raises(ConfigError, match="bad parameters"):
        registry.parse("knob(colour=1)")
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(Knob)


@dataclass(frozen=True)
class Dial:
    """Every kind of parameter the registry checks."""

    name: ClassVar[str] = "dial"
    flag: bool = False
    count: int = 1
    ratio: float = 0.5
    label: str = "x"
    mode: Literal["fast", "exact"] = "fast"
    limit: int | None = None
    names: tuple[str, ...] = ()


@pytest.fixture
def dials() -> Registry[Dial]:
    registry: Registry[Dial] = Registry("dial kind")
    registry.register(Dial)
    return registry


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("dial(flag=True)", Dial(flag=True)),
        ("dial(count=3)", Dial(count=3)),
        ("dial(ratio=2)", Dial(ratio=2)),  # an int is a float
        ("dial(ratio=0.25)", Dial(ratio=0.25)),
        ("dial(label=word)", Dial(label="word")),  # a bare word is a string
        ("dial(mode='exact')", Dial(mode="exact")),
        ("dial(limit=None)", Dial(limit=None)),
        ("dial(limit=5)", Dial(limit=5)),
        ("dial(names=('a', 'b'))", Dial(names=("a", "b"))),
    ],
)
def test_parse_accepts_values_of_the_declared_types(
    dials: Registry[Dial], spec: str, expected: Dial
) -> None:
    assert dials.parse(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("dial(flag=no)", "flag must be a bool \\(True or False\\), got 'no'"),
        ("dial(flag=1)", "flag must be a bool \\(True or False\\), got 1"),
        ("dial(count=True)", "count must be an integer, got True"),  # a bool is not an int
        ("dial(count=2.5)", "count must be an integer, got 2.5"),
        ("dial(ratio=False)", "ratio must be a number, got False"),
        ("dial(ratio='0.5')", "ratio must be a number, got '0.5'"),
        ("dial(label=3)", "label must be a string, got 3"),
        ("dial(mode=slow)", "mode must be one of 'fast', 'exact', got 'slow'"),
        ("dial(limit=many)", "limit must be an integer or None, got 'many'"),
        ("dial(names=('a', 1))", "names must be tuple\\[str, \\.\\.\\.\\]"),
        ("dial(names=['a'])", "names must be tuple\\[str, \\.\\.\\.\\]"),
        ("dial(colour=1)", "unknown parameter 'colour' \\(known: flag, count, ratio,"),
    ],
)
def test_parse_rejects_wrong_types_naming_parameter_type_and_value(
    dials: Registry[Dial], spec: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"bad parameters for dial kind 'dial': {message}"):
        dials.parse(spec)


def test_overrides_are_checked_too(dials: Registry[Dial]) -> None:
    assert dials.parse("dial", count=4) == Dial(count=4)
    with pytest.raises(ConfigError, match="count must be an integer, got '4'"):
        dials.parse("dial", count="4")


def test_cost_aware_no_is_an_error_not_a_truthy_string() -> None:
    message = "cost_aware must be a bool \\(True or False\\), got 'no'"
    with pytest.raises(ConfigError, match=message):
        parse_selector("greedy-coverage(cost_aware=no)")
    assert repr(parse_selector("greedy-coverage(cost_aware=False)")) == "greedy-coverage"
    with pytest.raises(ConfigError, match="lam must be a number, got True"):
        parse_selector("mmr(lam=True)")
    with pytest.raises(ConfigError, match="n_clusters must be an integer or None, got 'auto'"):
        parse_selector("cluster(n_clusters=auto)")


def test_plain_classes_are_checked_by_their_init_signature() -> None:
    registry: Registry[object] = Registry("gadget")

    @registry.register
    class Gadget:
        name = "gadget"

        def __init__(self, size: int = 1, *, tag: str | None = None) -> None:
            self.size, self.tag = size, tag

    assert registry.parse("gadget(size=2, tag=t)").tag == "t"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="size must be an integer, got 'big'"):
        registry.parse("gadget(size=big)")


def test_the_name_is_read_from_the_class_once() -> None:
    registry: Registry[object] = Registry("widget")

    @dataclass(frozen=True)
    class Nameless:
        pass

    with pytest.raises(ConfigError, match="must set its own 'name'"):
        registry.register(Nameless)

    @registry.register
    @dataclass(frozen=True)
    class Parent:
        name: ClassVar[str] = "parent"

    @dataclass(frozen=True)
    class Child(Parent):  # inherits the name: registering it would shadow nothing, so refuse
        pass

    with pytest.raises(ConfigError, match="must set its own 'name'"):
        registry.register(Child)
    assert registry.names() == ["parent"]
    keyed: Registry[object] = Registry("engine", key="kind")

    class Engine:
        kind = "v8"

    assert keyed.register(Engine) is Engine and keyed.get("v8") is Engine


@pytest.mark.parametrize(
    "registry", [SELECTORS, ESTIMATORS, MEASURES, BACKENDS, INDEX_KINDS, ASPECT_SOURCES]
)
def test_every_registered_class_carries_the_name_it_is_registered_under(
    registry: Registry[object],
) -> None:
    assert len(registry) > 0
    for name in registry:
        assert vars(registry.get(name))[registry.key] == name
