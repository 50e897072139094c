from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import Candidates, ClusterSelector, parse_selector
from covrag.selectors.cluster import UNLIMITED_CLUSTERS, default_n_clusters, kmeans
from covrag.types import Budget, Passage

# Group A (p0-p2) near e1, group B (p3, p4) near e2; tight groups far apart.
EMBEDDINGS = np.array([[1.0, 0.0], [0.999, 0.01], [0.998, -0.01], [0.0, 1.0], [0.01, 0.999]])
RELEVANCE = np.array([0.5, 0.9, 0.8, 0.7, 0.6])


def pool(costs: list[int] | None = None) -> Candidates:
    passages = tuple(Passage(id=f"p{i}", text="t") for i in range(len(EMBEDDINGS)))
    return Candidates(
        "q",
        "question",
        passages,
        relevance=RELEVANCE,
        costs=np.array(costs or [0] * len(passages)),
        embeddings=EMBEDDINGS,
    )


def test_kmeans_finds_the_groups_deterministically() -> None:
    for seed in range(5):
        labels = kmeans(EMBEDDINGS, 2, random_state=seed)
        assert len(set(labels[:3])) == 1 and len(set(labels[3:])) == 1
        assert labels[0] != labels[3]
    assert np.array_equal(
        kmeans(EMBEDDINGS, 3, random_state=1), kmeans(EMBEDDINGS, 3, random_state=1)
    )


def test_kmeans_with_fewer_distinct_points_than_clusters() -> None:
    points = np.array([[0.0, 1.0]] * 3 + [[1.0, 0.0]] * 2)
    labels = kmeans(points, 4)
    assert len(set(labels.tolist())) == 2
    assert len(set(labels[:3])) == 1


def test_golden_round_robin() -> None:
    # Round 1: best of A (p1, 0.9), best of B (p3, 0.7); round 2: p2, p4; round 3: p0.
    selection = ClusterSelector(n_clusters=2).select(pool(), Budget())
    assert selection.passage_ids == ("p1", "p3", "p2", "p4", "p0")
    assert [s.score for s in selection.steps] == [0.9, 0.7, 0.8, 0.6, 0.5]


def test_default_clusters_follow_the_budget() -> None:
    selection = ClusterSelector().select(pool(), Budget(max_passages=2))
    assert selection.passage_ids == ("p1", "p3")


def test_a_cluster_whose_best_does_not_fit_offers_its_next() -> None:
    # p1 (30 tokens) does not fit 25: A is represented by p2, then B by p3.
    selection = ClusterSelector(n_clusters=2).select(
        pool([5, 30, 10, 10, 10]), Budget(max_tokens=25)
    )
    assert selection.passage_ids == ("p2", "p3", "p0")
    assert selection.tokens_used == 25


def test_default_n_clusters() -> None:
    candidates = pool([10, 30, 30, 30, 50])  # median cost 30
    assert default_n_clusters(candidates, Budget(max_passages=3)) == 3
    assert default_n_clusters(candidates, Budget(max_tokens=100)) == 3
    assert default_n_clusters(candidates, Budget(max_passages=2, max_tokens=100)) == 2
    assert default_n_clusters(candidates, Budget(max_tokens=10)) == 1
    assert default_n_clusters(candidates, Budget(max_passages=50)) == 5
    assert default_n_clusters(candidates, Budget()) == min(UNLIMITED_CLUSTERS, 5)
    assert default_n_clusters(pool(), Budget(max_tokens=10)) == 5  # costs unknown (0)


def test_validation_and_spec() -> None:
    assert repr(ClusterSelector()) == "cluster"
    assert parse_selector("cluster(n_clusters=3, random_state=2)") == ClusterSelector(
        n_clusters=3, random_state=2
    )
    with pytest.raises(ConfigError):
        ClusterSelector(n_clusters=0)
