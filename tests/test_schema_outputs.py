"""The schema models of what ``covrag ask``, ``covrag bench`` and ``covrag plan --json`` write:
the JSON they give (pinned) and that it reads back through the same models."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from covrag.errors import DataError
from covrag.schema._base import read_model
from covrag.schema.ask import AskTopic
from covrag.schema.bench import BenchSummary
from covrag.schema.plan import PlanTree
from covrag.schema.runfile import RunFileModel
from covrag.types import Budget


def test_ask_run_record_is_a_run_file_with_the_plan_and_costs() -> None:
    from covrag.pipeline import AskConfig, ask
    from covrag.report.runfile import parse_run_file
    from covrag.retrieve import BM25Retriever
    from generate_support import KeywordCoverage
    from llm_support import ScriptedLLM
    from test_ask import ASPECTS, CORPUS, CRITIQUE

    llm = ScriptedLLM(["Uniforms reduce bullying [1].", CRITIQUE, "They cost [2]."])
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(pool=4, k=2, passes=1, writer="extractive"),
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )
    data = json.loads(json.dumps(result.run_record()))
    assert list(data) == ["covrag_run", "dataset", "selector", "coverage", "budget", "topics"] + [
        "costs"
    ]
    assert data["dataset"] == "ask" and data["budget"] == str(result.selection.budget)
    assert data["costs"]["seconds"] == round(sum(c.seconds for c in result.costs.values()), 3)
    (record,) = data["topics"]
    assert list(record) == [
        "query_id", "query", "aspects", "passages", "coverage", "selection", "answer",
        "plan", "retrieval", "uncovered", "aspect_coverage", "generation", "costs", "warnings",
        "filters",
    ]  # fmt: skip
    assert record["filters"] == result.filters.as_dict()  # type: ignore[union-attr]
    assert record["plan"] == {
        "request": result.query.request,
        "base": result.query.base,
        "include": list(result.query.include),
        "exclude": list(result.query.exclude),
        "subquestions": None,
        "outline": None,
    }
    assert record["retrieval"] == {
        "queries": list(result.queries),
        "pool": 4,
        "definitions": {},
        "looked_up": [],
    }
    assert record["costs"]["estimate"] == result.costs["estimate"].as_dict()
    read_model(RunFileModel, data)
    assert read_model(AskTopic, record).generation == result.generation.to_record()
    (topic,) = parse_run_file(data).topics
    assert topic.selection == result.selection


def test_ask_drafts_are_read_through_the_schema(tmp_path: Path) -> None:
    from covrag.evaluation.answers_io import load_variants
    from covrag.pipeline import AskConfig, ask
    from covrag.retrieve import BM25Retriever
    from generate_support import KeywordCoverage
    from llm_support import ScriptedLLM
    from test_ask import ASPECTS, CORPUS, CRITIQUE

    llm = ScriptedLLM(["Uniforms reduce bullying [1].", CRITIQUE, "They cost [2]."])
    config = AskConfig(pool=4, k=2, passes=1, writer="extractive")
    retriever = BM25Retriever().index(CORPUS)
    result = ask("Uniforms?", llm, retriever, config, aspects=ASPECTS, estimator=KeywordCoverage())
    data = result.run_record()
    path = tmp_path / "ask.json"
    path.write_text(json.dumps(data))
    variants = load_variants([path], all_passes=True)
    assert [v[0].answer for v in variants.values()] == [d.answer for d in result.generation.drafts]
    drafts = data["topics"][0]["generation"]["drafts"]
    drafts[1]["sentences"][0]["passage_ids"] = ["nope"]
    path.write_text(json.dumps(data))
    field = r"topics\[0\]\.generation\.drafts\[1\]\.sentences\[0\]\.passage_ids'"
    with pytest.raises(DataError, match=field + ": cites an unknown passage"):
        load_variants([path], all_passes=True)
    del drafts[1]["sentences"]
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"drafts\[1\]\.sentences': missing required field"):
        load_variants([path], all_passes=True)


def test_bench_summary() -> None:
    from covrag.evaluation.bench_results import ORACLE, BenchResult, MethodResult

    method = MethodResult(
        method="mmr(lam=0.5)",
        budget=Budget(max_passages=5),
        selections=[],
        values={"StRecall@5": {"q1": 0.5, "q2": 1.0}},
        means={"StRecall@5": 0.75},
        ci={"StRecall@5": (0.5, 1.0)},
        p_values={"StRecall@5": 0.25},
        headroom={"StRecall@5": 0.25},
        gap_closed={"StRecall@5": math.nan},
        select_seconds=0.5,
        coverage_pairs=12.0,
    )
    bench = BenchResult("argkp2021:dev", 2, "topk", {"k=5": ["StRecall@5"]}, [method])
    record = bench.to_json()
    assert json.dumps(record) == json.dumps(
        {
            "dataset": "argkp2021:dev",
            "topics": 2,
            "baseline": "topk",
            "oracle": ORACLE,
            "results": [
                {
                    "method": "mmr(lam=0.5)",
                    "budget": "k=5",
                    "means": {"StRecall@5": 0.75},
                    "ci95": {"StRecall@5": [0.5, 1.0]},
                    "p_vs_baseline_holm": {"StRecall@5": 0.25},
                    "headroom": {"StRecall@5": 0.25},
                    "gap_closed": {"StRecall@5": math.nan},
                    "select_seconds_per_topic": 0.5,
                    "coverage_pairs_per_topic": 12.0,
                    "coverage_seconds_per_topic": 0.0,
                    "aspects_seconds_per_topic": 0.0,
                    "per_query": {"StRecall@5": {"q1": 0.5, "q2": 1.0}},
                }
            ],
        }
    )
    summary = read_model(BenchSummary, json.loads(json.dumps(record)))
    (row,) = summary.results
    assert row.ci95 == {"StRecall@5": (0.5, 1.0)} and math.isnan(row.gap_closed["StRecall@5"])
    assert row.per_query == {"StRecall@5": {"q1": 0.5, "q2": 1.0}}


def test_bench_summary_errors_name_the_field() -> None:
    row = {"method": "topk", "budget": "k=5", "means": {"P@5": "high"}}
    with pytest.raises(DataError, match=r"field 'results\[0\]\.means\.P@5': must be a number"):
        read_model(BenchSummary, {"results": [row]})
    with pytest.raises(DataError, match=r"field 'results\[0\]\.budget': missing"):
        read_model(BenchSummary, {"results": [{"method": "topk"}]})


def test_plan_json() -> None:
    from covrag.cli.plan import plan_record, split_record

    query = SimpleNamespace(request="r", base="b", include=("i",), exclude=("e",))
    split = {"request": "r", "base_query": "b", "include": ["i"], "exclude": ["e"]}
    assert split_record(query, SimpleNamespace(texts=("q1?",))) == {
        **split,
        "subquestions": ["q1?"],
    }
    assert split_record(query, None) == {**split, "subquestions": []}

    def outline(source: str, score: Any) -> SimpleNamespace:
        return SimpleNamespace(
            node_ids=("1", "2"), texts=("a", "b"), source=source, score=score, rationale="why"
        )

    class Tree(list[SimpleNamespace]):
        notes = ("short",)

    tree = Tree([SimpleNamespace(id="1", text="a"), SimpleNamespace(id="2", text="b")])
    plan = SimpleNamespace(
        query=query,
        subquestions=SimpleNamespace(texts=("q1?",)),
        tree=tree,
        candidates=[outline("llm", 4)],
        baseline=outline("random", None),
        best=outline("llm", 4),
    )
    record = plan_record(plan, {"calls": 3.0})
    assert list(record) == [*split, "subquestions", "tree", "tree_notes", "candidates"] + [
        "random_baseline",
        "best",
        "llm_usage",
    ]
    assert record["tree"] == [{"id": "1", "text": "a"}, {"id": "2", "text": "b"}]
    assert record["random_baseline"] == {
        "node_ids": ["1", "2"],
        "texts": ["a", "b"],
        "source": "random",
        "score": None,
        "rationale": "why",
    }
    assert record["tree_notes"] == ["short"] and record["llm_usage"] == {"calls": 3.0}
    assert read_model(PlanTree, json.loads(json.dumps(record))).best.score == 4
