from __future__ import annotations

from dataclasses import dataclass

import pytest

from covrag.errors import ConfigError
from covrag.registry import Registry, spec_of, split_spec


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

    @registry.register("knob")
    @dataclass(frozen=True)
    class Knob:
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
        registry.register("knob")(Knob)
