"""LMVU: features on a hand-computed example, the pairwise fit, budgets, and `covrag-lab fit
lmvu`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from covrag.cli import main
from covrag.errors import ConfigError, DataError
from covrag.selectors import Candidates, LMVUSelector
from covrag.selectors.lmvu import FEATURES, FeatureState, LMVUModel
from covrag.text import split_sentences
from covrag.types import Budget, Passage
from covrag_lab.cli import main as lab_main
from covrag_lab.cli.train import parse_dataset_weights
from covrag_lab.train.lmvu import StateConfig, TrainingSet
from test_select_properties import budgets, pools


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=float)
    return v / np.linalg.norm(v)


def example_state() -> FeatureState:
    # Three passages in 2-d; passage 0 has two pieces, passages 1 and 2 one each.
    embeddings = np.stack([unit(1, 0), unit(0, 1), unit(1, 1)])
    pieces = np.stack([unit(1, 0), unit(0, 1), unit(0, 1), unit(1, 1)])
    return FeatureState(
        embeddings=embeddings,
        query_embedding=unit(1, 0),
        scores=np.array([3.0, 2.0, 1.0]),
        costs=np.array([10, 20, 30]),
        piece_embeddings=pieces,
        piece_owner=np.array([0, 0, 1, 2]),
        max_tokens=100,
    )


def test_features_of_the_empty_state() -> None:
    f = dict(zip(FEATURES, example_state().features()[0], strict=True))
    assert (f["retriever_score"], f["length"], f["n_pieces"]) == (3.0, 10.0, 2.0)
    assert f["query_cosine"] == pytest.approx(1.0)
    assert (f["max_sim"], f["mean_sim"], f["min_sim"], f["dot_mean_selected"]) == (0, 0, 0, 0)
    assert f["novelty"] == 1.0 and f["piece_one_minus_max"] == 1.0
    assert (f["n_selected"], f["tokens_used"], f["tokens_left"]) == (0, 0, 100)


def test_features_after_one_pick_match_hand_computation() -> None:
    state = example_state()
    state.add(1)  # select passage 1 = (0, 1); its only piece is (0, 1)
    features = state.features()
    f0 = dict(zip(FEATURES, features[0], strict=True))
    # passage 0 = (1, 0): cosine 0 to the selection
    assert (f0["max_sim"], f0["mean_sim"], f0["min_sim"], f0["novelty"]) == (0, 0, 0, 1)
    # its pieces (1,0) and (0,1): max cosines to the selected piece are 0 and 1
    assert f0["piece_mean_max_sim"] == pytest.approx(0.5)
    assert f0["piece_max_max_sim"] == pytest.approx(1.0)
    assert f0["piece_one_minus_max"] == pytest.approx(0.0)
    assert f0["piece_mean_novelty"] == pytest.approx(0.5)
    assert f0["piece_max_novelty"] == pytest.approx(1.0)
    f2 = dict(zip(FEATURES, features[2], strict=True))
    c = 1 / np.sqrt(2)
    assert f2["max_sim"] == pytest.approx(c) and f2["novelty"] == pytest.approx(1 - c)
    assert f2["dot_mean_selected"] == pytest.approx(c)
    assert (f2["n_selected"], f2["tokens_used"], f2["tokens_left"]) == (1, 20, 80)
    assert f2["mean_selected_score"] == 2.0
    state.add(2)
    f0 = dict(zip(FEATURES, state.features()[0], strict=True))
    assert f0["max_sim"] == pytest.approx(c) and f0["min_sim"] == pytest.approx(0.0)
    assert f0["mean_sim"] == pytest.approx(c / 2)
    # selected pieces now (0,1) and (1,1)/sqrt2: piece (1,0) -> max(0, c) = c, (0,1) -> 1
    assert f0["piece_mean_max_sim"] == pytest.approx((c + 1) / 2)
    assert f0["piece_max_novelty"] == pytest.approx(1 - c)


def test_sentence_splitter() -> None:
    assert split_sentences("One. Two! 3 three? four") == ["One.", "Two!", "3 three? four"]
    assert split_sentences("no end") == ["no end"]


def synthetic_training(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, len(FEATURES)))
    novelty = FEATURES.index("novelty")
    y = np.round(2 * X[:, novelty] + rng.normal(scale=0.3, size=600))
    groups = np.repeat(np.arange(30), 20)
    return X, y, groups


def test_pairwise_fit_follows_sklearn_contract_and_learns_the_signal(tmp_path: Path) -> None:
    X, y, groups = synthetic_training()
    model = LMVUModel(l2=0.1)
    assert model.fit(X, y, groups) is model
    novelty = FEATURES.index("novelty")
    assert np.argmax(np.abs(model.coef_)) == novelty and model.coef_[novelty] > 0
    path = tmp_path / "m.json"
    model.save(path, note="test")
    loaded = LMVUModel.load(path)
    assert np.allclose(loaded.decision_function(X), model.decision_function(X))
    assert loaded.card_ == {"note": "test"}


def test_m0_control_and_bad_inputs() -> None:
    X, y, groups = synthetic_training()
    m0 = LMVUModel(features=("retriever_score", "query_cosine", "length")).fit(X, y, groups)
    assert np.count_nonzero(m0.coef_) <= 3
    with pytest.raises(ConfigError, match="unknown LMVU features"):
        LMVUModel(features=("nope",)).fit(X, y, groups)
    with pytest.raises(DataError, match="nothing to fit"):
        LMVUModel().fit(X[:5], np.zeros(5), np.zeros(5, dtype=int))


def test_sample_weights_act_like_repeated_states() -> None:
    X, y, groups = synthetic_training()
    # Weight 3 on the first 10 states == those states present three times (all pairs kept).
    weight = np.where(groups < 10, 3.0, 1.0)
    weighted = LMVUModel(max_pairs_per_state=10_000).fit(X, y, groups, sample_weight=weight)
    first = groups < 10
    X3 = np.concatenate([X, X[first], X[first]])
    y3 = np.concatenate([y, y[first], y[first]])
    g3 = np.concatenate([groups, groups[first] + 100, groups[first] + 200])
    repeated = LMVUModel(max_pairs_per_state=10_000).fit(X3, y3, g3)
    assert np.allclose(weighted.mean_, repeated.mean_) and np.allclose(
        weighted.scale_, repeated.scale_
    )
    assert np.allclose(weighted.coef_, repeated.coef_, atol=1e-4)
    unweighted = LMVUModel(max_pairs_per_state=10_000).fit(X, y, groups)
    assert not np.allclose(weighted.coef_, unweighted.coef_, atol=1e-4)
    with pytest.raises(DataError, match="sample_weight"):
        LMVUModel().fit(X, y, groups, sample_weight=-weight)
    with pytest.raises(DataError, match="zero everywhere"):
        LMVUModel().fit(X, y, groups, sample_weight=0 * weight)


def test_training_sets_join_weigh_and_round_trip(tmp_path: Path) -> None:
    X, y, groups = synthetic_training()
    a = TrainingSet(X[:200], y[:200], groups[:200], ("a",), np.zeros(200, dtype=np.int64))
    b = TrainingSet(X[200:], y[200:], groups[200:] - 10, ("b",), np.zeros(400, dtype=np.int64))
    both = TrainingSet.concat([a, b])
    assert both.datasets == ("a", "b") and both.n_states == 30
    assert both.states_of("a") == 10 and both.states_of("b") == 20
    assert list(np.unique(both.sample_weight({"a": 3}))) == [1.0, 3.0]
    assert (both.sample_weight({"a": 3})[:200] == 3).all()
    with pytest.raises(ConfigError, match="not in the training set"):
        both.sample_weight({"c": 2})
    path = tmp_path / "states" / "a.npz"
    both.save(path, StateConfig())
    loaded = TrainingSet.load(path, StateConfig())
    assert loaded is not None and loaded.datasets == both.datasets
    assert np.array_equal(loaded.X, both.X) and np.array_equal(loaded.source, both.source)
    assert TrainingSet.load(path, StateConfig(max_steps=3)) is None  # other settings: rebuild
    assert [p.name for p in path.parent.iterdir()] == ["a.npz"]  # no temporary file left
    path.write_bytes(b"not npz")
    with pytest.raises(DataError, match="training-state file"):
        TrainingSet.load(path, StateConfig())


def test_dataset_weight_option_is_checked() -> None:
    assert parse_dataset_weights(["argkp2021:train=3", "x=0.5"]) == {
        "argkp2021:train": 3.0,
        "x": 0.5,
    }
    for bad in ("argkp2021:train", "=3", "a=-1", "a=many"):
        with pytest.raises(ConfigError, match="NAME=W"):
            parse_dataset_weights([bad])


def test_bad_model_file(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"format": "other"}))
    with pytest.raises(DataError, match="not an LMVU model"):
        LMVUModel.load(path)
    with pytest.raises(ConfigError, match="no LMVU model"):
        LMVUSelector(model=str(tmp_path / "missing.json")).select(
            Candidates("q", "x", (Passage("p", "t", tokens=1),)), Budget(1)
        )


@settings(max_examples=60, deadline=None)
@given(pools(), budgets)
def test_lmvu_never_exceeds_its_budget_and_fills_it(candidates: Candidates, budget: Budget) -> None:
    rng = np.random.default_rng(len(candidates))
    if candidates.embeddings is None:
        return
    query = candidates.query_embedding
    if query is None:
        query = rng.normal(size=candidates.embeddings.shape[1])
        query /= np.linalg.norm(query)
        candidates = dataclasses.replace(candidates, query_embedding=query)
    selection = LMVUSelector().select(candidates, budget)
    ids = selection.passage_ids
    assert len(set(ids)) == len(ids)
    if budget.max_passages is not None:
        assert len(ids) <= budget.max_passages
    if budget.max_tokens is not None:
        assert selection.tokens_used <= budget.max_tokens
        left = budget.max_tokens - selection.tokens_used
        chosen = set(ids)
        if budget.max_passages is None or len(ids) < budget.max_passages:
            assert all(
                p.id in chosen or candidates.costs[i] > left
                for i, p in enumerate(candidates.passages)
            )


@pytest.mark.model
def test_fit_lmvu_cli_on_a_small_slice(tmp_path: Path, write_jsonl, capsys) -> None:  # type: ignore[no-untyped-def]
    from covrag.data import load_dataset
    from covrag.data.jsonl import topic_to_record

    records = []
    for topic in load_dataset("perspectrum-evidence:train")[:6]:
        records.append(topic_to_record(topic))
    data = write_jsonl(records)
    out = tmp_path / "lmvu.json"
    cache = tmp_path / "states"
    args = ["fit", "lmvu", "--dataset", str(data), "--out", str(out), "--budgets", "512"]
    assert lab_main([*args, "--states-cache", str(cache)]) == 0
    model = LMVUModel.load(out)
    assert model.card_["states"] > 10 and model.card_["datasets"] == [str(data)]
    assert model.card_["dataset_weights"] == {str(data): 1.0}
    assert len(list(cache.glob("*.npz"))) == 1
    # Second fit reads the cached states: same states, same model.
    again = tmp_path / "again.json"
    assert (
        lab_main([*args[:4], "--out", str(again), "--budgets", "512", "--states-cache", str(cache)])
        == 0
    )
    assert np.allclose(LMVUModel.load(again).coef_, model.coef_)
    assert lab_main([*args, "--dataset-weight", "other=2"]) == 2
    assert "not among --dataset" in capsys.readouterr().err
    run = tmp_path / "run.trec"
    assert (
        main(
            [
                "select",
                "--dataset",
                str(data),
                "--selector",
                f"lmvu(model={str(out)!r})",
                "--budget-tokens",
                "512",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    assert run.read_text().count("\n") >= 6
