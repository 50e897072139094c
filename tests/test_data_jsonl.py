from __future__ import annotations

import copy

import pytest

from conftest import topic_record
from covrag.data import load_dataset, read_topics, write_topics
from covrag.errors import DataError


def test_reads_topic_with_labels_and_metadata(write_jsonl) -> None:  # type: ignore[no-untyped-def]
    (topic,) = read_topics(write_jsonl([topic_record()]))
    assert topic.query_id == "q1"
    assert topic.passage_ids == ("p1", "p2", "p3")
    assert topic.labels["p1"] == frozenset({"a1"})
    assert topic.labels["p3"] == frozenset()
    assert topic.non_labels == {"p2": frozenset({"a1"})}
    assert topic.aspects[0].metadata["stance"] == "pro"
    assert topic.label_matrix().tolist() == [[True, False], [False, True], [False, False]]


def test_round_trip_keeps_everything(write_jsonl, tmp_path) -> None:  # type: ignore[no-untyped-def]
    sketched = topic_record(query_id="q2")
    sketched["aspects"][0]["answers"] = ["Shops lose sales.", "Cafes gain seats."]
    topics = read_topics(write_jsonl([topic_record(), sketched]))
    assert topics[1].aspects[0].answers == ("Shops lose sales.", "Cafes gain seats.")
    assert topics[0].aspects[0].answers == ()
    out = tmp_path / "out.jsonl"
    write_topics(out, topics)
    assert read_topics(out) == topics


@pytest.mark.parametrize(
    ("mutate", "line", "field", "message"),
    [
        (lambda r: r.pop("query"), 2, "query", "missing"),
        (lambda r: r["passages"][1].pop("text"), 2, "passages[1].text", "missing"),
        (lambda r: r["passages"].append(dict(r["passages"][0])), 2, "passages[3].id", "duplicate"),
        (lambda r: r["passages"][2]["aspects"].append("zz"), 2, "passages[2].aspects", "unknown"),
        (lambda r: r["passages"][0].update(non_aspects=["a9"]), 2, "passages[0].non_aspects", "a9"),
        (lambda r: r["aspects"][1].update(id="a1"), 2, "aspects[1].id", "duplicate aspect"),
        (lambda r: r.update(passages={}), 2, "passages", "list"),
        (lambda r: r["passages"][0].update(score="high"), 2, "passages[0].score", "number"),
        (lambda r: r["aspects"][0].update(polarity="maybe"), 2, "aspects[0].polarity", "one of"),
        (
            lambda r: r["aspects"][1].update(answers=["ok", " "]),
            2,
            "aspects[1].answers[1]",
            "empty",
        ),
        (lambda r: r["aspects"][0].update(answers="one"), 2, "aspects[0].answers", "list"),
    ],
)
def test_malformed_input_names_file_line_and_field(  # type: ignore[no-untyped-def]
    write_jsonl, mutate, line, field, message
) -> None:
    bad = copy.deepcopy(topic_record(query_id="q2"))
    mutate(bad)
    path = write_jsonl([topic_record(), bad])
    with pytest.raises(DataError) as info:
        read_topics(path)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert info.value.field == field
    assert message in str(info.value)
    assert f"line {line}" in str(info.value) and field in str(info.value)


def test_bad_json_and_duplicate_query(write_jsonl) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DataError, match=r"line 2.*invalid JSON"):
        read_topics(write_jsonl([topic_record(), "{not json"]))
    with pytest.raises(DataError, match=r"line 3, field 'query_id': duplicate"):
        read_topics(write_jsonl([topic_record(), "", topic_record()]))


def test_failed_write_leaves_no_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out.jsonl"

    def topics():  # type: ignore[no-untyped-def]
        yield from []
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_topics(out, topics())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "topics"),
    [
        ("argkp2021:dev", 4),
        ("argkp2021:train", 24),
        ("perspectrum:dev", 139),
        ("perspectrum:train", 541),
        ("perspectrum-evidence:dev", 114),
        ("perspectrum-evidence:train", 452),
    ],
)
def test_bundled_datasets_load_by_name(name: str, topics: int) -> None:
    loaded = load_dataset(name)
    assert len(loaded) == topics
    assert all(t.split == name.split(":")[1] for t in loaded)
    assert all(set().union(*t.labels.values()) <= set(t.aspect_ids) for t in loaded)


def test_bundled_licences_are_shipped() -> None:
    from covrag.data import BUNDLED

    assert (BUNDLED["perspectrum"].folder / "LICENSE_CC-BY-SA-4.0.txt").exists()
    assert (BUNDLED["perspectrum-evidence"].folder / "LICENSE_CC-BY-SA-4.0.txt").exists()
    assert (BUNDLED["argkp2021"].folder / "LICENSE_CDLA-Sharing-1.0.txt").exists()
    assert "CDLA-Sharing" in (BUNDLED["argkp2021"].folder / "README.md").read_text()


def test_unknown_dataset_and_withheld_test_split() -> None:
    with pytest.raises(DataError, match="neither a file nor a bundled dataset"):
        load_dataset("nope:dev")
    with pytest.raises(DataError, match="test splits are withheld"):
        load_dataset("argkp2021:test")
    with pytest.raises(DataError, match="name a split"):
        load_dataset("argkp2021")
