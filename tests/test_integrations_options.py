"""The adapters' options are CoverageChoice's: the same names, defaults and help in each."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

from covrag.integrations import DEFAULTS, OPTIONS, CoverageChoice

ADAPTERS = [
    ("langchain_core", "covrag.integrations.langchain", "CoverageCompressor"),
    ("llama_index.core", "covrag.integrations.llama_index", "CoverageNodePostprocessor"),
    ("haystack", "covrag.integrations.haystack", "CoverageRanker"),
]
EXTRAS = {"CoverageCompressor": {"score_key": None}}
"""What an adapter takes beside the options: the framework's input, not the choice."""


def adapter(framework: str, module: str, name: str) -> type:
    pytest.importorskip(framework)
    found: type = getattr(importlib.import_module(module), name)
    return found


def options_of(cls: type) -> dict[str, Any]:
    """An adapter's own options and their defaults: a pydantic model's fields, else the
    ``__init__`` parameters (Haystack's components)."""
    fields = getattr(cls, "model_fields", None)
    if fields is not None:
        framework = {n for base in cls.__mro__[2:] for n in getattr(base, "model_fields", {})}
        return {n: f.default for n, f in fields.items() if n not in framework}
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: p.default for p in parameters}


def test_the_shared_description_is_the_choice_s_fields() -> None:
    fields = {f.name: f for f in dataclasses.fields(CoverageChoice)}
    assert set(OPTIONS) <= set(fields)
    assert dict(DEFAULTS) == {name: fields[name].default for name in OPTIONS}
    assert all(fields[name].metadata["help"] for name in OPTIONS)


@pytest.mark.parametrize(("framework", "module", "name"), ADAPTERS, ids=[a[2] for a in ADAPTERS])
def test_every_adapter_takes_the_options_with_their_defaults_and_help(
    framework: str, module: str, name: str
) -> None:
    cls = adapter(framework, module, name)
    assert options_of(cls) == {**DEFAULTS, **EXTRAS.get(name, {})}
    doc = inspect.getdoc(cls) or ""
    for option in OPTIONS:
        assert f"    {option}: " in doc


@pytest.mark.parametrize(("framework", "module", "name"), ADAPTERS, ids=[a[2] for a in ADAPTERS])
def test_every_adapter_builds_the_choice_its_options_describe(
    framework: str, module: str, name: str
) -> None:
    cls = adapter(framework, module, name)
    given = {"selector": "topk", "coverage": "gold", "aspects": ["a", "b"], "k": 3}
    built = cls(**given, max_tokens=200, relevance="order")._choice
    expected = CoverageChoice(**given, max_tokens=200, relevance="order")
    assert built == expected
