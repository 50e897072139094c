"""Every entry point's defaults come from one resolved policy, as the table of
:mod:`covrag.pipeline.policy` documents them (issue 48)."""

from __future__ import annotations

import dataclasses

import pytest

from covrag.pipeline import policy as presets
from covrag.pipeline.config import AskConfig
from covrag.pipeline.policy import LABEL_FREE_SELECTOR, ContextPolicy

#: preset -> (k, relevance, floor, gate), as the table in the module's docstring writes them.
DOCUMENTED = {
    "SELECT": (10, "dense", 0.0, 0.0),
    "SELECT_BATCH": (10, "dense", 0.0, 0.0),
    "SERVER_SELECT": (10, "dense", 0.0, 0.0),
    "INTEGRATIONS": (5, "auto", 0.0, 0.0),
    "ASK": (12, "sentences", 0.5, 0.5),
    "ANSWER": (None, "order", 0.5, 0.5),
    "BENCH": (10, "dense", 0.0, 0.0),
}


def _table_rows() -> dict[str, str]:
    doc = presets.__doc__ or ""
    rows = [line for line in doc.splitlines() if line.startswith("| :data:`")]
    return {row.split("`")[1]: row for row in rows}


def test_the_table_lists_every_preset() -> None:
    assert set(_table_rows()) == set(DOCUMENTED)


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_each_preset_is_what_the_table_says(name: str) -> None:
    policy = getattr(presets, name)
    k, relevance, floor, gate = DOCUMENTED[name]
    assert (policy.k, policy.relevance, policy.floor, policy.gate) == (k, relevance, floor, gate)
    row = _table_rows()[name]
    if floor or gate:
        assert f"{floor} / {gate}" in row or "as ask" in row
        # a gate read by document says so (ANSWER's "as ask" carries ASK's)
        assert ("(document)" in row) == (policy.gate_scope == "document" and "as ask" not in row)
    else:
        assert row.rstrip("| ").endswith("none")


def test_ask_builds_its_policy_from_the_ask_preset() -> None:
    assert AskConfig().policy() == presets.ASK


def test_every_context_field_of_ask_config_is_the_ask_presets() -> None:
    from covrag.pipeline.config import CONTEXT_FIELDS
    from covrag.pipeline.policy import policy_field
    from covrag.schema.writer import WRITER_FIELDS

    specs = {f.name: f for f in dataclasses.fields(AskConfig)}
    # every AskConfig field that a policy also has is declared a context field (the writer's
    # max_tokens is the writer's), so adding one cannot leave AskConfig and the policy apart
    shared = {name for name in specs if name not in WRITER_FIELDS and _is_policy_field(name)}
    assert shared == set(CONTEXT_FIELDS)
    for name in CONTEXT_FIELDS:
        assert specs[name].default == presets.ASK.value(name), name
        assert specs[name].metadata["help"] == policy_field(name).metadata["help"], name


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("subquestions", 7),
        ("decompose_style", "points"),
        ("answers", 2),
        ("k", 3),
        ("selector", "greedy-coverage"),
        ("coverage", "embedding"),
        ("floor", 0.25),
        ("floor_question", False),
        ("gate", 0.0),
        ("gate_margin", 0.3),
        ("gate_scope", "document"),
        ("filters", "passages"),
        ("relevance", "order"),
        ("names", False),
        ("pool_aspects", 4),
        ("outline", True),
    ],
)
def test_ask_config_policy_round_trips_each_context_field(name: str, value: object) -> None:
    from covrag.pipeline.config import CONTEXT_FIELDS

    assert name in CONTEXT_FIELDS and value != presets.ASK.value(name)
    policy = AskConfig(**{name: value}).policy()  # type: ignore[arg-type]
    assert policy.value(name) == value
    assert policy == presets.ASK.with_values(**{name: value})


def test_every_context_field_is_round_tripped_above() -> None:
    from covrag.pipeline.config import CONTEXT_FIELDS

    marks = test_ask_config_policy_round_trips_each_context_field.pytestmark  # type: ignore[attr-defined]
    (parametrized,) = [m for m in marks if m.name == "parametrize"]
    assert {name for name, _ in parametrized.args[1]} == set(CONTEXT_FIELDS)


def test_a_policy_field_is_the_policys_or_its_aspect_options() -> None:
    from covrag.errors import ConfigError
    from covrag.pipeline.policy import policy_field

    assert policy_field("floor").name == "floor"
    assert policy_field("subquestions").name == "subquestions"
    with pytest.raises(ConfigError, match="no field"):
        policy_field("passes")
    with pytest.raises(ConfigError, match="no field"):
        presets.ASK.with_values(passes=1)


def test_ask_and_the_answer_requests_read_one_set_of_numbers() -> None:
    from covrag.schema.defaults import ASK_DEFAULTS

    for name, value in dataclasses.asdict(ASK_DEFAULTS).items():
        assert presets.ASK.value(name) == value, name


def _is_policy_field(name: str) -> bool:
    from covrag.errors import ConfigError
    from covrag.pipeline.policy import policy_field

    try:
        policy_field(name)
    except ConfigError:
        return False
    return True


def test_the_label_free_default_is_resolved_once_for_the_server_and_the_integrations() -> None:
    for preset in (presets.SERVER_SELECT, presets.INTEGRATIONS):
        free = preset.resolve(aspects_given=False, selector_named=False)
        assert free.selector == LABEL_FREE_SELECTOR
        assert preset.resolve(aspects_given=True, selector_named=False) == preset
        assert preset.resolve(aspects_given=False, selector_named=True) == preset
    assert presets.SELECT.resolve(aspects_given=False, selector_named=False) == presets.SELECT


def test_the_server_and_the_integrations_choose_label_free_without_aspects() -> None:
    from covrag.integrations import CoverageChoice
    from covrag.schema.http import SelectRequest
    from covrag.server.config import ServerConfig
    from covrag.server.service import Menus, build_job

    config = ServerConfig()
    request = SelectRequest(query="q", passages=[{"id": "p", "text": "t"}])
    job = build_job(request, config, Menus.of(config))
    assert repr(job.policy.selector) == repr(CoverageChoice()._selector(None))
    assert "facility-location" in repr(job.policy.selector)


def test_a_batch_selection_refuses_a_floor() -> None:
    from covrag.errors import ConfigError
    from covrag.pipeline.usecases import select_topics

    with pytest.raises(ConfigError, match="floor"):
        select_topics([], dataclasses.replace(presets.SELECT_BATCH, floor=0.5))


def test_a_policy_is_a_value() -> None:
    assert ContextPolicy() == presets.SELECT
