"""``covrag.pipeline.events``: ``ask_stream`` reports the stages, the writer's tokens and then
``ask``'s own result; leaving the loop stops the work; a failure is raised where it happened.

The LLM is the slow scripted one (a word at a time, reporting each word as a streaming backend
reports its tokens, and checking the deadline between words); the support check's cross-encoder
is real.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from covrag.errors import ConfigError
from covrag.pipeline import (
    AnswerEvent,
    AskConfig,
    EventSink,
    EventStream,
    PlannedEvent,
    RetrievedEvent,
    SelectedEvent,
    TokenEvent,
    ask,
    ask_stream,
)
from covrag.pipeline.events import next_step
from covrag.retrieve import BM25Retriever
from covrag.types import Aspect, Passage
from generate_support import KeywordCoverage
from llm_support import SlowScriptedLLM

CORPUS = (
    Passage("c1", "School uniforms reduce bullying between pupils."),
    Passage("c2", "Uniforms cost parents a lot of money each year."),
    Passage("c3", "Trains run late on Sundays."),
)
ASPECTS = (Aspect("sq1", "bullying at school"), Aspect("sq2", "cost of uniforms"))
REPLY = "School uniforms reduce bullying between pupils [1]."
CONFIG = AskConfig(pool=3, k=2, passes=0, writer="extractive")
QUESTION = "Should schools require uniforms?"


def _ask_stream(llm: SlowScriptedLLM) -> EventStream[object]:
    return ask_stream(  # type: ignore[return-value]
        QUESTION,
        llm,
        BM25Retriever().index(CORPUS),
        CONFIG,
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )


@pytest.mark.model
def test_ask_stream_reports_each_stage_then_the_tokens_then_asks_result() -> None:
    seen = list(_ask_stream(SlowScriptedLLM([REPLY], seconds_per_word=0.0)))
    plain = ask(
        QUESTION,
        SlowScriptedLLM([REPLY], seconds_per_word=0.0),
        BM25Retriever().index(CORPUS),
        CONFIG,
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )

    planned, retrieved, selected, *tokens, last = seen
    assert planned == PlannedEvent(ASPECTS)
    pool = tuple(p.id for p in plain.topic.passages)
    assert retrieved == RetrievedEvent(pool, plain.queries) and set(pool) == {"c1", "c2"}
    assert selected == SelectedEvent(plain.selection.passage_ids, "")
    assert all(isinstance(t, TokenEvent) and t.step == "write" for t in tokens)
    assert "".join(t.text for t in tokens) == REPLY  # type: ignore[attr-defined]
    assert isinstance(last, AnswerEvent)
    result = last.result
    assert result.generation.answer == plain.generation.answer
    assert result.selection.passage_ids == plain.selection.passage_ids
    assert result.warnings == plain.warnings


@pytest.mark.model
def test_leaving_the_loop_stops_the_llm_at_its_next_word() -> None:
    llm = SlowScriptedLLM([" ".join(["word"] * 10_000)], seconds_per_word=0.01)
    for event in _ask_stream(llm):
        if isinstance(event, TokenEvent):
            break
    left = time.monotonic()
    while not llm.stopped_after and time.monotonic() < left + 10:
        time.sleep(0.01)
    assert llm.stopped_after and time.monotonic() - left < 1.0
    assert llm.words < 500


def test_a_failure_is_raised_at_the_point_of_the_iteration_where_it_happened() -> None:
    def run(sink: EventSink) -> str:
        sink.emit(PlannedEvent(ASPECTS))
        raise ConfigError("no such thing")

    events = iter(EventStream(run))
    assert next(events) == PlannedEvent(ASPECTS)
    with pytest.raises(ConfigError, match="no such thing"):
        next(events)


def test_tokens_are_forwarded_only_while_generating_and_named_by_step() -> None:
    from covrag.llm.progress import TokenProgress

    def run(sink: EventSink) -> str:
        sink.token(TokenProgress("m", 1, 0.1, text="{plan"))  # a planning call: not forwarded
        sink.emit(SelectedEvent(("c1",)))
        for stage in ("generate", "write", "critique 1", "rewrite 1"):
            sink.stage(stage)
            sink.token(TokenProgress("m", 1, 0.1, text=stage))
        sink.token(TokenProgress("m", 1, 0.1, done=True))  # a call's last report: no text
        return "done"

    events = list(EventStream(run))
    assert events == [
        SelectedEvent(("c1",)),
        TokenEvent("generate", "write"),
        TokenEvent("write", "critique 1"),
        TokenEvent("critique 1", "rewrite 1"),
        TokenEvent("rewrite 1", "critique 2"),
        AnswerEvent("done"),
    ]
    assert [next_step(s) for s in ("write", "critique 2", "rewrite 2")] == [
        "critique 1", "rewrite 2", "critique 3",
    ]  # fmt: skip


def test_the_stream_iterates_in_async_code_too() -> None:
    def run(sink: EventSink) -> int:
        sink.emit(RetrievedEvent(("c1", "c2")))
        time.sleep(0.05)  # the reader waits for the worker
        return 2

    async def read() -> list[object]:
        return [event async for event in EventStream(run)]

    assert asyncio.run(read()) == [RetrievedEvent(("c1", "c2")), AnswerEvent(2)]
