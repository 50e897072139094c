from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import topic_record
from covrag.data import load_dataset
from covrag.errors import DataError
from covrag.retrieve import corpus_from_topics, load_corpus, read_corpus
from covrag.types import Passage, Topic


def test_read_corpus_keeps_other_fields_as_metadata(write_jsonl) -> None:  # type: ignore[no-untyped-def]
    path = write_jsonl(
        [
            {"id": "p1", "text": "Cars pollute.", "source": "web", "tokens": 3},
            "",
            {"id": "p2", "text": "Bikes are cheap."},
        ]
    )
    passages = read_corpus(path)
    assert [p.id for p in passages] == ["p1", "p2"]
    assert passages[0].metadata == {"source": "web"} and passages[0].tokens == 3
    assert passages[0].score is None and passages[1].metadata == {}


@pytest.mark.parametrize(
    ("lines", "line", "field", "message"),
    [
        (['{"id": "p1", "text": "ok"}', '{"id": "p2", "text": }'], 2, None, "invalid JSON"),
        (['["p1", "text"]'], 1, None, "JSON object"),
        (['{"text": "no id"}'], 1, "id", "missing required field"),
        (['{"id": "p1"}'], 1, "text", "missing required field"),
        (['{"id": "p1", "text": "  "}'], 1, "text", "non-empty string"),
        (['{"id": 7, "text": "x"}'], 1, "id", "non-empty string"),
        (['{"id": "p1", "text": "x", "tokens": -1}'], 1, "tokens", "non-negative integer"),
        (
            ['{"id": "p1", "text": "a"}', "", '{"id": "p1", "text": "b"}'],
            3,
            "id",
            "duplicate id 'p1' (first on line 1)",
        ),
    ],
)
def test_malformed_corpus_names_file_line_and_field(  # type: ignore[no-untyped-def]
    write_jsonl, lines, line, field, message
) -> None:
    path = write_jsonl(lines, name="corpus.jsonl")
    with pytest.raises(DataError, match=re.escape(message)) as info:
        read_corpus(path)
    assert info.value.path == str(path) and info.value.line == line and info.value.field == field
    assert f"corpus.jsonl, line {line}" in str(info.value)


def test_pools_are_deduplicated_by_id_and_conflicts_rejected() -> None:
    shared = Passage("p1", "Same text", score=0.9)
    t1 = Topic("q1", "one", (shared, Passage("p2", "Two")), ())
    t2 = Topic("q2", "two", (Passage("p3", "Three"), shared), ())
    passages = corpus_from_topics([t1, t2])
    assert [p.id for p in passages] == ["p1", "p2", "p3"]
    assert passages[0].score is None  # a corpus passage carries no retriever score
    t3 = Topic("q3", "three", (Passage("p2", "Another text"),), ())
    with pytest.raises(DataError, match="'p2' of topic 'q3' has a different text") as info:
        corpus_from_topics([t1, t3], "pools.jsonl")
    assert info.value.path == "pools.jsonl" and info.value.field == "passages[0].id"


def test_load_corpus_from_datasets_and_coverage_files(write_jsonl) -> None:  # type: ignore[no-untyped-def]
    dev = load_corpus("argkp2021:dev")
    assert len(dev) == sum(len(t.passages) for t in load_dataset("argkp2021:dev"))
    # Perspectrum reuses perspectives across claims: the corpus has each id once.
    perspectrum = load_corpus("perspectrum:dev")
    pooled = sum(len(t.passages) for t in load_dataset("perspectrum:dev"))
    assert len(perspectrum) == len({p.id for p in perspectrum}) < pooled
    path = write_jsonl([topic_record()], name="topics.jsonl")
    assert [p.id for p in load_corpus(path)] == ["p1", "p2", "p3"]
    with pytest.raises(DataError, match="neither a file nor a bundled dataset"):
        load_corpus("no-such-corpus")
    with pytest.raises(DataError, match="is a folder"):
        load_corpus(path.parent)


def test_default_corpus_is_all_bundled_pools() -> None:
    corpus = load_corpus()
    assert len(corpus) == len({p.id for p in corpus}) > 15_000
    assert {p.id.split(":")[0] for p in corpus[:3]} == {"train"}  # argkp2021 comes first


def test_read_corpus_round_trips_through_json(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "é1", "text": "Ünïcode ✓", "tags": ["a"]}) + "\n")
    (passage,) = read_corpus(path)
    assert passage.text == "Ünïcode ✓" and passage.metadata == {"tags": ["a"]}
