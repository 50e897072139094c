"""Cooperative deadlines (covrag.deadline) in the shipped cross-encoder's batched scoring."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from covrag.coverage.cross_encoder import CrossEncoderCoverage, _scorer
from covrag.deadline import (
    Deadline,
    DeadlineExceeded,
    check_deadline,
    current_deadline,
    deadline_scope,
    watch_checks,
)
from deadline_support import assert_stops_at_a_check, checks_made

pytestmark = pytest.mark.model


def pairs(n: int) -> list[tuple[str, str]]:
    tag = uuid.uuid4().hex[:8]
    return [
        (f"Passage {i} ({tag}) about buses and trams.", f"public transport {i % 3}")
        for i in range(n)
    ]


def scorer():  # type: ignore[no-untyped-def]
    estimator = CrossEncoderCoverage(batch_size=4)
    return _scorer(estimator.model_path(), estimator.batch_size, estimator.max_length)


def test_outside_a_scope_nothing_is_checked() -> None:
    assert current_deadline() is None
    seen: list[Deadline] = []
    with watch_checks(seen.append):
        check_deadline()
    assert seen == []


def test_scores_under_a_deadline_equal_scores_without() -> None:
    todo = pairs(10)
    plain = scorer()._onnx.predict(todo)  # type: ignore[union-attr]
    seen: list[Deadline] = []
    with deadline_scope(Deadline.after(600.0)), watch_checks(seen.append):
        timed = scorer()._onnx.predict(todo)  # type: ignore[union-attr]
    assert np.array_equal(plain, timed)
    assert len(seen) == 3  # one check before each batch of 4: 4 + 4 + 2


def test_a_passed_deadline_stops_scoring_and_caches_nothing() -> None:
    todo = pairs(9)
    scoring = scorer()
    batches: list[Deadline] = []
    with deadline_scope(Deadline.after(600.0)) as deadline:

        def expire_after_first(_: Deadline) -> None:
            batches.append(deadline)
            if len(batches) == 2:  # the second batch boundary finds the deadline passed
                deadline.cancel()

        with watch_checks(expire_after_first), pytest.raises(DeadlineExceeded, match="600 s"):
            scoring.score(todo)
    assert len(batches) == 2
    assert not any(pair in scoring._cache for pair in todo)
    values, scored, _ = scoring.score(todo)  # after the scope: scored in full, as before
    assert scored == 9 and values.shape == (9,)


def test_the_encoder_checks_a_deadline_between_chunks() -> None:
    from covrag.embed import Encoder

    encoder = Encoder(batch_size=2)
    texts = [f"A sentence about trams, number {i}." for i in range(10)]
    plain = encoder._encode(texts)  # the uncached path of encode
    timed, checks = checks_made(lambda: encoder._encode(texts))
    np.testing.assert_allclose(timed, plain, atol=1e-6)
    assert checks == 2  # chunks of 4 batches of 2 texts: 8 + 2
    assert_stops_at_a_check(lambda: encoder.encode(["never encoded"]))
    assert encoder.encode(["never encoded"]).shape[0] == 1  # and encoded in full afterwards
