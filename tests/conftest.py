from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def topic_record(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "query_id": "q1",
        "query": "Should cities ban cars?",
        "split": "dev",
        "passages": [
            {"id": "p1", "text": "Cars pollute the air.", "aspects": ["a1"]},
            {"id": "p2", "text": "Car bans hurt shops.", "aspects": ["a2"], "non_aspects": ["a1"]},
            {"id": "p3", "text": "Bikes are healthy.", "aspects": []},
        ],
        "aspects": [
            {"id": "a1", "text": "pollution", "stance": "pro"},
            {"id": "a2", "text": "economy", "stance": "con"},
        ],
    }
    record.update(overrides)
    return record


@pytest.fixture
def write_jsonl(tmp_path: Path):  # type: ignore[no-untyped-def]
    def write(records: list[Any], name: str = "data.jsonl") -> Path:
        path = tmp_path / name
        lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write
