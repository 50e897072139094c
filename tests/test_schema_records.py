"""One schema per record that crosses a file or the wire (issue 33, item 4): the generation
block and its costs, the index manifest, the model cards and the server's DTOs. Each record
round-trips through its model, is checked when written and when read (a bad field is named with
its file), and the files written before these schemas (``tests/data/format_v1``, the shipped
model cards) still read."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from covrag.cli import main
from covrag.errors import DataError
from covrag.llm.cost import LLMCost
from covrag.schema._base import read_model
from covrag.schema.ask import AskTopic
from covrag.schema.cards import (
    CoverageModelCard,
    CoverageTrainingCard,
    CoverCard,
    PlannerDataCard,
    PlannerTrainCard,
    SamePointCard,
    read_card,
    write_card,
)
from covrag.schema.generation import GenerationOut, LLMCostOut, StageCostOut
from covrag.schema.index import IndexManifest
from covrag.schema.runfile import RunFileModel, dump
from covrag_lab.cli import main as lab_main

OLD = Path(__file__).parent / "data" / "format_v1"
MODELS = Path(str(resources.files("covrag") / "models"))


def _ask_run() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((OLD / "ask_run.json").read_text(encoding="utf-8"))
    return data


# -- generation, drafts, critiques, costs --------------------------------------------------


def test_an_old_ask_run_file_reads_and_writes_back_unchanged() -> None:
    data = _ask_run()
    (raw,) = data["topics"]
    topic = read_model(AskTopic, raw, prefix="topics[0]")
    topic.check("topics[0]")
    assert dump(topic) == raw  # every block, the generation and costs included, round-trips
    assert isinstance(topic.generation, GenerationOut)
    assert [d.cost for d in topic.generation.drafts] == [
        read_model(LLMCostOut, d["cost"]) for d in raw["generation"]["drafts"]
    ]
    assert set(topic.costs) == {"plan", "retrieve", "estimate", "select", "generate"}
    assert all(isinstance(c, StageCostOut) for c in topic.costs.values())
    read_model(RunFileModel, data)


def test_an_old_ask_run_file_renders_and_its_drafts_are_read(tmp_path: Path) -> None:
    from covrag.evaluation.answers_io import load_variants

    out = tmp_path / "report.html"
    assert main(["report", str(OLD / "ask_run.json"), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "rejected: no sentence of the rewrite is supported" in page
    variants = load_variants([OLD / "ask_run.json"], all_passes=True)
    drafts = _ask_run()["topics"][0]["generation"]["drafts"]
    assert len(variants) == len(drafts)


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("generation", "drafts", 0, "cost", "calls"), "many", "generation.drafts[0].cost.calls"),
        (("generation", "critiques", 0, "pointers"), ["c3"], "generation.critiques[0].pointers"),
        (("generation", "drafts", 1, "fallback"), "shrug", "generation.drafts[1].fallback"),
        (("costs", "estimate", "pairs_scored"), "x", "costs.estimate.pairs_scored"),
    ],
)
def test_a_bad_generation_field_is_named_and_the_report_exits_2(
    tmp_path: Path, capsys: Any, where: tuple[Any, ...], value: Any, field: str
) -> None:
    data = _ask_run()
    node = data["topics"][0]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    run = tmp_path / "run.json"
    run.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "report.html"
    assert main(["report", str(run), "-o", str(out)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(run) in err and f"field 'topics[0].{field}'" in err
    assert not out.exists()
    with pytest.raises(DataError, match=re.escape(f"field 'topics[0].{field}'")):
        read_model(AskTopic, data["topics"][0], path=str(run), prefix="topics[0]")


def test_costs_are_records_built_validated() -> None:
    cost = LLMCost(calls=2, cached_calls=1, prompt_tokens=30, completion_tokens=7, seconds=1.23456)
    record = LLMCostOut.of(cost)
    assert record.seconds == 1.235 and cost.as_dict() == record.model_dump()
    assert read_model(LLMCostOut, json.loads(record.model_dump_json())) == record
    stage = StageCostOut(seconds=1.5, cpu_seconds=0.5, llm=record, pairs_scored=12)
    assert read_model(StageCostOut, json.loads(stage.model_dump_json())) == stage
    with pytest.raises(ValidationError):
        StageCostOut(seconds="slow")  # type: ignore[arg-type]
    # the first ask files had no cpu_seconds, pairs_scored or reused_prompt_tokens
    old = read_model(StageCostOut, {"seconds": 1.0, "llm": {**cost.as_dict()}})
    assert old.cpu_seconds == 0.0 and old.pairs_scored == 0


def test_the_served_draft_is_a_projection_of_the_file_draft() -> None:
    from covrag.schema.generation import DraftOut
    from covrag.schema.http_answer import AnswerDraftOut

    raw = _ask_run()["topics"][0]["generation"]["drafts"][0]
    draft = read_model(DraftOut, raw)
    served = AnswerDraftOut.of_record(draft).model_dump(mode="json", exclude_unset=True)
    assert list(served) == [
        "sentences", "dropped", "invalid_citations", "problems", "fallback", "llm"
    ]  # fmt: skip
    assert served["llm"] == raw["cost"] and served["problems"] == raw["problems"]
    assert served["invalid_citations"] == raw["invalid_citations"]
    assert served["sentences"] == raw["sentences"]


# -- the index manifest --------------------------------------------------------------------


def test_an_old_index_loads_and_its_manifest_round_trips(tmp_path: Path) -> None:
    from covrag.retrieve import BM25Retriever
    from covrag.retrieve.store import MANIFEST, read_manifest

    index = tmp_path / "index"
    shutil.copytree(OLD / "bm25_index", index)
    manifest = read_manifest(index, "bm25")
    assert manifest.count == 5 and manifest.param("k1") == 1.5
    assert manifest.to_json() == (OLD / "bm25_index" / MANIFEST).read_text(encoding="utf-8")
    assert BM25Retriever.load(index).search("uniforms", k=1)
    record = read_model(IndexManifest, json.loads(manifest.to_json()))
    assert record.kind == "bm25" and record.params == {"k1": 1.5, "b": 0.75, "stopwords": "en"}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"count": "five"}, "count", "must be a non-negative integer"),
        ({"count": True}, "count", "must be a non-negative integer"),
        ({"kind": 3}, "kind", "must be a string"),
        ({"params": [1]}, "params", "must be an object"),
        ({"format": "other"}, "format", "not a covrag index manifest"),
        ({"version": 2}, "version", "this covrag reads version 1"),
    ],
)
def test_a_bad_manifest_field_is_named_and_search_exits_2(
    tmp_path: Path, capsys: Any, change: dict[str, Any], field: str, message: str
) -> None:
    index = tmp_path / "index"
    shutil.copytree(OLD / "bm25_index", index)
    manifest = index / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), **change}))
    before = sorted(p.name for p in index.rglob("*"))
    assert main(["search", "--index", str(index), "uniforms"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(manifest) in err and f"field '{field}'" in err and message in err
    assert sorted(p.name for p in index.rglob("*")) == before


def test_a_manifest_that_would_not_read_is_never_written() -> None:
    from covrag.retrieve.store import Manifest

    with pytest.raises(DataError, match="field 'count'"):
        Manifest("bm25", -1).to_json()


# -- model cards ---------------------------------------------------------------------------


def test_the_shipped_cards_load() -> None:
    coverage = CoverageModelCard.read(MODELS / "coverage-minilm")
    assert coverage is not None and coverage.threshold == 0.8 and len(coverage.stages) == 2
    assert coverage.stages[0].train_pairs["perspectrum:train"] == 16150
    assert coverage.stages[0].model_extra == {"command": coverage.stages[0].model_extra["command"]}
    for name, steps in (("same-point-minilm", 250), ("same-point-mpnet", 25)):
        same_point = SamePointCard.read(MODELS / name)
        assert same_point is not None and same_point.steps == steps, name
        assert same_point.model_extra and "format" in same_point.model_extra


def _cards() -> list[Any]:
    return [
        CoverageTrainingCard(
            config={"epochs": 1.0}, train_pairs={"a": 3}, steps=2, seconds=1.5, truncated_pairs=0
        ),
        SamePointCard(config={}, train_topics={"a": 1}, steps=2, seconds=0.5, losses=[1.25]),
        CoverCard(
            config={}, examples={"a": {"all": 8}}, steps=2, seconds=0.5, loss_first=2.0,
            loss_last=1.0, notes=["n"],
        ),
    ]  # fmt: skip


@pytest.mark.parametrize("card", _cards(), ids=lambda c: type(c).__name__)
def test_a_card_round_trips_as_its_dataclass_wrote_it(tmp_path: Path, card: Any) -> None:
    card.notes.append("resumed")
    card.save(tmp_path)
    text = (tmp_path / "training_card.json").read_text(encoding="utf-8")
    assert text == json.dumps(card.model_dump(), indent=2) + "\n"
    assert list(json.loads(text)) == list(type(card).model_fields)  # every field, in order
    assert type(card).read(tmp_path) == card


def test_a_card_that_breaks_its_schema_is_not_written(tmp_path: Path) -> None:
    card = _cards()[0]
    card.save(tmp_path)
    before = (tmp_path / "training_card.json").read_text(encoding="utf-8")
    with pytest.raises(ValidationError):
        card.threshold = "high"
    card.train_pairs["b"] = "many"  # a mutation no assignment checks
    with pytest.raises(DataError, match=r"training_card.json, field 'train_pairs.b'"):
        card.save(tmp_path)
    assert (tmp_path / "training_card.json").read_text(encoding="utf-8") == before


def test_a_bad_coverage_card_field_is_named_when_the_estimator_reads_it(tmp_path: Path) -> None:
    from covrag.coverage import CrossEncoderCoverage

    card = json.loads((MODELS / "coverage-minilm" / "training_card.json").read_text())
    card["threshold"] = "high"
    (tmp_path / "training_card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match=r"training_card.json, field 'threshold'"):
        CrossEncoderCoverage(model=str(tmp_path)).resolved_threshold()
    card["threshold"] = 0.7
    (tmp_path / "training_card.json").write_text(json.dumps(card))
    assert CrossEncoderCoverage(model=str(tmp_path)).resolved_threshold() == 0.7


def test_planner_cards_are_checked_on_write_and_read(tmp_path: Path, capsys: Any) -> None:
    card: dict[str, Any] = {
        "base_model": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "config": {"seed": 0},
        "data": "data",
        "sft_examples": 3,
        "dpo_pairs": 1,
        "threads": 2,
        "versions": {"torch": "2.13.0"},
        "sft": {"seconds": 1.0},
        "dpo": None,
    }
    write_card(PlannerTrainCard, card, tmp_path / "card.json")
    assert read_card(PlannerTrainCard, tmp_path / "card.json").model_dump() == card
    with pytest.raises(DataError, match="field 'sft_examples'"):
        write_card(PlannerTrainCard, {**card, "sft_examples": "three"}, tmp_path / "other.json")
    assert not (tmp_path / "other.json").exists()
    (tmp_path / "card.json").write_text(json.dumps({**card, "base_model": None}))
    args = ["eval-planner", "--datasets", "argkp2021:dev", "--trained", str(tmp_path)]
    assert lab_main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "card.json" in err and "field 'base_model'" in err


def test_the_planner_data_card_is_its_schema() -> None:
    from covrag_lab.train.planner_data import data_card

    card = data_card([], [], [], teacher="t")
    assert read_model(PlannerDataCard, card).requests == 0
    with pytest.raises(DataError, match=r"field 'failed\[0\]\.request_id': must be a string"):
        read_model(PlannerDataCard, {**card, "failed": [{"request_id": 1}]})


# -- server DTOs ---------------------------------------------------------------------------


def test_the_server_dtos_live_in_schema_and_server_keeps_the_routing() -> None:
    server = Path(__file__).parents[1] / "src" / "covrag" / "server"
    for path in server.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "(BaseModel)" not in source and "(Strict)" not in source, path.name


def test_the_answer_and_plan_defaults_are_asks() -> None:
    from covrag.pipeline import AskConfig
    from covrag.pipeline import config as pipeline_config
    from covrag.schema import http_answer
    from covrag.schema.http_answer import ASK_DEFAULTS, AnswerRequest
    from covrag.schema.http_plan import PlanRequest

    ask = AskConfig()
    for name, value in dataclasses.asdict(ASK_DEFAULTS).items():
        assert getattr(ask, name) == value, name
    for model in (AnswerRequest, PlanRequest):
        for name, info in model.model_fields.items():
            if hasattr(ask, name) and not info.is_required() and name != "k":
                assert info.default == getattr(ask, name), (model.__name__, name)
    for name in ("WriterName", "FeedbackMode", "UnsupportedPolicy", "Fallback"):
        ours = typing.get_args(getattr(http_answer, name))
        assert ours == typing.get_args(getattr(pipeline_config, name)), name


def test_an_answer_request_round_trips() -> None:
    from covrag.schema.http_answer import AnswerRequest

    body = {"question": "Uniforms?", "passages": [{"id": "p1", "text": "They help."}], "k": 1}
    request = AnswerRequest.model_validate(body)
    assert AnswerRequest.model_validate(json.loads(request.model_dump_json())) == request
    with pytest.raises(ValidationError):
        AnswerRequest.model_validate({**body, "passes": "2"})


def test_generation_records_are_deep_copies_of_nothing_shared() -> None:
    """Reading a block twice gives equal, independent records (no shared mutable defaults)."""
    raw = _ask_run()["topics"][0]["generation"]
    first, second = read_model(GenerationOut, raw), read_model(GenerationOut, copy.deepcopy(raw))
    assert first == second
    first.drafts[0].problems.append("x")
    assert first != second


def test_the_shipped_lmvu_model_round_trips_and_a_bad_field_is_named(tmp_path: Path) -> None:
    from covrag.selectors.lmvu.model import LMVUModel, default_model_path

    shipped = default_model_path()
    model = LMVUModel.load(shipped)
    text = json.dumps(model.to_json(**model.card_), indent=2) + "\n"
    assert text == shipped.read_text(encoding="utf-8")
    data = json.loads(text)
    for change, field in (
        ({"mean": ["a", *data["mean"][1:]]}, "mean[0]"),
        ({"coef": data["coef"][:-1]}, "coef"),
        ({"n_pairs": "many"}, "n_pairs"),
        ({"params": {**data["params"], "speed": 3}}, "params"),
    ):
        bad = tmp_path / "lmvu.json"
        bad.write_text(json.dumps({**data, **change}))
        with pytest.raises(DataError, match=re.escape(f"lmvu.json, field '{field}'")):
            LMVUModel.load(bad)


def test_ask_and_the_answer_request_are_built_from_one_writer_policy() -> None:
    from covrag.pipeline import AskConfig
    from covrag.schema.http_answer import AnswerRequest
    from covrag.schema.writer import WRITER, WRITER_FIELDS, WriterPolicy

    ask = {f.name: f for f in dataclasses.fields(AskConfig)}
    for writer_field in dataclasses.fields(WriterPolicy):
        mine = ask[writer_field.name]
        assert (mine.default, mine.metadata) == (writer_field.default, writer_field.metadata)
        assert AnswerRequest.model_fields[writer_field.name].default == writer_field.default
    assert AskConfig().writer_policy() == WRITER
    config = AskConfig(writer="synthesis", passes=2, max_words=None, fallback="refuse")
    assert config.writer_policy() == WriterPolicy(
        writer="synthesis", passes=2, max_words=None, fallback="refuse"
    )
    request = AnswerRequest(
        question="q", passages=[{"id": "p", "text": "t"}], feedback="self", sentences=3
    )
    assert request.writer_policy() == WriterPolicy(feedback="self", sentences=3)
    assert set(WRITER_FIELDS) <= set(AnswerRequest.model_fields)
