"""The grounded planner: as many sub-questions as the question has parts, in its frame, seeing
what a first search found; a scripted LLM for the rules around the model, the tiny model for the
real path."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from covrag.llm.base import ChatResult
from covrag.llm.cache import CachedLLM, ResponseCache
from covrag.plan.conditioned import C2Query
from covrag.plan.grounded import GroundedPlanner, frame_terms, parse_subquestions, points_at_shown
from covrag.plan.planned import PlannerAspects
from covrag.plan.sources import AspectOptions
from covrag.types import Passage
from llm_support import ScriptedLLM, tiny_llm

POOL = (
    Passage("tar#3", "-z, --gzip, --gunzip, --ungzip Filter the archive through gzip(1).",
            metadata={"source": "/docs/tar.1.txt"}),
    Passage("gzip#1", "gzip reduces the size of the named files using Lempel-Ziv coding.",
            metadata={"source": "/docs/gzip.1.txt"}),
    Passage("tar#9", "--exclude=PATTERN Exclude files matching PATTERN, a glob(3)-style wildcard.",
            metadata={"source": "/docs/tar.1.txt"}),
)  # fmt: skip
QUESTION = "How can I make tar create a gzip-compressed archive and exclude some files?"


def test_sub_questions_keep_the_question_frame_and_the_limit() -> None:
    llm = ScriptedLLM(
        [
            "1. How can I create a gzip-compressed archive?\n"
            "2. How can I exclude some files from the archive with tar?\n"
            "3. What is an archive\n"  # not a question: dropped
            "4. How can I exclude some files from the archive with tar?\n"  # a repeat
            "5. What does gzip do to a file?\n"  # past the limit of 2
        ]
    )
    plan = GroundedPlanner(llm, most=2).plan(QUESTION, POOL)
    assert [a.text for a in plan.aspects] == [
        "How can I create a gzip-compressed archive with tar?",  # the frame put back
        "How can I exclude some files from the archive with tar?",
    ]
    assert [a.id for a in plan.aspects] == ["sq1", "sq2"]
    notes = " ".join(plan.notes)
    assert "kept in the question's frame" in notes
    assert "is not a question" in notes and "repeats an earlier" in notes
    assert "past the limit of 2" in notes
    # the prompt shows the question, what the search found (by document) and the limit
    prompt = llm.requests[0][0][-1].content
    assert QUESTION in prompt and "(tar.1.txt) -z, --gzip" in prompt and "at most 2" in prompt
    assert llm.requests[0][1] is None  # plain text: no grammar-constrained JSON


def test_a_simple_question_is_its_own_sub_question_and_nothing_usable_falls_back() -> None:
    kept, notes = parse_subquestions(f"{QUESTION}\n", QUESTION, 4)
    assert kept == [QUESTION] and notes == []
    plan = GroundedPlanner(ScriptedLLM(["Sure! Here you go."])).plan(QUESTION, POOL)
    assert [a.text for a in plan.aspects] == [QUESTION]
    assert "the question itself is the one aspect" in plan.notes[-1]
    assert frame_terms("Does SSH keep the link alive?", POOL) == []
    assert frame_terms(QUESTION, POOL) == ["tar"]


def test_the_planner_aspect_source_plans_grounded_and_keeps_the_request_aspects() -> None:
    llm = ScriptedLLM(["How can I exclude some files?"])
    planner = PlannerAspects(llm, AspectOptions(subquestions=3, answers=0))
    query = C2Query.explicit(QUESTION, exclude=("bzip2",))
    planned = planner.plan(query, pool=POOL, grounded=True)
    texts = [a.text for a in planned.aspects]
    assert texts[0] == "How can I exclude some files with tar?"
    assert planned.aspects[-1].polarity == "exclude"
    assert any("frame" in w for w in planned.warnings)


@pytest.mark.slow
def test_grounded_planning_runs_on_the_tiny_model() -> None:
    plan = GroundedPlanner(tiny_llm(), most=3).plan(QUESTION, POOL)
    assert 1 <= len(plan.aspects) <= 3
    assert all(a.text.endswith("?") for a in plan.aspects)


def test_one_question_worded_twice_is_kept_once() -> None:
    kept, notes = parse_subquestions(
        "How can I configure scp to use the bastion host every time?\n"
        "How can I set up scp to use the bastion host every time?\n"
        "How do I copy a folder with scp?\n",
        "How do I copy a folder through a bastion host with scp?",
        4,
    )
    assert kept == [
        "How can I configure scp to use the bastion host every time?",
        "How do I copy a folder with scp?",
    ]
    assert "repeats an earlier sub-question" in notes[0]


def test_a_looping_reply_is_noted_once_with_its_count() -> None:
    loop = "What is the difference between copy2 and copytree?\n" * 12
    kept, notes = parse_subquestions(
        "What is the difference between shutil.copy and shutil.copy2?\n" + loop,
        "What's the actual difference between shutil.copy and shutil.copy2?",
        4,
    )
    assert len(kept) == 2
    assert notes == [
        "sub-question dropped: 'What is the difference between copy2 and copytree?' repeats an "
        "earlier sub-question (11 times)"
    ]


def test_sub_questions_pointing_at_the_passages_shown_are_dropped() -> None:
    # as the embedded model wrote them for "How does zlib decide whether data is text or binary?"
    llm = ScriptedLLM(
        [
            "1. What are the block-listed codes mentioned in the passage?\n"
            "2. What does the second passage say about tar?\n"
            "3. What options are described in the text?\n"
            "4. What is the name of the compression library mentioned in the first document?\n"
            "5. How can I exclude files from a tar archive?\n"
        ]
    )
    plan = GroundedPlanner(llm, most=4).plan(QUESTION, POOL)
    assert [a.text for a in plan.aspects] == ["How can I exclude files from a tar archive?"]
    assert " ".join(plan.notes).count("asks about the passages shown") == 4
    # nothing usable left: the question itself is the one aspect
    # (the embedded model once counted "first document" ... "eleventh document" in one reply)
    reply = "What does the passage say about tar?\n" + "\n".join(
        f"What is the name of the library mentioned in the {nth} document?"
        for nth in ("seventh", "eleventh", "nineteenth", "12th")
    )
    only = GroundedPlanner(ScriptedLLM([reply])).plan(QUESTION, POOL)
    assert [a.text for a in only.aspects] == [QUESTION]
    assert " ".join(only.notes).count("asks about the passages shown") == 5
    # words that name a user's own documents or text are the user's subject, and stay
    for kept in (
        "How do I number the pages of a document?",
        "How do I read the text of a file?",
        "How do I extract text from the first documents page?",
        "Which options are given in the manual?",
    ):
        assert not points_at_shown(kept), kept


class CutScriptedLLM(ScriptedLLM):
    """A scripted model whose every reply stops at the token limit, as a looping one does."""

    def _chat(self, messages: Any, schema: Any, params: Any) -> ChatResult:
        return dataclasses.replace(super()._chat(messages, schema, params), finish_reason="length")


def test_a_plan_reply_cut_at_the_limit_is_used_and_cached(tmp_path: Path) -> None:
    looping = "\n".join(
        ["How can I exclude files from a tar archive?"]
        + [f"What is named in the {n} document?" for n in ("first", "second", "third")]
        + ["What is named in the fourth"]  # cut here
    )
    inner = CutScriptedLLM([looping])
    llm = CachedLLM(inner, ResponseCache(tmp_path / "cache.sqlite"))
    first = GroundedPlanner(llm).plan(QUESTION, POOL)
    assert [a.text for a in first.aspects] == ["How can I exclude files from a tar archive?"]
    assert "reached its limit of 160 tokens" in " ".join(first.notes)
    # the next run is answered from the cache: the same plan, no model call
    again = GroundedPlanner(llm).plan(QUESTION, POOL)
    assert again.aspects == first.aspects and inner.usage.calls == 1


def test_a_plan_no_sub_question_of_which_shares_a_word_with_the_question_is_dropped() -> None:
    # the nodejs benchmark's cold plan for a question about setTimeout: the search's first
    # passages were fs.Stats', and the planner asked about them four times over
    question = (
        "I schedule a reminder with setTimeout(fn, 30 * 24 * 60 * 60 * 1000), thirty days "
        "ahead, and the callback runs almost immediately. Why?"
    )
    reply = (
        "What is the birthtime of the file system documentation?\n"
        "What is the birthtime of the Node.js v20.20.2 documentation?\n"
        "What is the birthtime of the Timers documentation?\n"
    )
    plan = GroundedPlanner(ScriptedLLM([reply])).plan(question, POOL)
    assert [a.text for a in plan.aspects] == [question]
    assert "no sub-question shares a word with the question" in " ".join(plan.notes)
    # one sub-question in the question's words keeps the plan, the others with it
    kept = GroundedPlanner(ScriptedLLM([reply + "When does setTimeout call its callback?\n"]))
    assert len(kept.plan(question, POOL).aspects) == 4
