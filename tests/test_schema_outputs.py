"""The schema models of what ``covrag ask``, ``covrag bench`` and ``covrag plan --json`` write
give exactly the JSON those commands write."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

from covrag.schema._base import read_model
from covrag.schema.ask import AskTopic, ask_plan, ask_run_record
from covrag.schema.bench import BenchRow, BenchSummary, summary_record
from covrag.schema.plan import PlanSplit, PlanTree, plan_split_record, plan_tree_record
from covrag.schema.runfile import RunFileModel
from covrag.types import Budget


def test_ask_run_record_matches_the_ask_run_file() -> None:
    from covrag.ask import AskConfig, ask
    from covrag.retrieve import BM25Retriever
    from generate_support import KeywordCoverage
    from llm_support import ScriptedLLM
    from test_ask import ASPECTS, CORPUS, CRITIQUE

    llm = ScriptedLLM(["Uniforms reduce bullying [1].", CRITIQUE, "They cost [2]."])
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(pool=4, k=2, passes=1),
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )
    subs, outline = result.subquestions, result.plan
    record = ask_run_record(
        topic=result.topic,
        selection=result.selection,
        coverage=result.coverage,
        answer=result.generation.answer,
        plan=ask_plan(
            request=result.query.request,
            base=result.query.base,
            include=result.query.include,
            exclude=result.query.exclude,
            subquestions=None if subs is None else (subs.texts, subs.dropped, subs.calls),
            outline=None
            if outline is None
            else (
                outline.best.texts,
                outline.best.score,
                outline.best.rationale,
                outline.baseline.score,
            ),
        ),
        queries=result.queries,
        uncovered=[a.id for a in result.uncovered],
        generation=result.generation.to_json(),
        costs={stage: cost.as_dict() for stage, cost in result.costs.items()},
        warnings=result.warnings,
        seconds=sum(c.seconds for c in result.costs.values()),
    )
    expected = result.run_record()
    assert json.dumps(record) == json.dumps(expected)
    data = json.loads(json.dumps(record))
    read_model(RunFileModel, data)
    assert read_model(AskTopic, data["topics"][0]).plan.request == result.query.request


def test_bench_summary_record_matches_bench_to_json() -> None:
    from covrag.bench import ORACLE, BenchResult, MethodResult

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
    fields = {k: v for k, v in vars(method).items() if k != "selections"}
    record = summary_record(
        dataset="argkp2021:dev",
        topics=2,
        baseline="topk",
        oracle=ORACLE,
        results=[BenchRow.of(**fields)],
    )
    assert json.dumps(record) == json.dumps(bench.to_json())
    summary = read_model(BenchSummary, json.loads(json.dumps(record)))
    (row,) = summary.results
    assert row.ci95 == {"StRecall@5": (0.5, 1.0)} and math.isnan(row.gap_closed["StRecall@5"])
    assert row.per_query == {"StRecall@5": {"q1": 0.5, "q2": 1.0}}


def test_plan_records_match_covrag_plan_json() -> None:
    from covrag.commands_plan import plan_record, split_record

    query = SimpleNamespace(request="r", base="b", include=("i",), exclude=("e",))
    subquestions = SimpleNamespace(texts=("q1?", "q2?"))

    def outline(source: str, score: Any) -> SimpleNamespace:
        return SimpleNamespace(
            node_ids=("1", "2"), texts=("a", "b"), source=source, score=score, rationale="why"
        )

    class Tree(list[SimpleNamespace]):
        notes = ("short",)

    tree = Tree([SimpleNamespace(id="1", text="a"), SimpleNamespace(id="2", text="b")])
    plan = SimpleNamespace(
        query=query,
        subquestions=subquestions,
        tree=tree,
        candidates=[outline("llm", 4)],
        baseline=outline("random", 2),
        best=outline("llm", 4),
    )
    usage = {"calls": 3.0, "seconds": 0.5}
    split = PlanSplit.of(**split_fields(), subquestions=subquestions.texts)
    expected = {**split_record(query, subquestions), "llm_usage": usage}
    assert json.dumps(plan_split_record(split, usage)) == json.dumps(expected)
    no_split = plan_split_record(PlanSplit.of(**split_fields(), subquestions=None))
    assert no_split == split_record(query, None)
    record = plan_tree_record(
        split,
        tree=[(n.id, n.text) for n in plan.tree],
        notes=plan.tree.notes,
        candidates=plan.candidates,
        baseline=plan.baseline,
        best=plan.best,
        usage=usage,
    )
    assert json.dumps(record) == json.dumps(plan_record(plan, usage))
    assert read_model(PlanTree, record).best.score == 4


def split_fields() -> dict[str, Any]:
    return {"request": "r", "base": "b", "include": ("i",), "exclude": ("e",)}


def test_bench_summary_errors_name_the_field() -> None:
    import pytest

    from covrag.errors import DataError

    row = {"method": "topk", "budget": "k=5", "means": {"P@5": "high"}}
    with pytest.raises(DataError, match=r"field 'results\[0\]\.means\.P@5': must be a number"):
        read_model(BenchSummary, {"results": [row]})
    with pytest.raises(DataError, match=r"field 'results\[0\]\.budget': missing"):
        read_model(BenchSummary, {"results": [{"method": "topk"}]})
