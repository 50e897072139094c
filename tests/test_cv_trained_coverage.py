"""Cross-validation with a cross-encoder trained per fold: a real (tiny) training per fold."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from covrag.coverage.cross_encoder import CrossEncoderCoverage
from covrag.data import load_dataset
from covrag.errors import ConfigError
from covrag.pipeline import Method, PrepareConfig
from covrag.selectors import parse_selector
from covrag.types import Budget, Topic
from covrag_lab.cv import CVConfig, run_cv
from covrag_lab.train.coverage import TrainConfig
from covrag_lab.train.cv_coverage import EXPORT, TrainedCoverage, fold_models

pytestmark = pytest.mark.model

TINY = TrainConfig(batch_size=8, epochs=0.1, checkpoint_every=0)


def trimmed(topic: Topic, n: int = 12) -> Topic:
    """The topic with its first ``n`` passages (and their labels) only."""
    passages = topic.passages[:n]
    kept = {p.id for p in passages}
    labels = {p: a for p, a in topic.labels.items() if p in kept}
    non_labels = {p: a for p, a in topic.non_labels.items() if p in kept}
    return dataclasses.replace(topic, passages=passages, labels=labels, non_labels=non_labels)


@pytest.fixture(scope="module")
def forms() -> dict[str, dict[str, Topic]]:
    return {
        form: {t.query_id: trimmed(t) for t in load_dataset(f"argkp2021:dev:{form}")[:3]}
        for form in ("statements", "questions")
    }


def test_each_fold_trains_its_own_model_on_its_training_topics_only(
    forms: dict[str, dict[str, Topic]], tmp_path: Path
) -> None:
    method = Method(parse_selector("expected-coverage"), CrossEncoderCoverage())
    setting = TrainedCoverage(method, forms, ("statements", "questions"), TINY, tmp_path)
    topics = list(forms["questions"].values())
    cv = CVConfig(folds=3, n_resamples=50)
    k5, order = Budget(max_passages=5), PrepareConfig(relevance="order")
    result = run_cv("t", topics, [setting], k5, cv, config=order)
    folders = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 3  # one model per fold, each used for its fold's choice and test
    for fold in result.fold_results:
        train = sorted(set(result.fold_of) - set(fold.test_topics))
        folder = tmp_path / setting.key(train)
        card = json.loads((folder / "model" / "training_card.json").read_text())
        assert card["notes"][-1].endswith(", ".join(train))
        assert set(card["train_pairs"]) == {"statements", "questions"}
        assert str(folder / EXPORT) in fold.method
    assert len(set(result.settings[0].fitted_methods)) == 3
    found = fold_models(tmp_path, ["statements", "questions"])
    assert found == {
        frozenset(set(result.fold_of) - set(f.test_topics)): tmp_path
        / setting.key(sorted(set(result.fold_of) - set(f.test_topics)))
        / EXPORT
        for f in result.fold_results
    }
    assert fold_models(tmp_path, ["statements"]) == {}
    stamps = {p: (p / EXPORT).stat().st_mtime_ns for p in folders}
    run_cv("t", topics, [setting], k5, cv, config=order)
    assert {p: (p / EXPORT).stat().st_mtime_ns for p in folders} == stamps  # reused, not retrained
    # a fold cached before the weights were stored as uint8 is exported again, not retrained
    old = folders[0]
    (old / EXPORT).rename(old / "onnx")
    models = {p: (p / "model" / "model.safetensors").stat().st_mtime_ns for p in folders}
    run_cv("t", topics, [setting], k5, cv, config=order)
    assert (old / EXPORT / "model.int8.onnx").is_file()
    assert {p: (p / "model" / "model.safetensors").stat().st_mtime_ns for p in folders} == models


def test_the_pairs_come_from_each_training_form(forms: dict[str, dict[str, Topic]]) -> None:
    method = Method(parse_selector("expected-coverage"), CrossEncoderCoverage())
    setting = TrainedCoverage(method, forms, ("questions",), TINY, Path("unused"))
    train = sorted(forms["questions"])[:2]
    pairs = setting.pairs(train)["questions"]
    questions = {a.text for q in train for a in forms["questions"][q].aspects}
    assert pairs and {p.aspect for p in pairs} <= questions
    assert {p.query_id for p in pairs} == set(train)
    assert setting.key(train) != setting.key(sorted(forms["questions"])[1:])
    other = TrainedCoverage(method, forms, ("statements",), TINY, Path("unused"))
    assert setting.key(train) != other.key(train)


def test_a_trained_setting_needs_a_cross_encoder_and_known_forms(
    forms: dict[str, dict[str, Topic]],
) -> None:
    with pytest.raises(ConfigError, match="needs a cross-encoder"):
        TrainedCoverage(
            Method(parse_selector("greedy-coverage"), None), forms, ("statements",), TINY, Path("x")
        )
    method = Method(parse_selector("expected-coverage"), CrossEncoderCoverage())
    with pytest.raises(ConfigError, match="cannot train on paraphrases"):
        TrainedCoverage(method, forms, ("paraphrases",), TINY, Path("x"))
