"""The top-level verbs ``covrag.select``, ``covrag.evaluate`` and ``covrag.ask``."""

from __future__ import annotations

import inspect
import subprocess
import sys
import types

import pytest

import covrag
from covrag.coverage import parse_estimator
from covrag.data import load_dataset
from covrag.pipeline import DEFAULT_SELECTOR, AskConfig, PrepareConfig
from covrag.pipeline.prepare import select_topic
from covrag.selectors import GreedyCoverageSelector, parse_selector
from covrag.types import Aspect, Budget, Passage
from llm_support import ScriptedLLM


def test_select_and_evaluate_agree_with_the_pipeline_and_the_measures() -> None:
    topics = load_dataset("argkp2021:dev")[:2]
    picked = [
        covrag.select(t, "greedy-coverage", k=5, coverage="gold", relevance="order") for t in topics
    ]
    gold, order = parse_estimator("gold"), PrepareConfig(relevance="order")
    selector = parse_selector("greedy-coverage")
    expected = [select_topic(t, selector, Budget(max_passages=5), gold, order) for t in topics]
    assert [s.passage_ids for s in picked] == [s.passage_ids for s in expected]

    from covrag.evaluation import Judgments, aggregate

    run = {s.query_id: s.passage_ids for s in picked}
    means = covrag.evaluate(topics, picked, ["StRecall@5", "alpha-nDCG@5"])
    expected_means = aggregate(Judgments.from_topics(topics), run, ["StRecall@5", "alpha-nDCG@5"])
    assert means == {repr(m): v for m, v in expected_means.items()}
    assert list(means) == ["StRecall@5", "alpha-nDCG@5"]
    assert means["StRecall@5"] == covrag.evaluate(topics, run, "StRecall@5")["StRecall@5"]
    assert 0 < means["StRecall@5"] <= 1


def test_select_defaults_and_budgets() -> None:
    topic = load_dataset("argkp2021:dev")[0]
    chosen = covrag.select(topic, coverage="gold", relevance="order")
    assert chosen.selector.startswith(DEFAULT_SELECTOR) and len(chosen) == 10
    by_tokens = covrag.select(topic, "topk", max_tokens=60, relevance="order")
    assert by_tokens.tokens_used <= 60 and by_tokens.covered == ()  # topk reads no coverage
    given = covrag.select(topic, GreedyCoverageSelector(), k=3, coverage=parse_estimator("gold"))
    assert len(given) == 3


def test_the_verbs_and_the_subpackages_have_their_own_names() -> None:
    import covrag.evaluation.measures
    import covrag.selectors.greedy

    # covrag.select / covrag.evaluate are plain functions; the subpackages are covrag.selectors
    # and covrag.evaluation, so importing one never shadows a verb (no module wrapper needed)
    assert inspect.isfunction(covrag.select) and inspect.isfunction(covrag.evaluate)
    assert type(covrag) is types.ModuleType
    assert covrag.selectors.GreedyCoverageSelector is GreedyCoverageSelector
    assert covrag.evaluation.measures is sys.modules["covrag.evaluation.measures"]
    assert covrag.select.__doc__ is not None and "Example" in covrag.select.__doc__


def test_import_covrag_stays_light() -> None:
    code = "import sys, covrag; print(sorted(m for m in ('torch', 'scipy', 'sentence_transformers', 'covrag.pipeline') if m in sys.modules))"  # noqa: E501
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.model
def test_ask_from_passages_with_a_scripted_llm() -> None:
    corpus = [
        Passage("c1", "School uniforms reduce bullying between pupils."),
        Passage("c2", "Uniforms cost parents a lot of money each year."),
        Passage("c3", "Trains are faster than buses."),
    ]
    llm = ScriptedLLM(["Uniforms reduce bullying [1]."])
    result = covrag.ask(
        "Should schools require uniforms?",
        corpus,
        llm=llm,
        config=AskConfig(answers=0, pool=3, k=2, passes=0, writer="extractive"),
        aspects=[Aspect("sq1", "Do uniforms reduce bullying?")],
    )
    assert result.selection.selector == AskConfig().selector and len(result.selection) <= 2
    sentence, *quoted = result.generation.answer.sentences
    assert sentence.text == "Uniforms reduce bullying." and sentence.passage_ids == ("c1",)
    # then the context's sentences nearest the question that it did not state, quoted
    assert all(
        q.text.startswith("\u201c") and q.passage_ids[0] in result.selection.passage_ids
        for q in quoted
    )
    assert result.coverage.source.startswith("cross-encoder")
