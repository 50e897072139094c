"""The reader's labels of technical answer sentences (benchmarks/answers/support) hold together:
each pair's context is stored, its passage is the context's, and every label is one of three."""

from __future__ import annotations

import json
from pathlib import Path

SUPPORT = Path(__file__).resolve().parents[1] / "benchmarks" / "answers" / "support"


def _jsonl(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (SUPPORT / name).read_text("utf-8").splitlines()]


def test_every_labelled_pair_has_its_context_and_a_known_label() -> None:
    contexts = {c["context"]: c["passages"] for c in _jsonl("contexts.jsonl")}
    rows = _jsonl("labels.jsonl")
    assert len(rows) == 281
    for row in rows:
        assert row["label"] in {"supported", "partial", "unsupported"}, row["n"]
        assert row["label"] == "supported" or row["reason"], row["n"]
        passages = {p["id"]: p["text"] for p in contexts[row["context"]]}  # type: ignore[attr-defined]
        if row["passage_id"] in passages:
            assert passages[row["passage_id"]] == row["passage"], row["n"]
    assert sorted(r["n"] for r in rows) == list(range(1, 282))
