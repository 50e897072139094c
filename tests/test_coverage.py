from __future__ import annotations

import numpy as np
import pytest

from covrag.coverage import EmbeddingCoverage, GoldCoverage, parse_estimator
from covrag.errors import ConfigError, DataError
from covrag.types import Aspect, Passage, Topic


def make_topic(labels: bool = True) -> Topic:
    passages = (
        Passage("p1", "Electric cars are cheap to run because electricity costs less than fuel."),
        Passage("p2", "Charging stations are still rare in rural areas."),
        Passage("p3", "The weather in Lisbon is mild in winter."),
    )
    aspects = (
        Aspect("a1", "Electric cars are cheap to run because electricity costs less than fuel."),
        Aspect("a2", "Is charging infrastructure available?"),
    )
    gold = {"p1": frozenset({"a1"}), "p2": frozenset({"a2"}), "p3": frozenset()}
    return Topic(
        "q", "Is an electric car worth buying?", passages, aspects, labels=gold if labels else {}
    )


def test_gold_coverage_is_the_label_matrix() -> None:
    matrix = GoldCoverage().estimate(make_topic())
    assert matrix.covered.tolist() == [[True, False], [False, True], [False, False]]
    assert matrix.source == "gold"
    with pytest.raises(DataError, match="no gold labels"):
        GoldCoverage().estimate(make_topic(labels=False))


@pytest.mark.model
def test_embedding_coverage_scores_every_pair_with_the_packaged_model() -> None:
    estimator = parse_estimator("embedding(threshold=0.9)")
    assert isinstance(estimator, EmbeddingCoverage)
    matrix = estimator.estimate(make_topic())
    assert matrix.shape == (3, 2)
    assert matrix.pairs_scored == 6
    assert matrix.probs[0, 0] == pytest.approx(1.0, abs=1e-4)  # identical text
    assert matrix.probs[1, 1] > matrix.probs[2, 1]  # charging passage closer to charging aspect
    assert matrix.covered[:, 0].tolist() == [True, False, False]
    assert repr(estimator) == "embedding(threshold=0.9)"
    assert np.all((matrix.probs >= 0) & (matrix.probs <= 1))


def test_estimator_specs_are_validated() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        parse_estimator("embedding(threshold=3)")
    with pytest.raises(ConfigError, match="unknown coverage estimator"):
        parse_estimator("oracle")
