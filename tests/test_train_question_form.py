from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from covrag.data.question_forms import read_question_forms
from covrag.errors import StructuredOutputError
from covrag.schema.question_form import QuestionFormLine
from covrag.types import Aspect, Passage, Topic
from covrag_lab.cli import main
from covrag_lab.train.question_form import CHUNK, alignment, question_forms, write_question_forms
from llm_support import ScriptedLLM


def topic(query_id: str, n: int, first: int = 0) -> Topic:
    aspects = tuple(Aspect(f"k{i}", f"Point number {i} holds") for i in range(first, first + n))
    return Topic(query_id, "Should cities ban cars?", (Passage("p", "text"),), aspects)


def reply(n: int, start: int = 0) -> str:
    items = [
        {"n": i + 1, "question": f"How do car bans affect thing {start + i}?"} for i in range(n)
    ]
    return json.dumps({"questions": items})


def test_rewrites_in_chunks_once_per_aspect_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    big = topic("t1", CHUNK + 2)
    shared = dataclasses.replace(topic("t2", 3, first=CHUNK), query_id="t2")  # k8, k9 seen in t1
    llm = ScriptedLLM([reply(CHUNK), reply(2, CHUNK), reply(1, 99)])
    assert write_question_forms([big, shared], llm, out) == CHUNK + 3
    forms = read_question_forms(out)
    assert forms["k0"].question == "How do car bans affect thing 0?"
    assert forms["k10"].topic_id == "t2" and forms["k9"].topic_id == "t1"
    assert len(llm.requests) == 3 and "1. Point number 10 holds" in llm.requests[2][0][-1].content
    assert not (tmp_path / "q.jsonl.partial").exists()


def test_a_failed_run_leaves_only_the_partial_file_and_resumes_from_it(tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    first, second = topic("t1", 2), topic("t2", 1, first=5)
    bad = json.dumps({"questions": [{"n": 1, "question": "No"}]})
    with pytest.raises(StructuredOutputError):
        write_question_forms([first, second], ScriptedLLM([reply(2), bad, bad, bad, bad]), out)
    assert not out.exists() and len(read_question_forms(tmp_path / "q.jsonl.partial")) == 2
    llm = ScriptedLLM([reply(1, 5)])  # t1 is not asked again
    assert write_question_forms([first, second], llm, out) == 3
    assert len(llm.requests) == 1 and set(read_question_forms(out)) == {"k0", "k1", "k5"}


def test_checks_reject_unnumbered_or_copied_questions() -> None:
    copied = json.dumps({"questions": [{"n": 1, "question": "Point number 0 holds?"}]})
    misnumbered = json.dumps({"questions": [{"n": 2, "question": "What about car bans now?"}]})
    llm = ScriptedLLM([copied, misnumbered, reply(1)])
    (only,) = question_forms(topic("t1", 1), llm)
    assert only.question == "How do car bans affect thing 0?"
    feedback = [request[0][-1].content for request in llm.requests[1:]]
    assert "repeats its statement" in feedback[0] and "number the questions 1 to 1" in feedback[1]


CAR_POINTS = (
    "Car bans cut air pollution in the city centre",
    "Car bans hurt the sales of shops in the centre",
    "Car bans make streets safer for children walking to school",
)
CAR_QUESTIONS = (
    "How do car bans affect air quality in city centres??",
    "How do car bans affect shops in city centres?",
    "How do car bans affect the safety of children on the streets?",
)


@pytest.mark.model
def test_one_statement_per_request_on_demand_and_alignment_sees_shifted_questions() -> None:
    aspects = tuple(Aspect(f"k{i}", text) for i, text in enumerate(CAR_POINTS))
    cars = Topic("t1", "Should cities ban cars?", (Passage("p", "text"),), aspects)
    replies = [json.dumps({"questions": [{"n": 1, "question": q}]}) for q in CAR_QUESTIONS]
    llm = ScriptedLLM(replies)
    forms = question_forms(cars, llm, chunk_size=1)
    assert len(llm.requests) == 3  # one statement per request
    assert "1. Car bans hurt the sales" in llm.requests[1][0][-1].content
    assert forms[0].question == "How do car bans affect air quality in city centres?"
    assert alignment(forms) == (3, 3)  # the real MiniLM: each point is nearest its own question
    shifted = [  # each question moved onto the next statement, as 8 per request often did
        f.model_copy(update={"question": forms[(i + 1) % 3].question}) for i, f in enumerate(forms)
    ]
    assert alignment(shifted) == (0, 3)
    with pytest.raises(ValueError, match="chunk_size"):
        question_forms(cars, ScriptedLLM([]), chunk_size=0)


@pytest.mark.slow
def test_cli_rewrites_with_the_tiny_model(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path / "cache"))  # a fresh response cache
    data = tmp_path / "d.jsonl"
    record = {
        "query_id": "t1",
        "query": "Should cities ban cars?",
        "passages": [{"id": "p1", "text": "Bans cut smog.", "aspects": ["k1"]}],
        "aspects": [{"id": "k1", "text": "Car bans reduce air pollution"}],
    }
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "q.jsonl"
    args = ["train", "question-forms", "--datasets", str(data), "--out", str(out)]
    code = main([*args, "--llm", "local(model='smollm2')"])
    captured = capsys.readouterr()
    if code == 2:  # SmolLM2-135M failed the checks: nothing looks finished
        assert "no valid answer" in " ".join(captured.err.split()) and not out.exists()
        return
    assert code == 0, captured.err
    (line,) = read_question_forms(out).values()
    assert line.aspect_id == "k1" and line.question.endswith("?")
    assert "alignment: 1 of 1 statements" in " ".join(captured.out.split())


