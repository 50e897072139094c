"""``covrag eval --qrels``: scoring a TREC run against a TREC diversity qrels file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from covrag.cli import main
from covrag.data import load_dataset, write_run
from covrag.evaluation.qrels import topic_qrels, write_qrels

MEASURES = ["alpha-nDCG@10", "alpha-nDCG(alpha=0.7)@5", "StRecall@10", "P@10", "nDCG@10"]


def _values(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict[str, Any]:
    """The means and per-query values ``covrag eval --json`` prints."""
    capsys.readouterr()
    assert main(["eval", *args, "--measures", *MEASURES, "--json", "--per-query"]) == 0
    payload = json.loads(capsys.readouterr().out)
    return {"means": payload["means"], "per_query": payload["per_query"]}


def test_qrels_give_the_datasets_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topics = load_dataset("argkp2021:dev")
    qrels, run = tmp_path / "dev.qrels", tmp_path / "run.trec"
    write_qrels(qrels, topic_qrels(topics))
    # A run with judged, relevant and unjudged passages, in the order the dataset lists them.
    write_run(run, {t.query_id: [*(p.id for p in t.passages[:12]), "unjudged"] for t in topics})
    from_dataset = _values(capsys, ["--dataset", "argkp2021:dev", "--run", str(run)])
    from_qrels = _values(capsys, ["--qrels", str(qrels), "--run", str(run)])
    assert from_qrels == from_dataset
    assert 0 < from_qrels["means"]["alpha-nDCG@10"] < 1


def test_qrels_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = tmp_path / "bad.qrels", tmp_path / "run.trec"
    qrels.write_text("q1 a d1 1\nq1 a d2\n")
    write_run(run, {"q1": ["d1"]})
    assert main(["eval", "--qrels", str(qrels), "--run", str(run)]) == 2
    assert f"{qrels}, line 2: expected 4 columns" in capsys.readouterr().err
    qrels.write_text("q1 a d1 1\n")
    args = ["eval", "--qrels", str(qrels), "--run", str(run), "--exclude-aspects", "a"]
    assert main(args) == 2
    assert "--exclude-aspects needs --dataset" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # one source of judgments, not two
        main(["eval", "--qrels", str(qrels), "--dataset", "argkp2021:dev", "--run", str(run)])
