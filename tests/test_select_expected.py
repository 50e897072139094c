from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import (
    Candidates,
    ExpectedCoverageSelector,
    GreedyCoverageSelector,
    Input,
    parse_selector,
)
from covrag.selectors.expected import uncovered_share
from covrag.types import Budget, CoverageMatrix, Passage


def pool(
    probs: list[list[float]], relevance: list[float] | None = None, **kw: object
) -> Candidates:
    matrix = np.array(probs, dtype=float)
    ids = tuple(f"p{i}" for i in range(len(matrix)))
    aspects = tuple(f"a{j}" for j in range(matrix.shape[1]))
    return Candidates(
        "q",
        "question",
        tuple(Passage(id=i, text=i) for i in ids),
        relevance=np.array(relevance if relevance is not None else [0.0] * len(ids)),
        coverage=CoverageMatrix(ids, aspects, matrix, threshold=0.5),
        **kw,  # type: ignore[arg-type]
    )


def expected(probs: np.ndarray, picked: tuple[int, ...]) -> float:
    left = np.prod([1.0 - probs[i] for i in picked], axis=0) if picked else np.ones(probs.shape[1])
    return float((1.0 - left).sum())


def test_prefers_the_confident_match_where_thresholds_tie() -> None:
    # p0 and p1 both cross the threshold for a0; p0 is more relevant, p1 far more certain.
    candidates = pool([[0.55, 0.0], [0.99, 0.0], [0.0, 0.9]], relevance=[0.9, 0.1, 0.5])
    binary = GreedyCoverageSelector().select(candidates, Budget(max_passages=2))
    soft = ExpectedCoverageSelector(power=1.0).select(candidates, Budget(max_passages=2))
    assert binary.passage_ids[:2] == ("p0", "p2")  # relevance breaks the tie
    assert soft.passage_ids == ("p1", "p2")
    assert soft.steps[0].score == pytest.approx(0.99)
    assert soft.steps[0].newly_covered == ("a0",)  # the trace still reads the threshold


def test_second_pick_accounts_for_what_is_probably_covered() -> None:
    # After p0 (0.9 on a0), another a0 passage adds 0.1 * 0.9 = 0.09, less than p2's 0.3 on a1.
    candidates = pool([[0.9, 0.0], [0.9, 0.0], [0.0, 0.3]])
    selection = ExpectedCoverageSelector(power=1.0).select(candidates, Budget(max_passages=2))
    assert selection.passage_ids == ("p0", "p2")
    assert [s.score for s in selection.steps] == pytest.approx([0.9, 0.3])


def test_power_sharpens_towards_confident_matches() -> None:
    # p0 is likely on two aspects, p1 certain on one: power 1 takes p0 (1.2 > 1.0), power 4
    # takes p1 (1.0 > 2 * 0.6**4 = 0.26).
    candidates = pool([[0.6, 0.6], [1.0, 0.0]])
    budget = Budget(max_passages=1)
    assert ExpectedCoverageSelector(power=1.0).select(candidates, budget).passage_ids == ("p0",)
    assert ExpectedCoverageSelector(power=4.0).select(candidates, budget).passage_ids == ("p1",)


@pytest.mark.parametrize("seed", range(5))
def test_greedy_bound_and_optimizers_agree(seed: int) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.random((8, 4)) ** 2
    candidates = pool(probs.tolist(), relevance=rng.random(8).tolist())
    budget = Budget(max_passages=3)
    lazy = ExpectedCoverageSelector(power=1.0, optimizer="lazy").select(candidates, budget)
    naive = ExpectedCoverageSelector(power=1.0).select(candidates, budget)
    assert lazy.passage_ids == naive.passage_ids
    picked = tuple(int(p[1:]) for p in lazy.passage_ids)
    best = max(expected(probs, s) for s in itertools.combinations(range(8), 3))
    assert expected(probs, picked) >= (1 - 1 / np.e) * best - 1e-12
    # Each step's score is the objective's increase at that step.
    values = [expected(probs, picked[:i]) for i in range(4)]
    assert [s.score for s in lazy.steps] == pytest.approx(np.diff(values))


def test_cost_aware_token_budget_never_exceeded() -> None:
    candidates = pool(
        [[0.9, 0.0], [0.0, 0.8], [0.7, 0.7]],
        costs=np.array([50, 10, 100]),
    )
    selection = ExpectedCoverageSelector(cost_aware=True).select(candidates, Budget(max_tokens=60))
    assert selection.passage_ids == ("p1", "p0")
    assert selection.tokens_used == 60


