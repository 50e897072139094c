"""The trained planner: its data (requests, judged outlines, SFT and DPO files, card, resume),
its training (TRL on SmolLM2-135M, slow) and its evaluation, through the CLI.

The teacher and judge are a real OpenAI-compatible HTTP server on loopback that answers from
each request's JSON schema (``planner_support``); the planner trained is the packaged SmolLM2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from covrag.errors import MissingExtraError
from covrag.llm.models import smollm2_path
from covrag.schema.plan import OutlineOut
from covrag.types import Aspect, Passage, Topic
from covrag_lab.cli import main
from covrag_lab.cli.eval_planner import planner_specs, route
from covrag_lab.train.planner_data import (
    KINDS,
    data_card,
    make_requests,
    read_examples,
    sft_and_dpo,
)
from covrag_lab.train.planner_files import PlannerExampleLine
from planner_support import fake_llm, schema_server

TINY = ["--depth", "2", "--branching", "2"]


def topic(query_id: str, n: int = 4) -> Topic:
    aspects = tuple(Aspect(f"{query_id}-a{i}", f"Point {i} about cars") for i in range(n))
    return Topic(query_id, "Cities should ban cars", (Passage("p", "text"),), aspects)


def test_requests_take_turns_over_kinds_and_name_their_aspect() -> None:
    requests = make_requests([topic("t1"), topic("t2")], per_topic=2, seed=3)
    assert [r.kind for r in requests] == list(KINDS)
    assert [r.request_id for r in requests] == ["t1#1", "t1#2", "t2#1", "t2#2"]
    include, exclude, skip, focus = (r.query for r in requests)
    assert include.include and not include.exclude and "Make sure to cover" in include.request
    assert exclude.exclude and "Leave out" in exclude.request
    assert skip.exclude and "so skip it" in skip.request and skip.base.startswith("Discuss whether")
    assert focus.include and "Focus on the point that point" in focus.request
    assert requests[1].exclude_ids == [requests[1].aspect_id] and requests[1].include_ids == []
    again = make_requests([topic("t1"), topic("t2")], per_topic=2, seed=3)
    assert [r.aspect_id for r in again] == [r.aspect_id for r in requests]


def outline(score: int, source: str = "llm", tag: str = "") -> OutlineOut:
    return OutlineOut(
        node_ids=["1", "2"],
        texts=[f"one {tag}", f"two {tag}"],
        source=source,
        score=score,
        rationale="because it does",
    )


def example(request_id: str, scores: list[int], random_score: int) -> PlannerExampleLine:
    return PlannerExampleLine(
        request_id=request_id, topic_id="t", kind="exclude", request="Discuss cars. Leave out: x.",
        base="Discuss cars", include=[], exclude=["x"], include_ids=[], exclude_ids=["a"],
        candidates=[outline(s, tag=str(i)) for i, s in enumerate(scores)],
        baseline=outline(random_score, "random", "r"),
    )  # fmt: skip


def test_sft_takes_the_best_outline_and_dpo_the_extremes_with_a_margin() -> None:
    examples = [
        example("a", [3, 5, 4], 2),  # SFT: candidate 1; DPO: 5 vs random 2
        example("b", [2, 2], 2),  # SFT: none (best 2 < 3); DPO: tie, skipped
        example("c", [4, 4], 3),  # DPO with the random outline: 4 vs 3
    ]
    sft, dpo = sft_and_dpo(examples, size=2, min_sft_score=3, margin=1)
    assert [s.request_id for s in sft] == ["a", "c"]
    assert json.loads(sft[0].completion[0].content) == {"outline": ["one 1", "two 1"]}
    assert sft[0].prompt[-1].role == "user" and "Leave out: x." in sft[0].prompt[-1].content
    assert [(d.request_id, d.chosen_score, d.rejected_score) for d in dpo] == [
        ("a", 5, 2),
        ("c", 4, 3),
    ]
    assert json.loads(dpo[0].rejected[0].content) == {"outline": ["one r", "two r"]}
    _, without = sft_and_dpo(examples, size=2, baseline_in_pairs=False)
    assert [(d.request_id, d.rejected_score) for d in without] == [("a", 3)]
    _, wide = sft_and_dpo(examples, size=2, margin=3)
    assert [d.request_id for d in wide] == ["a"]
    card = data_card(examples, sft, dpo, teacher="t")
    assert card["score_histogram"]["candidates"] == {"1": 0, "2": 2, "3": 1, "4": 3, "5": 1}
    assert card["score_histogram"]["random_baseline"]["2"] == 2
    assert card["sft_examples"] == 2 and card["dpo_pairs"] == 2 and card["teacher"] == "t"


def test_planner_data_command_writes_judged_data_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "data"
    with schema_server() as (url, answers):
        args = ["train", "planner-data", "--datasets", "argkp2021:train", "--limit-topics", "1"]
        args += ["--per-topic", "2", "--llm", fake_llm(url), "--out", str(out), *TINY]
        assert main(args) == 0
        asked = answers.requests
        # tree: 1 + 2 calls; outlines: 3 x 4 nodes per request; judge: 4 outlines per request
        assert asked == 3 + 2 * (12 + 4)
        examples = read_examples(out / "examples.jsonl")
        assert [e.kind for e in examples] == ["include", "exclude"]
        assert all(len(e.tree) == 6 and len(e.candidates) == 3 for e in examples)
        assert all(e.baseline is not None and e.baseline.source == "random" for e in examples)
        card = json.loads((out / "card.json").read_text())
        assert card["teacher"].startswith("openai:fake-teacher") and card["judged_requests"] == 2
        assert sum(card["score_histogram"]["candidates"].values()) == 6
        sft = (out / "sft.jsonl").read_text().splitlines()
        assert len(sft) == card["sft_examples"] >= 1
        assert len((out / "dpo.jsonl").read_text().splitlines()) == card["dpo_pairs"] >= 1
        # A rerun answers from the response cache and the finished file: no new calls.
        assert main(args) == 0
        assert answers.requests == asked
        # An interrupted run resumes from the partial file: its requests are not planned again
        # (with the response cache gone, so no reply can come from it).
        (out / "examples.jsonl").rename(out / "examples.jsonl.partial")
        shutil.rmtree(tmp_path / "cache")
        assert main(args) == 0
        assert answers.requests == asked


def test_eval_planner_is_routed_and_names_its_planners(tmp_path: Path) -> None:
    assert route(["-v", "eval", "planner", "--x"]) == ["-v", "eval-planner", "--x"]
    assert route(["eval", "--run", "planner"]) == ["eval", "--run", "planner"]
    (tmp_path / "sft").mkdir()
    (tmp_path / "card.json").write_text(json.dumps({"base_model": "smollm2"}))
    assert planner_specs(tmp_path) == {
        "base": "transformers(model='smollm2')",
        "sft": f"transformers(model='{tmp_path / 'sft'}')",
    }


@pytest.mark.slow
def test_data_training_and_evaluation_run_end_to_end_on_a_tiny_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    pytest.importorskip("gguf")
    try:
        smollm2_path()
    except MissingExtraError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data, model, report = tmp_path / "data", tmp_path / "planner", tmp_path / "eval.json"
    with schema_server() as (url, _):
        args = ["train", "planner-data", "--datasets", "argkp2021:train", "--limit-topics", "1"]
        args += ["--per-topic", "2", "--llm", fake_llm(url), "--out", str(data), *TINY]
        assert main(args) == 0
        train = ["train", "planner", "--data", str(data), "--out", str(model)]
        assert main([*train, "--max-steps", "1"]) == 0
        card = json.loads((model / "card.json").read_text())
        assert card["sft"]["steps"] == 1 and card["dpo"]["steps"] == 1
        assert card["base_model"] == "smollm2" and card["config"]["seed"] == 0
        assert (model / "dpo" / "config.json").is_file() and card["versions"]["trl"]
        evaluate = ["eval", "planner", "--datasets", "argkp2021:dev", "--limit-topics", "1"]
        evaluate += ["--per-topic", "1"]
        evaluate += ["--trained", str(model), "--llm", fake_llm(url), "--out", str(report)]
        evaluate += ["--depth", "2", "--branching", "2", "--retries", "0"]
        assert main(evaluate) == 0
    summary = json.loads(report.read_text())
    assert set(summary["planners"]) == {"base", "sft", "dpo", "random"}
    assert all(row["requests"] == 1 for row in summary["planners"].values())
    assert {(t["a"], t["b"]) for t in summary["paired_tests"]} >= {("base", "sft"), ("sft", "dpo")}
    assert all(1 <= r["score"] <= 5 for r in summary["results"])


def test_a_model_retrained_into_the_same_folder_is_not_answered_from_the_cache(
    tmp_path: Path,
) -> None:
    from covrag.llm import parse_llm
    from covrag.llm.cache import request_key

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"first")
    spec = f"transformers(model='{tmp_path}')"
    first = parse_llm(spec, cache=tmp_path / "c.sqlite")
    weights.write_bytes(b"second model")
    second = parse_llm(spec, cache=tmp_path / "c.sqlite")
    assert first.endpoint and first.endpoint != second.endpoint
    keys = {
        request_key("transformers", llm.model, [], None, llm.params, endpoint=llm.endpoint)
        for llm in (first, second)
    }
    assert len(keys) == 2
