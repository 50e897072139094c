from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag.data import load_dataset
from covrag.data.question_forms import as_paraphrases, as_questions, read_question_forms
from covrag.errors import DataError
from covrag.types import Aspect, Passage, Topic
from covrag_lab.train.pairs import topic_pairs


def form(aspect_id: str, question: str = "How do uniforms affect bullying?") -> dict[str, str]:
    return {"aspect_id": aspect_id, "topic_id": "t1", "statement": "x", "question": question}


def write(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_question_forms_replace_aspect_texts_and_keep_ids_and_labels(tmp_path: Path) -> None:
    topics = load_dataset("argkp2021:dev")[:1]
    records = [form(a.id, f"What about point {i}?") for i, a in enumerate(topics[0].aspects)]
    forms = read_question_forms(write(tmp_path / "q.jsonl", records))
    (asked,) = as_questions(topics, forms, "q.jsonl")
    assert [a.id for a in asked.aspects] == [a.id for a in topics[0].aspects]
    assert [a.text for a in asked.aspects] == [r["question"] for r in records]
    assert asked.labels == topics[0].labels and asked.passages == topics[0].passages


def test_an_aspect_without_a_question_form_is_an_error(tmp_path: Path) -> None:
    topics = load_dataset("argkp2021:dev")[:1]
    forms = read_question_forms(write(tmp_path / "q.jsonl", [form(topics[0].aspects[0].id)]))
    with pytest.raises(DataError, match="aspects have no question form"):
        as_questions(topics, forms, "q.jsonl")


@pytest.mark.parametrize(
    ("records", "field", "message"),
    [
        ([form("a1"), form("a1")], "aspect_id", "appears twice"),
        ([form("a1", "Uniforms reduce bullying.")], "question", "must be a question"),
        ([form("a 1")], "aspect_id", "whitespace"),
        ([{**form("a1"), "extra": 1}], "extra", "unexpected"),
    ],
)
def test_bad_question_form_lines_name_the_line_and_field(
    tmp_path: Path, records: list[dict[str, str]], field: str, message: str
) -> None:
    with pytest.raises(DataError, match=message) as info:
        read_question_forms(write(tmp_path / "q.jsonl", records))
    assert info.value.field == field and info.value.line == len(records)


def test_paraphrases_word_each_aspect_as_a_passage_labelled_with_it() -> None:
    (topic,) = load_dataset("argkp2021:dev")[:1]
    (again,) = load_dataset("argkp2021:dev:paraphrases")[:1]
    assert again == as_paraphrases([topic])[0]  # the same passage on every load
    texts = {p.id: p.text for p in topic.passages}
    changed = 0
    for before, after in zip(topic.aspects, again.aspects, strict=True):
        assert after.id == before.id
        labelled = [p for p, aspects in topic.labels.items() if before.id in aspects]
        if len(labelled) >= 2:
            assert after.text in {texts[p] for p in labelled}
            changed += 1
        else:
            assert after.text == before.text
    assert changed >= len(topic.aspects) - 1
    assert again.labels == topic.labels and again.non_labels == topic.non_labels


def test_a_paraphrase_aspect_is_not_paired_with_its_own_passage() -> None:
    passages = tuple(Passage(f"p{i}", f"argument {i}") for i in range(3))
    topic = Topic(
        "t",
        "q?",
        passages,
        (Aspect("a", "key point a"), Aspect("b", "key point b")),
        labels={"p0": frozenset({"a"}), "p1": frozenset({"a"}), "p2": frozenset({"b"})},
        non_labels={"p0": frozenset({"b"}), "p1": frozenset({"b"}), "p2": frozenset({"a"})},
    )
    (paraphrased,) = as_paraphrases([topic])
    a_text = paraphrased.aspects[0].text
    assert a_text in {"argument 0", "argument 1"}
    assert paraphrased.aspects[1].text == "key point b"  # one labelled passage: kept as it was
    positives = [(p.passage, p.aspect) for p in topic_pairs(paraphrased) if p.label == 1]
    assert (a_text, a_text) not in positives
    assert len(positives) == 2  # the other argument of a, and p2 with b


def test_unknown_aspect_form_is_refused() -> None:
    with pytest.raises(DataError, match="statements, questions, paraphrases"):
        load_dataset("argkp2021:dev:answers")


@pytest.mark.parametrize("split", ["train", "dev"])
@pytest.mark.parametrize("dataset", ["argkp2021", "perspectrum", "perspectrum-evidence"])
def test_bundled_question_forms_cover_every_train_and_dev_aspect(dataset: str, split: str) -> None:
    statements = load_dataset(f"{dataset}:{split}")
    questions = load_dataset(f"{dataset}:{split}:questions")
    for s, q in zip(statements, questions, strict=True):
        assert [a.id for a in q.aspects] == [a.id for a in s.aspects]
        assert all(a.text.endswith("?") for a in q.aspects)
        assert [a.text for a in q.aspects] != [a.text for a in s.aspects]
        assert q.labels == s.labels