def test_forbid_and_penalize_excluded_aspects() -> None:
    candidates = pool([[0.9, 0.9], [0.6, 0.0], [0.0, 0.0]], excluded=np.array([False, True]))
    forbid = ExpectedCoverageSelector(power=1.0, exclude="forbid").select(candidates, Budget())
    assert "p0" not in forbid.passage_ids
    penalize = ExpectedCoverageSelector(power=1.0, exclude="penalize").select(candidates, Budget())
    assert penalize.passage_ids[0] == "p1"  # p0's 0.9 on a0 minus 1 penalty < p1's 0.6
    assert penalize.passage_ids[-1] == "p0"  # penalised passages come last in the fallback


def test_parse_and_errors() -> None:
    assert repr(parse_selector("expected-coverage(power=2)")) == "expected-coverage(power=2)"
    with pytest.raises(ConfigError, match="power"):
        ExpectedCoverageSelector(power=0)
    with pytest.raises(ConfigError, match="optimizer"):
        ExpectedCoverageSelector(optimizer="fast")
    with pytest.raises(ConfigError, match="coverage matrix"):
        ExpectedCoverageSelector().select(
            Candidates("q", "q", (Passage("p", "t"),)), Budget(max_passages=1)
        )


def test_represent_prefers_the_passage_that_stands_for_the_pool() -> None:
    # p0 and p1 tie on coverage (0.5 on a0); p1 stands for itself and two copies (e1), p0 only
    # for itself. Coverage alone keeps pool order (p0); with represent, p1 also gains its
    # facility-location term: 3 / 5 against p0's 1 / 5.
    e1, e2, e3, e4 = np.eye(4)
    embeddings = np.array([e2, e1, e1, e1, e3 + e4])
    candidates = pool([[0.5], [0.5], [0.0], [0.0], [0.0]], embeddings=embeddings)
    budget = Budget(max_passages=1)
    plain = ExpectedCoverageSelector(power=1.0).select(candidates, budget)
    assert plain.passage_ids == ("p0",)
    for optimizer in ("naive", "lazy"):
        selector = ExpectedCoverageSelector(
            power=1.0, represent=1.0, similarity="embedding", contrast=None, optimizer=optimizer
        )
        selection = selector.select(candidates, budget)
        assert selection.passage_ids == ("p1",)
        assert selection.steps[0].score == pytest.approx(0.5 + 3 / 5)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("targets", "scale"), [("all", "fixed"), ("supported", "uncertain")])
def test_represent_keeps_the_greedy_bound(seed: int, targets: str, scale: str) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.random((8, 3)) ** 2
    vectors = rng.normal(size=(8, 4))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = np.maximum(vectors @ vectors.T, 0.0)
    candidates = pool(probs.tolist(), relevance=rng.random(8).tolist(), embeddings=vectors)
    # Written out from the definitions: each passage counts as its likeliest aspect's
    # probability, and the weight shrinks by the share of aspects their best passage misses.
    counts = probs.max(axis=1) if targets == "supported" else np.ones(8)
    weight = 2.0 * (1 - probs.max(axis=0).mean() if scale == "uncertain" else 1.0)

    def value(picked: tuple[int, ...]) -> float:
        located = (sim[list(picked)].max(axis=0) * counts).sum() / 8 if picked else 0.0
        return expected(probs, picked) + weight * float(located)

    selector = ExpectedCoverageSelector(
        power=1.0,
        represent=2.0,
        targets=targets,
        scale=scale,
        similarity="embedding",
        contrast=None,
        optimizer="lazy",
    )
    selection = selector.select(candidates, Budget(max_passages=3))
    picked = tuple(int(p[1:]) for p in selection.passage_ids)
    best = max(value(s) for s in itertools.combinations(range(8), 3))
    assert value(picked) >= (1 - 1 / np.e) * best - 1e-9
    assert [s.score for s in selection.steps] == pytest.approx(
        np.diff([value(picked[:i]) for i in range(4)]), rel=1e-5
    )


def test_supported_targets_leave_passages_tied_to_no_aspect_unrepresented() -> None:
    # p0 covers a0 a little; p1-p3 are three copies of a point no aspect is about. Counting
    # every passage, the term makes p1 (standing for three) the first pick; counting each by
    # its likeliest aspect, p1-p3 count for nothing and p0 is first.
    e1, e2 = np.eye(2)
    candidates = pool([[0.3], [0.0], [0.0], [0.0]], embeddings=np.array([e1, e2, e2, e2]))
    budget = Budget(max_passages=1)

    def first(targets: str) -> str:
        selector = ExpectedCoverageSelector(
            power=1.0, represent=4.0, targets=targets, similarity="embedding", contrast=None
        )
        return selector.select(candidates, budget).passage_ids[0]

    assert first("all") == "p1"
    assert first("supported") == "p0"


