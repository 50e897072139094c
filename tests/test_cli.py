from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.data import read_run


def test_select_then_eval_greedy_gold_matches_ir_measures(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("pyndeval")
    from covrag.data import load_dataset
    from covrag.evaluation.qrels import run_to_ir_measures, to_ir_measures, topic_qrels

    run_path = tmp_path / "greedy.trec"
    run_json = tmp_path / "run.json"
    args = ["select", "--dataset", "argkp2021:dev", "--selector", "greedy-coverage"]
    args += ["--coverage", "gold", "--k", "10", "--out", str(run_path), "--run-json", str(run_json)]
    assert main(args) == 0
    run = read_run(run_path)
    assert len(run) == 4 and all(len(docs) == 10 for docs in run.values())
    steps = [t["selection"]["steps"] for t in json.loads(run_json.read_text())["topics"]]
    assert all(step[0]["newly_covered"] for step in steps)

    qrels = to_ir_measures(topic_qrels(load_dataset("argkp2021:dev")))
    reference = ir_measures.calc_aggregate(
        [ir_measures.parse_measure("alpha_nDCG@10")], qrels, run_to_ir_measures(run)
    )
    value = next(iter(reference.values()))
    assert value > 0.8  # greedy on the true labels; random is about 0.4

    capsys.readouterr()
    assert main(["eval", "--dataset", "argkp2021:dev", "--run", str(run_path), "--json"]) == 0
    means = json.loads(capsys.readouterr().out)["means"]
    assert means["alpha-nDCG@10"] == pytest.approx(value, abs=1e-9)


def test_select_errors_are_clear_and_write_nothing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "run.trec"
    code = main(
        ["select", "--dataset", "argkp2021:dev", "--selector", "greedy-covrage", "--out", str(out)]
    )
    assert code == 2
    assert "did you mean greedy-coverage" in capsys.readouterr().err
    code = main(
        ["select", "--dataset", "argkp2021:dev", "--selector", "greedy-coverage", "--out", str(out)]
    )
    assert code == 2
    assert "needs a coverage matrix" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q", "query": "x", "passages": [], "aspects": [}\n')
    assert main(["select", "--dataset", str(bad), "--selector", "topk", "--out", str(out)]) == 2
    assert "line 1" in capsys.readouterr().err
    assert not out.exists()


def test_bench_writes_runs_and_summary(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = [
        "bench",
        "--dataset",
        "perspectrum-evidence:dev",
        "--selectors",
        "random",
        "topk",
        "greedy-coverage(cost_aware=True)",
        "--coverage",
        "gold",
        "--budgets",
        "tokens=512",
        "--relevance",
        "order",
        "--out",
        str(tmp_path / "bench"),
        "--json",
    ]
    assert main(args) == 0
    summary = json.loads((tmp_path / "bench" / "summary.json").read_text())
    rows = {r["method"]: r for r in summary["results"]}
    assert set(rows) == {
        "random",
        "topk",
        "greedy-coverage(cost_aware=True) @ gold",
        "exact @ gold",
    }
    greedy = rows["greedy-coverage(cost_aware=True) @ gold"]
    exact = rows["exact @ gold"]
    assert (
        exact["means"]["RVC@512"] >= greedy["means"]["RVC@512"] > rows["random"]["means"]["RVC@512"]
    )
    assert greedy["p_vs_baseline_holm"]["RVC@512"] < 0.05
    assert 0 < greedy["gap_closed"]["RVC@512"] <= 1
    runs = sorted(p.name for p in (tmp_path / "bench" / "runs").iterdir())
    assert len(runs) == 4 and all(name.endswith("__tokens=512.trec") for name in runs)
    printed = json.loads(capsys.readouterr().out)
    assert "per_query" not in printed["results"][0]


def test_bad_budget_spec(capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["bench", "--dataset", "argkp2021:dev", "--selectors", "topk", "--budgets", "k=ten"]
    assert main(args) == 2
    assert "use k=N, tokens=N" in capsys.readouterr().err
