"""QPlanner end to end: request -> C2 query -> sub-questions, QTree -> judged outlines -> the best.

Every step is the LLM's, checked and retried (see the step modules); the random outline baseline
is judged alongside the LLM's candidates so a plan always shows what chance would have scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from covrag.llm.base import LLM
from covrag.plan.conditioned import C2Query, split_request
from covrag.plan.decompose import LLMDecomposer, SubQuestions
from covrag.plan.judge import OutlineJudge
from covrag.plan.outline import Outline, OutlineExtractor, random_outline
from covrag.plan.qtree import QTree, QTreeBuilder

if TYPE_CHECKING:
    from covrag.embed import Encoder


@dataclass(frozen=True)
class Plan:
    """The plan of one request.

    Attributes:
        query: The C2 query (base, include, exclude).
        subquestions: DES sub-questions of the base query (None when not asked for).
        tree: The QTree.
        candidates: The LLM's outlines, judged, in extraction order.
        baseline: The random outline, judged.
    """

    query: C2Query
    subquestions: SubQuestions | None
    tree: QTree
    candidates: tuple[Outline, ...]
    baseline: Outline

    @property
    def best(self) -> Outline:
        """The highest-scored candidate (the earliest extracted on ties)."""
        return max(self.candidates, key=lambda o: o.score or 0)


@dataclass
class QPlanner:
    """Plans a request with one LLM (and optionally another as judge).

    Args:
        llm: Writes the split, sub-questions, tree and outlines.
        judge_llm: Scores the outlines (default: ``llm``).
        subquestions: DES sub-questions to write (0 = none).
        depth: QTree levels.
        branching: QTree children per node.
        outline_size: Nodes per outline.
        candidates: Outlines to extract.
        retries: Extra attempts of each step.
        seed: Seed of the random baseline.
        encoder: Sentence encoder for de-duplicating sub-questions.
        decompose_style: How the sub-questions are asked for
            (:data:`~covrag.plan.decompose.STYLES`).
    """

    llm: LLM
    judge_llm: LLM | None = None
    subquestions: int = 10
    depth: int = 3
    branching: int = 3
    outline_size: int = 4
    candidates: int = 3
    retries: int = 2
    seed: int = 0
    encoder: Encoder | None = field(default=None, repr=False)
    decompose_style: str = "factors"

    def query(
        self, request: str, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> C2Query:
        """Explicit constraints when given, else the LLM's split of the request."""
        if include or exclude:
            return C2Query.explicit(request, include, exclude)
        return split_request(self.llm, request, retries=self.retries)

    def plan(self, request: str, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Plan:
        query = self.query(request, include, exclude)
        return self.plan_tree(query, self.decompose(query))

    def decompose(self, query: C2Query) -> SubQuestions | None:
        """DES sub-questions of the base query (None when ``subquestions`` is 0)."""
        if not self.subquestions:
            return None
        decomposer = LLMDecomposer(
            self.llm,
            n=self.subquestions,
            retries=self.retries,
            encoder=self.encoder,
            style=self.decompose_style,
        )
        return decomposer.decompose(query.base)

    def plan_tree(self, query: C2Query, subquestions: SubQuestions | None) -> Plan:
        """The QTree, the judged outlines and the random baseline, completing a plan."""
        tree = QTreeBuilder(
            self.llm, depth=self.depth, branching=self.branching, retries=self.retries
        ).build(query)
        extractor = OutlineExtractor(
            self.llm, size=self.outline_size, candidates=self.candidates, retries=self.retries
        )
        judge = OutlineJudge(self.judge_llm or self.llm, retries=self.retries)
        candidates = tuple(judge.judge(query, o) for o in extractor.extract(tree, query))
        baseline = judge.judge(query, random_outline(tree, self.outline_size, self.seed))
        return Plan(query, subquestions, tree, candidates, baseline)
