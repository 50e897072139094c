"""Measures: specifications, hand-computed values, budgets, large cutoffs (vs a naive ndeval)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.errors import ConfigError, DataError
from covrag.evaluation import (
    MEASURES,
    NDCG,
    RVC,
    RVC2,
    AlphaNDCG,
    Judgments,
    Precision,
    StRecall,
    evaluate,
    parse_measure,
    parse_measures,
)

D2 = 1 / math.log2(3)  # discount at rank 2
D4 = 1 / math.log2(5)


def value(
    labels: Mapping[str, Sequence[str]],
    run: Sequence[str],
    spec: str,
    costs: Mapping[str, int] | None = None,
) -> float:
    judgments = Judgments.from_labels({"q": labels}, costs={"q": costs} if costs else None)
    return evaluate(judgments, {"q": run}, spec).mean(spec)


# --- specifications -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        "alpha-nDCG@10",
        "alpha-nDCG(alpha=0.7)@10",
        "StRecall@20",
        "P@10",
        "nDCG@10",
        "RVC@1024",
        "RVC2@512",
        "alpha-nDCG(alpha=1.0)@1",
        "alpha-nDCG@100",
        "Excl@10",
    ],
)
def test_spec_prints_back_as_written(spec: str) -> None:
    measure = parse_measure(spec)
    assert repr(measure) == spec
    assert str(measure) == spec
    assert parse_measure(repr(measure)) == measure
    assert hash(parse_measure(spec)) == hash(measure)


def test_default_parameters_are_left_out_and_compare_equal() -> None:
    assert parse_measure("alpha-nDCG(alpha=0.5)@10") == AlphaNDCG(cutoff=10)
    assert repr(parse_measure("alpha-nDCG(alpha=0.5)@10")) == "alpha-nDCG@10"
    assert parse_measure("alpha-nDCG(cutoff=5)") == AlphaNDCG(5)
    assert parse_measure(" StRecall@3 ") == StRecall(3)


def test_parsed_types_and_fields() -> None:
    assert parse_measures(["P@5", "nDCG@5", "RVC@100", "RVC2@100", StRecall(2)]) == (
        Precision(5),
        NDCG(5),
        RVC(100),
        RVC2(100),
        StRecall(2),
    )
    assert parse_measure("RVC@1024").budget == 1024  # type: ignore[attr-defined]
    assert parse_measure("alpha-nDCG(alpha=0.7)@10").alpha == 0.7  # type: ignore[attr-defined]
    assert RVC(10) != RVC2(10)
    assert {"RVC", "RVC2", "P", "nDCG", "StRecall", "alpha-nDCG"} <= set(MEASURES.names())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("alpha-nDCG", "needs a cutoff"),
        ("RVC", "needs a budget"),
        ("alpha-nDCG@0", "cutoff must be an integer >= 1"),
        ("alpha-nDCG@ten", "must be followed by an integer"),
        ("alpha-nDCG(alpha=1.5)@10", "alpha must lie in"),
        ("alpha-nDCG(alpha='x')@10", "alpha must be a number"),
        ("alpha-nDCG(beta=1)@10", "bad parameters"),
        ("alpha-ndcg@10", "did you mean alpha-nDCG"),
        ("RVC@0", "budget must be an integer >= 1"),
    ],
)
def test_bad_specs_raise_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_measure(spec)


# --- hand-computed values -----------------------------------------------------------------

TINY = {"d1": ["a"], "d2": ["a", "b"], "d3": ["b"], "d4": []}
TINY_RUN = ["d1", "d2", "d4", "d3"]


def test_alpha_ndcg_by_hand() -> None:
    # Run gains: d1 a:1; d2 a:0.5 + b:1; d4 0; d3 b:0.5. Ideal (greedy): d2 (2), then d1 and d3
    # tie at 0.5 -> the larger doc id d3, then d1 (0.5), d4 (0).
    dcg = [1.0, 1 + 1.5 * D2, 1 + 1.5 * D2, 1 + 1.5 * D2 + 0.5 * D4]
    ideal = [2.0, 2 + 0.5 * D2, 2 + 0.5 * D2 + 0.5 / 2, 2 + 0.5 * D2 + 0.5 / 2]
    for k in range(1, 5):
        assert value(TINY, TINY_RUN, f"alpha-nDCG@{k}") == pytest.approx(dcg[k - 1] / ideal[k - 1])


def test_alpha_ndcg_ideal_is_ndeval_greedy_with_largest_docno_tie_break() -> None:
    # Rank 1 ties (gain 2) between d0, d1 and d2; ndeval keeps the largest docno, d2 {a, c},
    # and its greedy "ideal" then gains 2, 1.5, 1.5, 0.5. The run d0, d1, d2, d3 gains 2, 2, 1,
    # 0.5: it beats ndeval's ideal, so the value exceeds 1, as in ndeval.
    labels = {"d0": ["a", "b"], "d1": ["c", "d"], "d2": ["a", "c"], "d3": ["d"]}
    run = ["d0", "d1", "d2", "d3"]
    assert value(labels, run, "alpha-nDCG@2") == pytest.approx((2 + 2 * D2) / (2 + 1.5 * D2))
    assert value(labels, run, "alpha-nDCG@4") == pytest.approx(
        (2 + 2 * D2 + 1 / 2 + 0.5 * D4) / (2 + 1.5 * D2 + 1.5 / 2 + 0.5 * D4)
    )
    # Reverse the names and the tie goes to the doc the run starts with: exactly 1.
    renamed = {f"d{3 - int(d[1])}": aspects for d, aspects in labels.items()}
    assert value(renamed, ["d3", "d2", "d1", "d0"], "alpha-nDCG@4") == pytest.approx(1.0)


def test_alpha_parameter_by_hand() -> None:
    # alpha = 1: a repeated aspect gains nothing.
    assert value(TINY, TINY_RUN, "alpha-nDCG(alpha=1.0)@2") == pytest.approx((1 + 1 * D2) / (2 + 0))
    # alpha = 0: plain DCG of aspect counts; ideal d2 (2), d3 (1), d1 (1).
    assert value(TINY, TINY_RUN, "alpha-nDCG(alpha=0.0)@2") == pytest.approx(
        (1 + 2 * D2) / (2 + 1 * D2)
    )


def test_strecall_precision_ndcg_by_hand() -> None:
    assert value(TINY, TINY_RUN, "StRecall@1") == 0.5
    assert value(TINY, TINY_RUN, "StRecall@2") == 1.0
    assert value(TINY, TINY_RUN, "P@3") == pytest.approx(2 / 3)
    assert value(TINY, TINY_RUN, "P@10") == pytest.approx(3 / 10)  # short run: still / 10
    assert value(TINY, TINY_RUN, "nDCG@4") == pytest.approx((1 + D2 + D4) / (1 + D2 + 0.5))


def test_unjudged_docs_gain_nothing_and_aspects_without_support_do_not_count() -> None:
    judgments = Judgments.from_labels(
        {"q": {"d1": ["a"], "d2": ["b"]}}, aspects={"q": ["a", "b", "never"]}
    )
    result = evaluate(judgments, {"q": ["x", "d1", "y"]}, ["StRecall@3", "P@3", "alpha-nDCG@1"])
    assert result.values.tolist() == [[0.5, pytest.approx(1 / 3), 0.0]]


def test_excluded_share_by_hand() -> None:
    from covrag.evaluation import TopicJudgments
    from covrag.types import Aspect, Passage, Topic

    labels = {"d1": ["a"], "d2": ["reviews"], "d3": ["a", "reviews"], "d4": []}
    judgments = Judgments(
        (TopicJudgments("q", labels, ("a", "reviews"), excluded=frozenset({"reviews"})),)
    )
    run = {"q": ["d2", "d1", "d3", "x"]}
    result = evaluate(judgments, run, ["Excl@1", "Excl@3", "Excl@10", "StRecall@3"])
    assert result.values.tolist() == [[1.0, pytest.approx(2 / 3), 0.2, 1.0]]
    # Nothing excluded: 0, whatever the ranking.
    assert value(labels, ["d2", "d3"], "Excl@2") == 0.0
    with pytest.raises(DataError, match="excluded aspects"):
        TopicJudgments("q", labels, ("a", "reviews"), excluded=frozenset({"other"}))
    # From topics: aspects with polarity "exclude" are the excluded ones.
    topic = Topic(
        "q",
        "Describe Jaws, but skip its reception",
        tuple(Passage(d, d) for d in labels),
        (Aspect("a", "plot"), Aspect("reviews", "reception", polarity="exclude")),
        labels={d: frozenset(a) for d, a in labels.items()},
    )
    from_topics = Judgments.from_topics([topic])
    assert from_topics["q"].excluded == frozenset({"reviews"})
    # ... and they are no gain: d2 (reviews only) is not relevant, d3 counts for "a" alone;
    # Excl still sees both.
    assert from_topics["q"].labels == {"d1": {"a"}, "d2": set(), "d3": {"a"}, "d4": set()}
    assert from_topics["q"].excluded_docs == {"d2", "d3"}
    result = evaluate(from_topics, run, ["Excl@3", "StRecall@1", "P@2", "alpha-nDCG@2"])
    assert result.values.tolist()[0][:3] == [pytest.approx(2 / 3), 0.0, 0.5]
    with pytest.raises(DataError, match="excluded docs"):
        TopicJudgments("q", labels, ("a", "reviews"), excluded_docs=frozenset({"nope"}))


def test_topic_without_actual_aspects_scores_zero() -> None:
    judgments = Judgments.from_labels({"q": {"d1": [], "d2": []}})
    result = evaluate(judgments, {"q": ["d1", "d2"]}, ["alpha-nDCG@5", "StRecall@5", "nDCG@5"])
    assert result.values.tolist() == [[0.0, 0.0, 0.0]]


# --- budgets: RVC and RVC2 ------------------------------------------------------------------

POOL = {"d1": ["a"], "d2": ["b"], "d3": ["a", "c"], "d4": []}
COSTS = {"d1": 50, "d2": 80, "d3": 30, "d4": 10}
ORDER = ["d2", "d1", "d3", "d4"]


@pytest.mark.parametrize(
    ("budget", "rvc", "rvc2"),
    [
        (100, 1 / 3, 0.5 / 3),  # d2 (80 of 100); d1, d3 skipped; d4 fits the last 20
        (130, 2 / 3, 1 / 3),  # d2 + d1 = 130; d3 and d4 skipped
        (170, 1.0, 2 / 3),  # all four: a twice (1), b once (1/2), c once (1/2)
        (79, 1 / 3, 0.5 / 3),  # d2 skipped, d1 in, d3 skipped (never truncated), d4 in
        (9, 0.0, 0.0),  # nothing fits
    ],
)
def test_rvc_by_hand_skips_and_never_truncates(budget: int, rvc: float, rvc2: float) -> None:
    assert value(POOL, ORDER, f"RVC@{budget}", COSTS) == pytest.approx(rvc)
    assert value(POOL, ORDER, f"RVC2@{budget}", COSTS) == pytest.approx(rvc2)


def test_rvc_zero_cost_docs_always_fit() -> None:
    costs = {"d1": 0, "d2": 0, "d3": 5, "d4": 0}
    assert value(POOL, ORDER, "RVC@1", costs) == pytest.approx(2 / 3)


def test_rvc_needs_costs_of_every_ranked_doc() -> None:
    judgments = Judgments.from_labels({"q": POOL}, costs={"q": {"d1": 5}})
    with pytest.raises(DataError, match="'d2' of query 'q' has no token cost"):
        evaluate(judgments, {"q": ORDER}, "RVC@100")
    judgments = Judgments.from_labels({"q": POOL}, costs={"q": COSTS})
    with pytest.raises(DataError, match="'zz' of query 'q' is not judged"):
        evaluate(judgments, {"q": ["d1", "zz"]}, "RVC2@100")
    # Ranking measures never need costs.
    assert evaluate(judgments, {"q": ["d1", "zz"]}, "P@2").mean("P@2") == 0.5


def test_rvc_topic_missing_from_run_scores_zero() -> None:
    judgments = Judgments.from_labels(
        {"q": POOL, "r": {"x": ["a"]}}, costs={"q": COSTS, "r": {"x": 1}}
    )
    result = evaluate(judgments, {"q": ORDER}, ["RVC@100", "RVC2@100"])
    assert result["RVC@100"] == {"q": pytest.approx(1 / 3), "r": 0.0}
    assert result["RVC2@100"] == {"q": pytest.approx(0.5 / 3), "r": 0.0}


@st.composite
def budget_case(
    draw: st.DrawFn,
) -> tuple[dict[str, list[str]], list[str], dict[str, int], int]:
    n_docs = draw(st.integers(1, 15))
    labels = {
        f"d{i}": draw(st.lists(st.sampled_from("abcde"), max_size=3, unique=True))
        for i in range(n_docs)
    }
    costs = {d: draw(st.integers(0, 60)) for d in labels}
    run = draw(st.permutations(list(labels)))[: draw(st.integers(0, n_docs))]
    return labels, run, costs, draw(st.integers(1, 200))


@settings(max_examples=150, deadline=None)
@given(budget_case())
def test_rvc_matches_a_naive_budget_walk(
    case: tuple[dict[str, list[str]], list[str], dict[str, int], int],
) -> None:
    labels, run, costs, budget = case
    left, support = budget, Counter[str]()
    for doc in run:
        if costs[doc] <= left:  # skip what does not fit; never truncate
            left -= costs[doc]
            support.update(labels[doc])
    actual = {a for aspects in labels.values() for a in aspects}
    rvc = len(support) / len(actual) if actual else 0.0
    rvc2 = sum(min(c, 2) / 2 for c in support.values()) / len(actual) if actual else 0.0
    assert value(labels, run, f"RVC@{budget}", costs) == pytest.approx(rvc)
    assert value(labels, run, f"RVC2@{budget}", costs) == pytest.approx(rvc2)


# --- large cutoffs, against a naive transcription of ndeval --------------------------------


def naive_alpha_ndcg(
    labels: Mapping[str, frozenset[str]], run: Sequence[str], alpha: float, k: int
) -> float:
    if not frozenset().union(*labels.values()):
        return 0.0

    def gain(doc: str, seen: Counter[str]) -> float:
        return sum((1 - alpha) ** seen[a] for a in sorted(labels.get(doc, ())))

    def dcg(order: Sequence[str]) -> float:
        seen: Counter[str] = Counter()
        total = 0.0
        for rank, doc in enumerate(order[:k], start=1):
            total += gain(doc, seen) / math.log2(rank + 1)
            seen.update(labels.get(doc, ()))
        return total

    ideal: list[str] = []
    seen: Counter[str] = Counter()
    left = set(labels)
    while left:
        best = max(left, key=lambda d: (gain(d, seen), d))
        ideal.append(best)
        left.remove(best)
        seen.update(labels[best])
    return dcg(run) / dcg(ideal)


@st.composite
def topic_and_run(draw: st.DrawFn) -> tuple[dict[str, frozenset[str]], list[str]]:
    n_docs = draw(st.integers(1, 40))
    aspects = [f"a{j}" for j in range(draw(st.integers(1, 6)))]
    labels = {
        f"d{i}": frozenset(draw(st.lists(st.sampled_from(aspects), max_size=3)))
        for i in range(n_docs)
    }
    pool = list(labels) + [f"u{i}" for i in range(5)]
    run = draw(st.permutations(pool))[: draw(st.integers(0, len(pool)))]
    return labels, run


@settings(max_examples=60, deadline=None)
@given(topic_and_run())
def test_large_cutoffs_match_naive_ndeval_and_are_sane(
    case: tuple[dict[str, frozenset[str]], list[str]],
) -> None:
    labels, run = case
    judgments = Judgments.from_labels({"q": labels})
    cutoffs = [1, 5, 20, 30, 50, 100]
    specs = [f"alpha-nDCG@{k}" for k in cutoffs] + [f"StRecall@{k}" for k in cutoffs]
    result = evaluate(judgments, {"q": run}, specs)
    for k in cutoffs:
        assert result.mean(f"alpha-nDCG@{k}") == pytest.approx(
            naive_alpha_ndcg(labels, run, 0.5, k), abs=1e-9
        )
    recall = [result.mean(f"StRecall@{k}") for k in cutoffs]
    assert recall == sorted(recall) and all(0 <= r <= 1 for r in recall)
    # Past the run and every relevant doc nothing changes any more.
    assert result.mean("alpha-nDCG@50") == pytest.approx(result.mean("alpha-nDCG@100"))
    assert all(result.mean(f"alpha-nDCG@{k}") >= 0 for k in cutoffs)
