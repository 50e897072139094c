"""Answer measures, the two judges, their agreement, and variants compared with Holm."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from covrag.evaluation.answer_stats import compare_variants
from covrag.evaluation.answers import (
    AnswerEvaluation,
    LLMAnswerJudge,
    NuggetJudgment,
    SentenceJudgment,
    agreement,
    evaluate_answer,
    vital_from_labels,
)
from covrag.generate import parse_citations
from covrag.types import Aspect, Passage, Topic
from covrag_lab.tables import markdown_table
from generate_support import ASPECTS, PASSAGES, KeywordCoverage
from llm_support import ScriptedLLM

QUESTION = "Should schools require uniforms?"


def test_vital_nuggets_are_the_key_points_most_passages_match() -> None:
    passages = tuple(Passage(f"p{i}", "x") for i in range(10))
    aspects = tuple(Aspect(f"a{j}", "y") for j in range(4))
    counts = {"a0": 5, "a1": 3, "a2": 1, "a3": 1}  # 10 matches; a0 + a1 reach half
    labels: dict[str, set[str]] = {p.id: set() for p in passages}
    for aspect, n in counts.items():
        for i in range(n):
            labels[f"p{i}"].add(aspect)
    topic = Topic("q", "?", passages, aspects, {k: frozenset(v) for k, v in labels.items()})
    assert vital_from_labels(topic) == {"a0"}  # 5 of 10 already reaches half
    assert vital_from_labels(topic, share=0.6) == {"a0", "a1"}
    assert vital_from_labels(topic, share=0.9) == {"a0", "a1", "a2", "a3"}  # tie included
    flagged = Topic("q", "?", passages, (Aspect("v", "z", vital=True), *aspects[1:]))
    assert vital_from_labels(flagged) == {"v"}


def evaluation(labels: list[str | None], cheap: list[bool], cites: list[bool]) -> AnswerEvaluation:
    return AnswerEvaluation(
        query_id="q",
        nuggets=tuple(
            NuggetJudgment(f"a{j}", label, hit)  # type: ignore[arg-type]
            for j, (label, hit) in enumerate(zip(labels, cheap, strict=True))
        ),
        in_context=frozenset({"a0", "a1"}),
        vital=frozenset({"a0", "a2"}),
        sentences=tuple(SentenceJudgment(i, ("p1",), ok, ok) for i, ok in enumerate(cites)),
        n_sentences=4,
    )


def test_measures_follow_their_definitions() -> None:
    e = evaluation(["support", "partial", "not", "not"], [True, False, False, True], [True, False])
    assert e.answer_strecall() == 0.5  # support + partial
    assert e.transfer_rate() == 1.0  # a0, a1 in context, both supported
    assert e.v_strict() == 0.5  # vital a0 supported, a2 not; partial would not count
    assert e.citation_precision() == 0.5 and e.cited_share == 0.5
    assert e.answer_strecall("cheap") == 0.5 and e.transfer_rate("cheap") == 0.5
    measures = e.measures()
    assert measures["context_strecall"] == 0.5 and measures["v_strict~ce"] == 0.5
    none = evaluation([None] * 4, [False] * 4, [])
    assert math.isnan(none.answer_strecall()) and math.isnan(none.citation_precision())


def test_agreement_and_kappa() -> None:
    a = evaluation(["support", "partial", "not", "not"], [True, True, False, False], [])
    assert agreement([a]) == {"nuggets": 4, "agreement": 1.0, "kappa": 1.0}
    b = evaluation(["support", "not", "not", "support"], [True, True, False, False], [])
    result = agreement([b])
    assert result["agreement"] == 0.5 and result["kappa"] == pytest.approx(0.0)


def test_llm_judge_reads_labels_and_verdicts_and_retries_misaligned_replies() -> None:
    answer = parse_citations(
        "Uniforms reduce bullying [1]. Parents bear the cost [3].", ["p1", "p2", "p3"]
    )
    nuggets = json.dumps(
        {
            "judgments": [
                {"point": i, "label": label}
                for i, label in [(1, "support"), (2, "partial"), (3, "not")]
            ]
        }
    )
    misaligned = json.dumps({"judgments": [{"point": 1, "label": "support"}] * 3})
    verdicts = json.dumps(
        {"verdicts": [{"sentence": 1, "supported": True}, {"sentence": 2, "supported": False}]}
    )
    llm = ScriptedLLM([misaligned, nuggets, verdicts])
    result = evaluate_answer(
        "q",
        QUESTION,
        answer.answer,
        aspects=ASPECTS,
        context=PASSAGES,
        in_context=frozenset({"a1", "a2"}),
        vital=frozenset({"a1"}),
        llm_judge=LLMAnswerJudge(llm),
        estimator=KeywordCoverage(),
    )
    assert [n.llm for n in result.nuggets] == ["support", "partial", "not"]
    assert "exactly one entry for each point" in llm.requests[1][0][-1].content
    citation_prompt = llm.requests[2][0][-1].content
    assert "1. Uniforms reduce bullying. (cites [1])" in citation_prompt
    assert [s.llm for s in result.sentences] == [True, False]
    # Keyword judge: "bullying" and "cost" are in the answer, "express" is not; the second
    # sentence cites p3, which does not contain its first word ("Parents").
    assert [n.cheap for n in result.nuggets] == [True, True, False]
    assert [s.cheap for s in result.sentences] == [True, False]
    assert result.answer_strecall() == pytest.approx(2 / 3) and result.v_strict() == 1.0
    assert result.cost.calls == 3


def test_empty_answer_supports_nothing_without_asking() -> None:
    from covrag.types import Answer

    llm = ScriptedLLM([])
    result = evaluate_answer(
        "q",
        QUESTION,
        Answer(()),
        aspects=ASPECTS,
        context=PASSAGES,
        in_context=frozenset({"a1"}),
        vital=frozenset(),
        llm_judge=LLMAnswerJudge(llm),
        estimator=KeywordCoverage(),
    )
    assert result.answer_strecall() == 0.0 and result.transfer_rate("cheap") == 0.0
    assert math.isnan(result.citation_precision()) and math.isnan(result.v_strict())
    assert llm.requests == []


def test_variants_are_tested_against_the_baseline_with_holm() -> None:
    def topic(q: str, support: int) -> AnswerEvaluation:
        labels = ["support"] * support + ["not"] * (4 - support)
        e = evaluation(labels, [True] * 4, [True])  # type: ignore[arg-type]
        return AnswerEvaluation(q, e.nuggets, e.in_context, e.vital, e.sentences, 4)

    rng = np.random.default_rng(0)
    base = [topic(f"q{i}", int(rng.integers(0, 2))) for i in range(8)]
    better = [topic(e.query_id, 4) for e in base]
    same = [topic(e.query_id, int(e.answer_strecall() * 4)) for e in base]
    summaries = compare_variants(
        {"base": base, "better": better, "same": same}, measures=["answer_strecall"]
    )
    assert [s.name for s in summaries] == ["base", "better", "same"]
    assert summaries[0].p_values == {}
    assert summaries[1].means["answer_strecall"] == 1.0
    assert summaries[1].p_values["answer_strecall"] < 0.05
    assert summaries[2].p_values["answer_strecall"] == 1.0
    table = markdown_table(summaries, ["answer_strecall"])
    assert "| better | 8 | 1.000* (p=" in table


def test_copy_rate_counts_sentences_that_copy_a_passage_and_framing_states_no_nugget() -> None:
    from covrag.types import Answer, Citation

    answer = Answer(
        (
            Citation("Uniforms reduce bullying because nobody stands out.", ("p1",)),  # verbatim
            Citation("Families pay for uniforms every year.", ("p2",)),  # a paraphrase
            Citation('The corpus does not answer: "express identity".', (), framing=True),
        )
    )
    e = evaluate_answer(
        "q",
        QUESTION,
        answer,
        aspects=ASPECTS,
        context=PASSAGES,
        in_context=frozenset({"a1", "a2", "a3"}),
        vital=frozenset(),
        estimator=KeywordCoverage(),
    )
    assert e.copied == 1 and e.measures()["copy_rate"] == pytest.approx(1 / 3)
    # The framing names "express identity" but states nothing: a3 is not supported.
    assert [n.cheap for n in e.nuggets] == [True, False, False]
    assert evaluation([None] * 4, [False] * 4, []).copy_rate == 0.0  # 4 sentences, none copied
