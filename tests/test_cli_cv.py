"""``covrag-lab cv`` end to end on ArgKP train + dev with the gold labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag_lab.cli import main


def test_cv_runs_on_argkp_train_and_dev(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "cv"
    args = ["cv", "--dataset", "argkp2021", "--selectors", "random", "greedy-coverage"]
    args += ["--coverage", "gold", "--relevance", "order", "--n-resamples", "200"]
    args += ["--dev-report", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "CV estimate of choosing by alpha-nDCG@10" in printed
    assert "chosen without the dev topics (24 topics)" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["topics"] == 28 and summary["folds"] == 5 and summary["seed"] == 0
    assert sorted(summary["fold_of"].values()) == sorted(i % 5 for i in range(28))
    by_name = {s["setting"]: s for s in summary["settings"]}
    assert by_name["greedy-coverage @ gold"]["chosen_folds"] == 5  # far better than random
    procedure = summary["procedure"]["means"]["alpha-nDCG@10"]
    assert procedure == pytest.approx(by_name["greedy-coverage @ gold"]["means"]["alpha-nDCG@10"])
    assert len(summary["dev"]["topics"]) == 4
    assert summary["dev"]["chosen_on_all"]["chosen"] == "greedy-coverage @ gold"


def test_cv_refuses_test_splits_and_too_few_folds(capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["cv", "--dataset", "argkp2021", "--selectors", "random", "--relevance", "order"]
    assert main([*args, "--splits", "train", "test"]) == 2
    assert "test splits are withheld" in capsys.readouterr().err
    assert main([*args, "--folds", "1"]) == 2
    assert "folds must be >= 2" in capsys.readouterr().err
    assert main([*args, "--splits", "dev", "--folds", "5"]) == 2
    assert "folds must lie in [2, 4]" in capsys.readouterr().err


def test_cv_on_train_reports_dev_held_out(capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["cv", "--dataset", "argkp2021", "--splits", "train", "--folds", "3"]
    args += ["--selectors", "topk", "greedy-coverage", "--coverage", "gold"]
    args += ["--relevance", "order", "--n-resamples", "100", "--dev-report", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["topics"] == 24 and summary["folds"] == 3
    assert not set(summary["dev"]["topics"]) & set(summary["fold_of"])
    chosen = summary["dev"]["chosen_on_all"]
    assert chosen["train_topics"] == 24 and len(chosen["values"]) == 4
    assert summary["dev"]["chosen_without_dev"] is None  # dev was held out already
    assert summary["dev"]["dev_cross_validated"] is False


def test_cv_out_is_staged_like_bench(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "cv"
    args = ["cv", "--dataset", "argkp2021", "--splits", "dev", "--folds", "2"]
    args += ["--selectors", "topk", "--relevance", "order", "--n-resamples", "50"]
    args += ["--out", str(out)]
    assert main(args) == 0 and main(args) == 0  # a folder of an earlier run is replaced
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    (out / "notes.txt").write_text("mine")
    assert main(args) == 2
    assert "did not write there (notes.txt)" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"
