"""``covrag ask`` end to end: the chain's records and costs, its run file, and the CLI."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.evaluation.answers_io import evaluate_variants, load_variants
from covrag.pipeline import AskConfig, ask
from covrag.report.runfile import parse_run_file
from covrag.retrieve import BM25Retriever
from covrag.types import Aspect, Passage
from generate_support import KeywordCoverage
from llm_support import ScriptedLLM, items_reply

CORPUS = (
    Passage("c1", "School uniforms reduce bullying between pupils."),
    Passage("c2", "Uniforms cost parents a lot of money each year."),
    Passage("c3", "School uniforms stop pupils who want to express their identity."),
    Passage("c4", "Uniforms make religion visible or invisible in school."),
    Passage("c5", "Trains are faster than buses."),
)
ASPECTS = (
    Aspect("sq1", "bullying at school"),
    Aspect("sq2", "cost of uniforms"),
    Aspect("sq3", "express identity"),
)
CRITIQUE = json.dumps({"underused": [2], "missing": "The cost is missing."})


def test_ask_runs_every_stage_and_records_it(tmp_path: Path) -> None:
    llm = ScriptedLLM(
        ["Uniforms reduce bullying [1].", CRITIQUE, "Uniforms reduce bullying [1]. They cost [2]."]
    )
    stages: list[str] = []
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(pool=4, k=2, passes=1, writer="extractive"),
        exclude=["religion"],
        aspects=(*ASPECTS, Aspect("exc1", "religion", polarity="exclude")),
        estimator=KeywordCoverage(),
        on_stage=stages.append,
    )
    assert stages == [
        "plan", "retrieve", "estimate", "select", "generate", "write", "critique 1", "rewrite 1",
    ]  # fmt: skip
    # The exclude aspect is never searched; the request tells the writer to leave it out.
    assert "religion" not in result.queries
    assert "Do not write about: religion." in llm.requests[0][0][-1].content
    assert result.query.request.endswith("Leave out: religion.")
    assert len(result.selection) == 2 and result.topic.passages[0].tokens is not None
    assert {a.id for a in result.uncovered} == {"sq1", "sq2", "sq3"} - set(result.selection.covered)
    assert result.costs["estimate"].pairs_scored == len(result.topic.passages) * 4
    assert result.costs["generate"].llm.calls == 3 and result.costs["plan"].llm.calls == 0
    assert len(result.generation.drafts) == 2

    path = tmp_path / "ask.json"
    path.write_text(json.dumps(result.run_record()))
    data = json.loads(path.read_text())
    parsed = parse_run_file(data, str(path))
    (topic,) = parsed.topics
    assert topic.answer is not None and topic.answer == result.generation.answer
    record = data["topics"][0]
    assert record["plan"]["exclude"] == ["religion"]
    assert set(record["costs"]) == {"plan", "retrieve", "estimate", "select", "generate"}
    assert len(record["generation"]["drafts"]) == 2

    variants = load_variants([path], all_passes=True)
    assert list(variants) == ["ask#0", "ask#1"]
    evaluations = evaluate_variants(variants, None, estimator=KeywordCoverage())
    first, second = evaluations["ask#0"][0], evaluations["ask#1"][0]
    assert [n.aspect_id for n in first.nuggets] == ["sq1", "sq2", "sq3"]  # exclude not judged
    assert second.answer_strecall("cheap") >= first.answer_strecall("cheap")


@pytest.mark.model
def test_ask_asks_the_llm_for_sub_questions_then_answer_sketches() -> None:
    questions = ["Do uniforms reduce bullying?", "What do uniforms cost parents?"]
    sketches = [
        json.dumps({"answers": ["Pupils in uniform tease each other less."]}),
        json.dumps({"answers": ["Do uniforms cost a lot?"]}),  # a question: retried, then none
        json.dumps({"answers": ["Why?"]}),
        json.dumps({"answers": ["How much?"]}),
    ]
    llm = ScriptedLLM([items_reply(*questions), *sketches, "Uniforms reduce bullying [1]."])
    config = AskConfig(
        subquestions=2, answers=1, pool=3, k=1, passes=0, writer="extractive", aspect_source="llm"
    )
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        config,
        estimator=KeywordCoverage(),
    )
    assert result.subquestions is not None and result.subquestions.texts == tuple(questions)
    assert [a.text for a in result.topic.aspects] == questions
    assert [a.answers for a in result.topic.aspects] == [
        ("Pupils in uniform tease each other less.",),
        (),  # the sketches are help for the estimator: without them the question stands alone
    ]
    assert "Main question: Should schools require uniforms?" in llm.requests[1][0][-1].content
    assert result.warnings[0] == (
        "no answer sketches for sq2 (sketch answers to 'What do uniforms cost parents?': "
        "the LLM gave no valid answer in 3 attempts:)"
    )
    # KeywordCoverage reads "Do" and "What": nothing clears the floor, and the run says why
    assert result.warnings[1:] == ("no answer: " + (result.filters.reason() or ""),)  # type: ignore[union-attr]
    assert "the coverage floor removed all 3" in result.warnings[1]
    assert result.costs["plan"].llm.calls == 5 and result.costs["plan"].llm.prompt_tokens == 15
    saved = result.run_record()["topics"][0]["aspects"]
    assert saved[0]["answers"] == ["Pupils in uniform tease each other less."]
    assert "answers" not in saved[1]


def test_eval_answers_cli_compares_passes_with_the_cheap_judge(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedLLM(
        ["School uniforms reduce bullying [1].", CRITIQUE, "Uniforms cost money [2]."]
    )
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(pool=4, k=2, passes=1, writer="extractive"),
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )
    path = tmp_path / "ask.json"
    path.write_text(json.dumps(result.run_record()))
    out = tmp_path / "judged.json"
    code = main(["eval-answers", str(path), "--all-passes", "--no-llm", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "ask#0" in captured.out and "ask#1" in captured.out
    judged = json.loads(out.read_text())
    assert set(judged["variants"]) == {"ask#0", "ask#1"}
    assert all(n["llm"] is None for n in judged["variants"]["ask#0"][0]["nuggets"])
    # A run without drafts cannot be split into passes; the error names the field.
    data = json.loads(path.read_text())
    del data["topics"][0]["generation"]
    path.write_text(json.dumps(data))
    assert main(["eval-answers", str(path), "--all-passes", "--no-llm"]) == 2
    assert "topics[0]" in capsys.readouterr().err


@pytest.mark.slow
def test_ask_cli_on_the_tiny_model(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("xllamacpp")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n" for p in CORPUS))
    out = tmp_path / "ask.json"
    args = ["ask", "Should schools require uniforms?", "--corpus", str(corpus)]
    args += ["--llm", "local(model='smollm2', n_threads=1)", "--no-llm-cache", "--passes", "1"]
    args += ["--aspects", "Do uniforms reduce bullying?", "What do uniforms cost?"]
    args += ["--k", "3", "--pool", "4", "--out", str(out)]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Selection" in captured.out and "Answer" in captured.out and "Costs" in captured.out
    record = json.loads(out.read_text())["topics"][0]
    covered = {a for step in record["selection"]["steps"] for a in step["newly_covered"]}
    said = re.search(r"(\d) of 2 wanted aspects\s+are\s+covered", captured.out)
    assert said is not None and int(said.group(1)) == len(covered), captured.out
    assert "covered by" in captured.out
    # Each aspect's cell gives the probabilities: "[1] 0.83", or "not covered (best 0.22)".
    cells = re.findall(r"\[\d\] \d\.\d\d|not covered \(best \d\.\d\d\)", captured.out)
    assert len(cells) >= 2, captured.out
    assert len(record["generation"]["drafts"]) == 2
    assert record["costs"]["generate"]["llm"]["calls"] >= 2
    assert record["costs"]["estimate"]["pairs_scored"] > 0
    html = tmp_path / "ask.html"
    assert main(["report", str(out), "-o", str(html)]) == 0
    assert "Answer" in html.read_text()


@pytest.mark.model
def test_an_outline_the_llm_cannot_plan_falls_back_to_sub_questions() -> None:
    split = json.dumps(
        {"base_query": "Should schools require uniforms?", "include": [], "exclude": []}
    )
    questions = items_reply("Do uniforms reduce bullying?")
    llm = ScriptedLLM([split, questions, "no tree", "no tree", "no tree", questions, "Yes [1]."])
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(
            subquestions=1, answers=0, pool=3, k=1, passes=0, outline=True, writer="extractive"
        ),
        estimator=KeywordCoverage(),
    )
    assert result.plan is None and result.subquestions is not None
    assert [a.text for a in result.topic.aspects] == ["Do uniforms reduce bullying?"]
    assert result.warnings[0].startswith("no outline (QTree")
    assert result.warnings[1:] == ("no answer: " + (result.filters.reason() or ""),)  # type: ignore[union-attr]
    assert "Follow this outline" not in llm.requests[-1][0][-1].content
    assert result.run_record()["topics"][0]["warnings"] == list(result.warnings)


# Their words reach the uniform passages (school, money), their keywords (sugar, tax) do not.
SUGAR = (Aspect("sq1", "sugar in school drinks"), Aspect("sq2", "tax money each year"))


def test_a_question_the_corpus_cannot_answer_gets_no_padding_and_says_so() -> None:
    llm = ScriptedLLM([])  # nothing to write: no model call at all
    question = "Should governments tax sugary drinks?"
    retriever = BM25Retriever().index(CORPUS)
    # a fixed gate (the default gate is relative to the best passage and never empties alone)
    config = AskConfig(pool=5, k=3, passes=2, gate_margin=0.0)
    result = ask(question, llm, retriever, config, aspects=SUGAR, estimator=KeywordCoverage())
    assert result.selection.passage_ids == () and llm.requests == []
    (sentence,) = result.generation.answer.sentences
    assert sentence.framing and sentence.text.startswith("The corpus does not answer this question")
    assert '"sugar in school drinks"' in sentence.text
    # the refusal names the filter that emptied the context, the best score and the option
    assert "both filters removed all 4" in sentence.text
    assert "--floor 0 turns the floor off" in sentence.text
    assert result.warnings == (f"no answer: {result.filters.reason()}",)  # type: ignore[union-attr]
    record = result.run_record()["topics"][0]
    assert record["answer"]["sentences"][0]["framing"] is True
    assert record["warnings"] == list(result.warnings) and record["filters"]["kept"] == 0
    # Without the floor the topic gate alone keeps the uniform passages out (the real MiniLM);
    # without both the selector pads k with whatever the pool holds.
    gated = AskConfig(pool=5, k=3, passes=0, floor=0.0, writer="extractive", gate_margin=0.0)
    result = ask(
        question, ScriptedLLM([]), retriever, gated, aspects=SUGAR, estimator=KeywordCoverage()
    )
    assert result.selection.passage_ids == ()
    # the gate, not the floor, removed them: the refusal says so, with the best similarity
    (sentence,) = result.generation.answer.sentences
    assert "the topic gate removed all" in sentence.text and "--gate 0 for no gate" in sentence.text
    assert result.filters is not None and result.filters.cleared_floor == len(result.topic.passages)
    assert any("topic gate" in w for w in result.warnings)
    padded = dataclasses.replace(gated, gate=0.0)
    llm = ScriptedLLM(["Uniforms cut bullying [1]."])
    result = ask(question, llm, retriever, padded, aspects=SUGAR, estimator=KeywordCoverage())
    assert len(result.selection) == 3 and result.selection.covered == ()


def test_a_partly_answerable_question_names_what_the_corpus_does_not_answer() -> None:
    reply = {"sentences": [{"text": "Dressing alike cuts it.", "cites": [1]}]}  # the one part
    llm = ScriptedLLM([json.dumps(reply)], supports_schema=True)
    aspects = (Aspect("sq1", "bullying at school"), SUGAR[1])
    # The floor reads the sub-questions only here (KeywordCoverage would say every passage
    # with "uniforms" answers the question itself), and no gate reads the two-word question.
    config = AskConfig(
        pool=5,
        k=3,
        passes=0,
        writer="synthesis",
        floor_question=False,
        gate=0.0,
        selector="expected-coverage",
        filters="passages",  # the floor keeps the one passage that answers anything
    )
    retriever = BM25Retriever().index(CORPUS)
    result = ask(
        "Uniforms and soda?", llm, retriever, config, aspects=aspects, estimator=KeywordCoverage()
    )
    assert result.selection.passage_ids == ("c1",)  # the only passage that answers anything
    first, framing = result.generation.answer.sentences
    assert first.passage_ids == ("c1",) and first.aspect_id == "sq1"
    assert framing.framing
    assert framing.text == 'The selected passages may not answer: "tax money each year".'


@pytest.mark.model
def test_ask_cli_on_a_question_the_corpus_cannot_answer(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("xllamacpp")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n" for p in CORPUS))
    out = tmp_path / "ask.json"
    args = ["ask", "Should governments tax sugary drinks?", "--corpus", str(corpus)]
    args += ["--llm", "local(model='smollm2', n_threads=1)", "--no-llm-cache"]
    args += ["--aspects", "Do sugar taxes cut obesity?", "Who pays a tax on soft drinks?"]
    args += ["--k", "3", "--pool", "5", "--out", str(out)]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "The corpus does not answer this question" in captured.out
    assert re.search(r"0 of 2 wanted aspects\s+are\s+covered", captured.out)
    assert captured.out.count("not covered") >= 2
    record = json.loads(out.read_text())["topics"][0]
    assert record["selection"]["steps"] == [] and record["costs"]["generate"]["llm"]["calls"] == 0
    html = tmp_path / "ask.html"
    assert main(["report", str(out), "-o", str(html)]) == 0
    assert 'class="paragraph framing"' in html.read_text()
