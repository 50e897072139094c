"""What ``covrag ask`` shows: an empty selection on one line, and LLM progress as it streams."""

from __future__ import annotations

import io

from rich.console import Console

from covrag.cli.ask import _llm_progress
from covrag.cli.ask_display import print_ask
from covrag.cli.common import progress_bar
from covrag.llm.progress import TokenProgress
from covrag.pipeline import AskConfig, ask
from covrag.retrieve import BM25Retriever
from covrag.types import Aspect, Passage
from generate_support import KeywordCoverage
from llm_support import ScriptedLLM

CORPUS = (
    Passage("c1", "School uniforms reduce bullying between pupils."),
    Passage("c2", "Uniforms cost parents a lot of money each year."),
)
SUGAR = (Aspect("sq1", "sugar in school drinks"), Aspect("sq2", "tax money each year"))


def test_an_empty_selection_is_one_line_not_a_table_with_a_wrapped_title() -> None:
    retriever = BM25Retriever().index(CORPUS)
    config = AskConfig(pool=2, k=2, passes=0, gate=0.0)
    result = ask(
        "Should governments tax sugary drinks?",
        ScriptedLLM([]),
        retriever,
        config,
        aspects=SUGAR,
        estimator=KeywordCoverage(),
    )
    assert result.selection.passage_ids == ()
    buffer = io.StringIO()
    print_ask(result, Console(file=buffer, width=160, emoji=False))
    lines = buffer.getvalue().splitlines()
    title = f"Selection: {result.selection.selector}, k=0: no passage selected"
    (line,) = [line for line in lines if "Selection" in line]
    assert line.startswith(title) and "coverage floor" in line


def test_llm_progress_is_one_stderr_line_per_call_off_a_terminal(capsys) -> None:  # type: ignore[no-untyped-def]
    console = Console(file=io.StringIO(), force_terminal=False)
    with progress_bar(console) as progress:
        show = _llm_progress(progress, console)
        show(TokenProgress("m", 3, 1.0))
        show(TokenProgress("m", 40, 2.0, done=True))
    assert capsys.readouterr().err.splitlines() == ["llm: 40 tokens, 20.0 tokens/s (2.0 s)"]


def test_llm_progress_updates_a_line_of_the_progress_display_on_a_terminal(capsys) -> None:  # type: ignore[no-untyped-def]
    console = Console(file=io.StringIO(), force_terminal=True)
    with progress_bar(console) as progress:
        show = _llm_progress(progress, console)
        (task,) = progress.tasks
        assert not task.visible
        show(TokenProgress("m", 3, 1.5))
        assert task.visible and task.description == "llm writing: 3 tokens, 2.0 tokens/s"
        show(TokenProgress("m", 40, 2.0, done=True))
        assert task.description == "llm done: 40 tokens, 20.0 tokens/s"
    assert capsys.readouterr().err == ""


def test_a_draft_problem_the_run_s_warnings_hold_is_shown_once() -> None:
    import dataclasses

    retriever = BM25Retriever().index(CORPUS)
    config = AskConfig(pool=2, k=2, passes=0, gate=0.0, floor=0.0, quotes=0, complete=0)
    reply = "Should schools require uniforms?\nSchool uniforms reduce bullying between pupils [1]."
    result = ask(
        "Should schools require uniforms?",
        ScriptedLLM([reply]),
        retriever,
        config,
        aspects=(Aspect("sq1", "bullying between pupils"),),
        estimator=KeywordCoverage(),
    )
    problems = result.generation.drafts[-1].problems
    assert problems, "the scripted answer has a sentence citing no passage"
    # the CLI adds a logged warning the run did not record, as the library logged it
    logged = tuple(f"answer to 2 passages: {p}" for p in problems)
    result = dataclasses.replace(result, warnings=(*result.warnings, *logged))
    buffer = io.StringIO()
    print_ask(result, Console(file=buffer, width=400, emoji=False))
    shown = buffer.getvalue()
    for problem in problems:
        assert shown.count(problem) == 1, shown


GREP = (  # a manual's synopsis and entries, brackets and all
    Passage(
        "grep#1",
        "SYNOPSIS grep [OPTION...] PATTERNS [FILE...] [/x] grep searches for PATTERNS in "
        "each FILE.",
        metadata={"title": "grep.1"},
    ),
    Passage(
        "grep#9",
        "-q, --quiet, --silent Quiet; do not write anything to standard output.",
        metadata={"title": "grep.1"},
    ),
)


def test_passage_text_is_shown_as_written_and_evidence_is_numbered_after_the_context() -> None:
    retriever = BM25Retriever().index(GREP)
    config = AskConfig(pool=1, k=1, passes=0, gate=0.0, floor=0.0, quotes=0, evidence=2)
    result = ask(
        "How does grep search for PATTERNS in each FILE?",
        ScriptedLLM(["grep -q PATTERNS FILE"]),
        retriever,
        config,
        aspects=(Aspect("sq1", "grep searches for PATTERNS in each FILE"),),
        estimator=KeywordCoverage(),
    )
    assert result.selection.passage_ids == ("grep#1",)
    assert [p.id for p in result.generation.evidence] == ["grep#9"]
    assert result.generation.answer.sentences[0].passage_ids == ("grep#9",)
    buffer = io.StringIO()
    print_ask(result, Console(file=buffer, width=400, emoji=False))
    shown = buffer.getvalue()
    # rich markup in a passage ("[/x]" closes no tag; "[FILE...]" would be taken as a style)
    assert "SYNOPSIS grep [OPTION...] PATTERNS [FILE...] [/x]" in shown
    assert "Looked up for the answer" in shown and "(grep.1, grep#9)" in shown
    assert "1. grep -q PATTERNS FILE [2]" in shown
    # the run file holds the passage the answer cites
    record = result.run_record()
    assert "grep#9" in {p["id"] for p in record["topics"][0]["passages"]}