def test_the_uncertain_scale_fades_where_every_aspect_has_a_sure_passage() -> None:
    e1, e2 = np.eye(2)
    embeddings = np.array([e1, e2, e2, e2])
    budget = Budget(max_passages=2)
    sure = pool([[1.0, 0.0], [0.0, 1.0], [0.0, 0.2], [0.0, 0.2]], embeddings=embeddings)
    settings: dict[str, Any] = dict(
        power=1.0, represent=50.0, similarity="embedding", contrast=None
    )
    plain = ExpectedCoverageSelector(power=1.0).select(sure, budget)
    assert plain.passage_ids == ("p0", "p1")
    faded = ExpectedCoverageSelector(scale="uncertain", **settings).select(sure, budget)
    assert faded.passage_ids == plain.passage_ids
    assert [s.score for s in faded.steps] == [s.score for s in plain.steps]
    # Unsure of a1 (best 0.5): the weight is 50 x 0.25, and p1, standing for itself and its
    # two copies, comes first: 0.5 + 12.5 x 3 / 4 against p0's 1 + 12.5 / 4.
    unsure = pool([[1.0, 0.0], [0.0, 0.5], [0.0, 0.2], [0.0, 0.2]], embeddings=embeddings)
    picked = ExpectedCoverageSelector(scale="uncertain", **settings).select(unsure, budget)
    assert picked.passage_ids[0] == "p1"
    assert picked.steps[0].score == pytest.approx(0.5 + 12.5 * 3 / 4)
    assert uncovered_share(np.array([[1.0, 0.0], [0.0, 0.5]]), np.array([1.0, 1.0])) == 0.25
    assert uncovered_share(np.array([[0.5]]), np.array([0.0])) == 0.0


def test_a_penalised_passage_does_not_win_back_its_penalty_through_the_term() -> None:
    # p0-p2 are one point and each covers the excluded a1 (penalty 2 each); p3 covers nothing
    # excluded. The term is worth 2 x 3 / 4 to p0: before, only the coverage part lost the
    # penalty (clipped at 0), so p0 still came first with 1.5; now the whole gain loses it
    # (0.3 + 1.5 - 2 < 0) and p3 comes first with 0.2 + 2 x 1 / 4.
    e1, e2 = np.eye(2)
    candidates = pool(
        [[0.3, 0.9], [0.0, 0.9], [0.0, 0.9], [0.2, 0.0]],
        embeddings=np.array([e1, e1, e1, e2]),
        excluded=np.array([False, True]),
    )
    budget = Budget(max_passages=1)
    settings: dict[str, Any] = dict(
        power=1.0, represent=2.0, similarity="embedding", contrast=None, penalty=2.0
    )
    assert ExpectedCoverageSelector(**settings).select(candidates, budget).passage_ids == ("p0",)
    penalised = ExpectedCoverageSelector(exclude="penalize", **settings).select(candidates, budget)
    assert penalised.passage_ids == ("p3",)
    assert penalised.steps[0].score == pytest.approx(0.2 + 2 * 1 / 4)


def test_represent_settings_and_what_they_read() -> None:
    assert ExpectedCoverageSelector().reads == (Input("coverage"),)  # coverage alone
    same_point = ExpectedCoverageSelector(represent=1.0, similarity_model="same-point-minilm")
    assert same_point.reads == (Input("coverage"), Input("same-point", "same-point-minilm"))
    embedding = ExpectedCoverageSelector(represent=1.0, similarity="embedding")
    assert embedding.needs("embeddings") and not embedding.needs("same-point")
    assert parse_selector("facility-location(similarity='same-point')").needs("same-point")
    assert parse_selector("facility-location").reads == (Input("embeddings"),)
    assert parse_selector("facility-location(similarity='coverage')").reads == (Input("coverage"),)
    with pytest.raises(ConfigError, match="represent"):
        ExpectedCoverageSelector(represent=-1.0)
    with pytest.raises(ConfigError, match="similarity"):
        ExpectedCoverageSelector(represent=1.0, similarity="coverage")
    with pytest.raises(ConfigError, match="contrast"):
        ExpectedCoverageSelector(contrast=float("nan"))
    with pytest.raises(ConfigError, match="targets must be one of"):
        ExpectedCoverageSelector(targets="covered")
    with pytest.raises(ConfigError, match="scale must be one of"):
        ExpectedCoverageSelector(scale="adaptive")


def test_represent_refuses_a_pool_too_large_for_its_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    import covrag.selectors.expected as expected_module

    monkeypatch.setattr(expected_module, "MAX_POOL", 2)
    candidates = pool([[0.5], [0.4], [0.3]], embeddings=np.eye(3))
    selector = ExpectedCoverageSelector(represent=1.0, similarity="embedding")
    with pytest.raises(ConfigError, match="3 passages exceed its limit of 2"):
        selector.select(candidates, Budget(max_passages=1))
    assert ExpectedCoverageSelector().select(candidates, Budget(max_passages=1)).passage_ids
