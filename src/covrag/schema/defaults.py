"""The numbers of ``covrag ask``'s defaults, written once: the pipeline's :data:`ASK` preset
(:mod:`covrag.pipeline.policy`, and through it :class:`~covrag.pipeline.AskConfig`) is built from
them, and the requests of ``/v1/answer`` and ``/v1/plan`` (:mod:`covrag.schema.http_answer`,
:mod:`covrag.schema.http_plan`) default to them; a schema imports no pipeline, so they live here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: The coverage floor of ``ask``: a passage enters the context only when the estimator gives it
#: at least this probability of answering one wanted aspect (or the question itself).
DEFAULT_FLOOR = 0.5
#: The topic gate of ``ask``: a passage enters the context only when its MiniLM cosine to the
#: question reaches this (``covrag.selectors.floor``); it holds for the packaged MiniLM only.
#: Floor and gate were chosen together by leave-topics-out cross-validation over 28 ArgKP
#: train + dev topics (the LLM's sub-questions) and 40 Perspectrum-evidence train + dev topics
#: (docs/experiments/20-question-aware-coverage.md, "A topic gate").
DEFAULT_GATE = 0.5

#: The relative gate of ``ask``: where even the best passage's cosine is under the gate, the gate
#: applied is that cosine minus this margin. On the answer benchmark's five corpora
#: (benchmarks/answers/, ``bench_answer_nuggets.py --stage context``) the context's nugget recall
#: with it is at least the fixed gate's on every corpus (manuals 0.68 -> 0.76, licences 0.25 ->
#: 0.42, guides 0.56 -> 0.58, python-api and compression unchanged; 0.51 -> 0.57 pooled), and a
#: cross-document question whose passages all sit under 0.5 gets a context instead of a refusal.
#: Chosen on all five corpora: leaving one out, the pre-written rule (best pooled recall on the
#: other four) picks no stable variant (docs/experiments/29-answer-benchmark.md).
DEFAULT_GATE_MARGIN = 0.1


#: What the topic gate reads: each passage's own similarity (``passage``), or whether a passage
#: of its document clears both the gate and the floor (``document``;
#: :mod:`covrag.selectors.floor`).
GateScope = Literal["passage", "document"]

#: What the floor and the gate judge: each passage (``passages``: a passage enters the context
#: only when it clears them) or the question (``question``: it is answered only when some passage
#: clears them, and the selector then chooses among every passage the name filter keeps;
#: :mod:`covrag.selectors.floor`).
FilterScope = Literal["passages", "question"]

#: What orders a pool for the selector (:class:`~covrag.pipeline.policy.ContextPolicy`'s
#: ``relevance``): ``auto`` is the passages' scores when every passage has one, else their order.
Relevance = Literal["auto", "dense", "sentences", "score", "order"]


@dataclass(frozen=True)
class AskDefaults:
    """The defaults of ``covrag ask`` that ``/v1/answer`` and ``/v1/plan`` share (the writer's:
    :data:`~covrag.schema.writer.WRITER`): the filters, the ordering of the pool, and the
    planner's sub-questions (at most 4, grounded in a first search) with no answer sketches."""

    floor: float = DEFAULT_FLOOR
    floor_question: bool = True
    gate: float = DEFAULT_GATE
    gate_margin: float = DEFAULT_GATE_MARGIN
    # the gate read by passage: read by document it raised the context's nugget recall on the
    # answer benchmark (0.54 -> 0.56) and lowered V_strict (0.34 -> 0.26), and leaving one corpus
    # out on V_strict chooses by passage (docs/experiments/32-document-gate.md)
    gate_scope: GateScope = "passage"
    # the floor and the gate judge whether the question is answered, and the k passages are the
    # pool's nearest the question (passage and sentence cosine): leaving one corpus out of the
    # answer benchmark chose this in every fold, context nugget recall 0.54 -> 0.69, and the
    # same questions are refused (docs/experiments/33-nearest-sentences.md)
    filters: FilterScope = "question"
    # top-k, or the label-free choice where relevance is flat across the pool (its 50th passage
    # within 40% of the first, as in a pool of arguments on one debate topic; no document
    # question's pool comes within 47%): chosen in 7 of 8 leave-one-corpus-out folds (the
    # eighth: flat=0.35) over the answer benchmark's 5 corpora and 3 debate sets; ArgKP 0.393
    # -> 0.560 alpha-nDCG@10 (the label-free default's), no document question's context
    # changed (docs/experiments/38-deep-flatness.md)
    selector: str = "topk(flat=0.4, rank=50)"
    relevance: Relevance = "sentences"
    names: bool = True
    # 12 passages: leaving one corpus out of the answer benchmark chose 12 over 8 and 10 in every
    # fold, context nugget recall 0.69 -> 0.74 (+0.051, CI +0.022..+0.086), V_strict 0.51 ->
    # 0.59, StRecall 0.45 -> 0.51; answers grow (a median of 16 cited sentences, was 11) and the
    # writer's prompt with them (docs/experiments/39-question-weight.md)
    k: int = 12
    subquestions: int = 4
    answers: int = 0


#: ``covrag ask``'s defaults: what :data:`covrag.pipeline.policy.ASK` is built from.
ASK_DEFAULTS = AskDefaults()