def one(question: str) -> str:
    return json.dumps({"questions": [{"n": 1, "question": question}]})


def test_contrast_asks_one_statement_at_a_time_and_refuses_repeats_and_meta_questions() -> None:
    aspects = tuple(Aspect(f"k{i}", text) for i, text in enumerate(CAR_POINTS[:2]))
    cars = Topic("t1", "Should cities ban cars?", (Passage("p", "text"),), aspects)
    llm = ScriptedLLM(
        [
            one("How do car bans affect air quality in city centres?"),
            one("How do car bans affect air quality in city centres?"),  # k0's question again
            one("What does the point 'Car bans hurt the sales' address?"),
            one("How do city parks affect wildlife?"),  # another matter (a copied example)
            one("How do car bans change the sales of shops in city centres?"),
        ]
    )
    forms = question_forms(cars, llm, style="contrast")  # no encoder: no nearness gate
    assert [f.question for f in forms] == [
        "How do car bans affect air quality in city centres?",
        "How do car bans change the sales of shops in city centres?",
    ]
    first = llm.requests[0][0][-1].content
    assert "Statement: Car bans cut air pollution" in first and f"- {CAR_POINTS[1]}" in first
    feedback = [request[0][-1].content for request in llm.requests[2:]]
    assert "already has this question" in feedback[0] and "do not mention" in feedback[1]
    assert "this statement's own matter" in feedback[2]
    never = ScriptedLLM([one("How do parks affect wildlife?")] * 4)
    with pytest.raises(StructuredOutputError):  # without a nearness gate there is no fallback
        question_forms(dataclasses.replace(cars, aspects=aspects[:1]), never, style="contrast")
    assert len(never.requests) == 4
    with pytest.raises(ValueError, match="style"):
        question_forms(cars, ScriptedLLM([]), style="specific")


@pytest.mark.model
def test_the_contrast_gate_refuses_a_question_nearer_another_statement(caplog) -> None:  # type: ignore[no-untyped-def]
    from covrag.embed import default_encoder

    aspects = tuple(Aspect(f"k{i}", text) for i, text in enumerate(CAR_POINTS))
    cars = Topic("t1", "Should cities ban cars?", (Passage("p", "text"),), aspects)
    shops = CAR_QUESTIONS[1]
    air = "How do car bans change the air people breathe in city centres?"
    replies = [one(shops), one(CAR_QUESTIONS[0]), one(shops)]  # k0 first gets k1's question
    llm = ScriptedLLM(replies + [one(air)] * 5)  # k2 only ever gets an air-quality question
    encoder = default_encoder()
    forms = question_forms(cars, llm, style="contrast", encoder=encoder, retries=3)
    assert forms[0].question == CAR_QUESTIONS[0].replace("??", "?")
    assert 'fits the other statement "Car bans hurt the sales' in llm.requests[1][0][-1].content
    assert forms[1].question == shops
    # k2: every try fits the air-quality statement better, so after the retries the question
    # is kept without the nearness gate (it is no repeat), and the log says so.
    assert len(llm.requests) == 8 and forms[2].question == air
    assert "no question passed the nearness gate" in caplog.text


def test_contrast_resumes_a_topic_with_its_written_questions_taken(tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    aspects = tuple(Aspect(f"k{i}", text) for i, text in enumerate(CAR_POINTS[:2]))
    cars = Topic("t1", "Should cities ban cars?", (Passage("p", "text"),), aspects)
    first = QuestionFormLine(
        aspect_id="k0", topic_id="t1", statement=CAR_POINTS[0], question=CAR_QUESTIONS[1]
    )
    (tmp_path / "q.jsonl.partial").write_text(first.model_dump_json() + "\n")
    llm = ScriptedLLM([one(CAR_QUESTIONS[1]), one("How do car bans change the sales of shops?")])
    assert write_question_forms([cars], llm, out, style="contrast") == 2
    assert len(llm.requests) == 2  # only k1 is asked; its first try repeats k0's question
    assert read_question_forms(out)["k1"].question == "How do car bans change the sales of shops?"
