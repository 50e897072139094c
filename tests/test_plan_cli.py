from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.data import read_run

TINY = "local(model='smollm2')"


@pytest.mark.slow
@pytest.mark.model
def test_select_with_pool_aspects_writes_a_run(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("sentence_transformers")
    out = tmp_path / "run.trec"
    args = ["select", "--dataset", "argkp2021:dev", "--selector", "greedy-coverage"]
    args += ["--coverage", "embedding", "--aspects", "pool", "--out", str(out)]
    assert main(args) == 0
    run = read_run(out)
    assert len(run) == 4 and all(len(docs) == 10 for docs in run.values())
    # gold coverage cannot be estimated against other aspects
    args = ["bench", "--dataset", "argkp2021:dev", "--selectors", "greedy-coverage"]
    assert main([*args, "--coverage", "gold", "--aspects", "pool"]) == 2
    assert "cannot be estimated against pool aspects" in " ".join(capsys.readouterr().err.split())


@pytest.mark.slow
def test_plan_command_runs_every_step_on_the_tiny_model(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path))  # a fresh response cache
    args = ["plan", "Describe the film Jaws, but skip the reviews.", "--llm", TINY]
    args += ["--subquestions", "3", "--depth", "2", "--branching", "2"]
    args += ["--tree", "--json"]
    args += ["--exclude", "reviews"]
    code = main(args)
    captured = capsys.readouterr()
    if code == 2:  # the 135M model failed a step's checks: the error shows its replies
        err = " ".join(captured.err.split())
        assert re.search(r"the LLM gave no valid answer in \d+ attempts", err) and "got:" in err
        return
    assert code == 0, captured.err
    assert (tmp_path / "llm-cache.sqlite").exists()
    plan = json.loads(captured.out)
    assert plan["exclude"] == ["reviews"]
    top = [n for n in plan["tree"] if "." not in n["id"]]
    assert len(top) == 2 and len(plan["tree"]) <= 6
    assert (len(plan["tree"]) < 6) == bool(plan["tree_notes"])
    assert len(plan["candidates"]) == 2
    assert all(c["score"] in (1, 2, 3, 4, 5) and c["rationale"] for c in plan["candidates"])
    assert plan["best"]["score"] == max(c["score"] for c in plan["candidates"])
    assert plan["random_baseline"]["source"] == "random"
    assert plan["llm_usage"]["calls"] + plan["llm_usage"]["cached_calls"] >= 6


@pytest.mark.slow
def test_plan_without_tree_prints_only_the_split_and_sub_questions(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path))
    args = ["plan", "Should cities ban cars?", "--llm", TINY, "--subquestions", "2", "--json"]
    args += ["--exclude", "parking fees"]
    code = main(args)
    captured = capsys.readouterr()
    if code == 2:  # the 135M model failed the decomposer's checks: the error shows its replies
        err = " ".join(captured.err.split())
        assert "the LLM gave no valid answer" in err and "got:" in err
        return
    assert code == 0, captured.err
    plan = json.loads(captured.out)
    assert "tree" not in plan and "best" not in plan
    assert plan["exclude"] == ["parking fees"]
    assert 1 <= len(plan["subquestions"]) <= 2
    assert all(q.endswith("?") for q in plan["subquestions"])
    # the rerun is answered from the response cache and the decomposition memo
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["subquestions"] == plan["subquestions"]
