"""Every default of choosing a context, in one record: :class:`ContextPolicy` and its presets.

Each entry point that chooses a context (``covrag.select``, ``POST /v1/select``, ``POST
/v1/answer``, the framework integrations, ``covrag ask``, ``covrag bench`` and ``covrag-lab cv``)
runs :func:`covrag.pipeline.context.choose` (or its steps) under a policy, and the defaults each one
starts from are the presets below, side by side, so that a difference between two entry points
is written here or nowhere:

| preset | entry point | aspects | k | relevance | floor / gate |
|---|---|---|---|---|---|
| :data:`SELECT` | ``covrag.select`` | the topic's own | 10 | dense | none |
| :data:`SELECT_BATCH` | ``covrag select`` | ``--aspects`` | 10 | ``--relevance`` | none |
| :data:`SERVER_SELECT` | ``/v1/select`` | the request's, else label-free | 10 | as asked | none |
| :data:`INTEGRATIONS` | the integrations | given, else label-free | 5 | auto | none |
| :data:`ASK` | ``covrag ask`` | ``planner`` | 8 | sentences | 0.5 / 0.5 (the question) |
| :data:`ANSWER` | ``/v1/answer`` (with ``k``) | the request's | the request's | order | as ask |
| :data:`BENCH` | ``covrag bench`` / ``cv`` | ``--aspects`` | ``--budgets`` | dense | none |

``covrag ask`` takes the 12 passages of the pool nearest the question (``topk`` over the
``sentences`` relevance; where that relevance is flat across the pool, the label-free
choice: ``topk(flat=0.4, rank=50)``, docs/experiments/36-flat-relevance.md and
38-deep-flatness.md), and its floor and gate judge the question (``filters="question"``:
whether it is answered at all), not each passage;
``/v1/answer`` selects with the server's selector, its floor and gate judging each passage
(docs/experiments/33-nearest-sentences.md).

Without aspects and without a named selector, ``/v1/select`` and the integrations choose by
:data:`LABEL_FREE_SELECTOR` (``label_free``, read by :meth:`ContextPolicy.resolve` alone): facility
location over the learned same-point similarity (the shipped mpnet model), each similarity counted
from the pool's typical pair (``contrast=1``): the best label-free row under leave-topics-out CV on
ArgKP, and above plain facility location on Perspectrum with a model that never saw it
(docs/experiments/24-same-point-mpnet-and-contrast.md).
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from covrag.errors import ConfigError
from covrag.plan.sources import AspectOptions
from covrag.schema.defaults import ASK_DEFAULTS, FilterScope, GateScope
from covrag.schema.defaults import DEFAULT_FLOOR as DEFAULT_FLOOR  # re-exported
from covrag.schema.defaults import DEFAULT_GATE as DEFAULT_GATE  # re-exported
from covrag.schema.defaults import DEFAULT_GATE_MARGIN as DEFAULT_GATE_MARGIN  # re-exported
from covrag.schema.defaults import Relevance as Relevance  # re-exported
from covrag.types import Budget

if TYPE_CHECKING:
    from covrag.coverage.base import CoverageEstimator
    from covrag.selectors.base import Selector
    from covrag.tokens import TokenCounter

#: The selector used wherever a caller names none (ask, the server, the integrations): the best
#: measured selector on estimated coverage (docs/BENCHMARKS.md).
DEFAULT_SELECTOR = "expected-coverage"
#: The coverage estimator used wherever a caller names none: the shipped cross-encoder.
DEFAULT_COVERAGE = "cross-encoder"
#: The selector where the caller gives no aspects and names no selector (``/v1/select``, the
#: integrations): facility location over the shipped same-point bi-encoder. Chosen from the CV
#: tables of docs/experiments/23-label-free-cv-table.md and
#: 24-same-point-mpnet-and-contrast.md (leave topics out over train + dev topics, k = 10,
#: alpha-nDCG@10, paired with facility location over MiniLM cosine): ArgKP 28 topics, the shipped
#: mpnet recipe trained per fold without the topic, +0.113 (95% CI +0.064..+0.163; +0.102 without
#: the contrast), +0.089 (+0.046..+0.132) with a model that never saw ArgKP; Perspectrum 680
#: claims with a model that never saw Perspectrum +0.047 (+0.037..+0.057). ``contrast=1`` was
#: chosen on ArgKP (4 of 5 folds) and checked on Perspectrum; the former default (pool
#: representatives + the cross-encoder) was -0.058 on Perspectrum.
LABEL_FREE_SELECTOR = "facility-location(similarity='same-point', contrast=1)"


def _help(text: str) -> dict[str, object]:
    return {"help": text}


@dataclass(frozen=True)
class ContextPolicy:
    """How a context is chosen: aspects -> estimate -> floor / gate -> select.

    Attributes:
        selector: A selector or its spec.
        coverage: A coverage estimator or its spec, estimated whether or not the selector reads
            it; None: :data:`DEFAULT_COVERAGE`, only when the selector reads coverage.
        aspects: The aspect source (a name in :data:`covrag.plan.ASPECT_SOURCES`) whose aspects
            coverage is estimated against; None: the topic's own.
        aspect_options: What the aspect sources are built from (sub-questions, sketches, ...).
        k: At most this many passages (None: no limit on the count).
        max_tokens: At most this many tokens (None: no limit on the tokens).
        relevance: ``dense`` (MiniLM cosine to the query), ``sentences`` (that plus the cosine
            of the passage's sentence nearest the query), ``score``, ``order`` or ``auto``.
        floor: The coverage floor (0: none; :mod:`covrag.selectors.floor`).
        floor_question: Whether a passage that answers the question itself clears the floor.
        gate: The topic gate: the least MiniLM cosine to the question (0: none).
        gate_margin: A relative gate where the best passage is weak: the gate applied is
            ``min(gate, best cosine - gate_margin)`` (0: the gate as given).
        gate_scope: ``passage``: a passage clears the gate by its own cosine; ``document``: by
            a passage of its document that clears the gate and the floor.
        filters: ``passages``: floor and gate judge each passage; ``question``: whether the
            question is answered (some passage clears both), the selector then choosing among
            every passage the name filter keeps.
        pool_aspects: Also cover this many representatives of what clears the filters.
        names: The name filter: when the question names something (an acronym, a code name:
            :func:`covrag.text.subject_names`) that no retrieved passage writes, keep none, and
            say so (:mod:`covrag.selectors.floor`); ``ask`` first adds to its pool the corpus
            passages that write such a name (:mod:`covrag.retrieve.named`).
        label_free: The selector spec used when the caller names no selector and gives no
            aspects (None: ``selector`` then too).
        counter: Token counter for the budget (None: MiniLM WordPiece).

    The fields ``covrag ask`` sets carry its options' help in ``metadata["help"]``
    (:class:`~covrag.pipeline.AskConfig` reads it, and its defaults from :data:`ASK`).
    """

    selector: str | Selector = field(
        default=DEFAULT_SELECTOR,
        metadata=_help("selector spec (greedy-coverage, expected-coverage, 'mmr(lam=0.7)', ...)"),
    )
    coverage: str | CoverageEstimator | None = field(
        default=None, metadata=_help("coverage estimator spec (cross-encoder, embedding, ...)")
    )
    aspects: str | None = None
    aspect_options: AspectOptions = AspectOptions()
    k: int | None = field(default=10, metadata=_help("passages in the answer's context"))
    max_tokens: int | None = None
    relevance: Relevance = field(
        default="dense",
        metadata=_help(
            "what orders the pool for the selector: dense = MiniLM cosine to the question; "
            "sentences = that plus the cosine of the passage's sentence nearest it; score = "
            "the retriever's scores; order = pool order; auto = score when every passage has "
            "one, else order"
        ),
    )
    floor: float = field(
        default=0.0,
        metadata=_help(
            "coverage floor: only passages with at least this estimated probability of "
            "answering a sub-question (or the question, see floor_question) are selected, so "
            "the context may hold fewer than k (0, with gate 0, always fills k)"
        ),
    )
    floor_question: bool = field(
        default=False,
        metadata=_help(
            "whether a passage that the estimator says answers the question itself clears the "
            "floor too, not only one that answers a sub-question (on by default: broad "
            "sub-questions score lower than the question they come from; False: the floor "
            "reads the sub-questions only)"
        ),
    )
    gate: float = field(
        default=0.0,
        metadata=_help(
            "topic gate: only passages whose embedding (the packaged MiniLM) has at least this "
            "cosine similarity to the question are selected: a passage from another subject "
            "can answer a broad sub-question (0 = no gate)"
        ),
    )
    gate_margin: float = field(
        default=0.0,
        metadata=_help(
            "relative topic gate: where even the best passage sits under the gate, the gate "
            "applied is the best passage's cosine minus this margin (0 = the gate as given)"
        ),
    )
    gate_scope: GateScope = field(
        default="passage",
        metadata=_help(
            "what the topic gate reads: passage = each passage's own cosine; document = a "
            "passage clears the gate when a passage of its document clears the gate and the "
            "floor (an option's definition is worded unlike the question; its manual's "
            "passage that names the subject is not)"
        ),
    )
    filters: FilterScope = field(
        default="passages",
        metadata=_help(
            "what the floor and the gate judge: passages = a passage enters the context only "
            "when it clears both; question = whether the question is answered at all (refused "
            "when no passage clears both), the selector then choosing among every passage the "
            "name filter keeps (an option's definition is worded unlike the question)"
        ),
    )
    pool_aspects: int = field(
        default=0,
        metadata=_help(
            "also select to cover this many representatives of the pool (facility location), "
            "beside the sub-questions (0 = the sub-questions only)"
        ),
    )
    names: bool = field(
        default=False,
        metadata=_help(
            "name filter: a question naming something (an acronym or a code name such as TOML "
            "or shutil.copy2) that no retrieved passage writes is refused, naming it (ask first "
            "adds the corpus passages that write it, so only a name no document writes is)"
        ),
    )
    label_free: str | None = None
    counter: TokenCounter | None = field(default=None, compare=False)

    def value(self, name: str) -> Any:
        """The value of the field ``name``: this policy's, or its aspect options'
        (:func:`policy_field`)."""
        owner = self.aspect_options if name in _OPTION_FIELDS else self
        policy_field(name)  # an unknown name is an error, not an attribute of something else
        return getattr(owner, name)

    def with_values(self, **values: Any) -> ContextPolicy:
        """This policy with the named fields set, each on the policy or on its aspect options
        (:func:`policy_field`)."""
        for name in values:
            policy_field(name)
        options = {n: v for n, v in values.items() if n in _OPTION_FIELDS}
        own = {n: v for n, v in values.items() if n not in _OPTION_FIELDS}
        return replace(self, aspect_options=replace(self.aspect_options, **options), **own)

    def budget(self) -> Budget:
        """The budget of ``k`` and ``max_tokens`` (ConfigError when neither limits anything)."""
        try:
            return Budget(max_passages=self.k, max_tokens=self.max_tokens)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def resolve(self, *, aspects_given: bool, selector_named: bool) -> ContextPolicy:
        """The policy an entry point runs, its defaults applied once, for every entry point:
        without aspects and without a named selector, the label-free selector (where the
        preset has one, ``label_free``). The one place ``label_free`` is read."""
        if self.label_free is not None and not aspects_given and not selector_named:
            return replace(self, selector=self.label_free)
        return self

    def budgeted(self, k: int | None, max_tokens: int | None) -> ContextPolicy:
        """This policy under ``k`` and ``max_tokens``; with neither, under the preset's own."""
        if k is None and max_tokens is None:
            return self
        return replace(self, k=k, max_tokens=max_tokens)


_OWN_FIELDS = {f.name: f for f in fields(ContextPolicy) if f.name != "aspect_options"}
_OPTION_FIELDS = {f.name: f for f in fields(AspectOptions)}


def policy_field(name: str) -> Field[Any]:
    """The field ``name`` of :class:`ContextPolicy`, or of its :class:`AspectOptions` (no name is
    both's): where an option's help (``metadata["help"]``) is written.

    Raises:
        ConfigError: ``name`` is neither's field.
    """
    found = _OWN_FIELDS.get(name) or _OPTION_FIELDS.get(name)
    if found is None:
        raise ConfigError(f"a context policy has no field {name!r}")
    return found


#: ``covrag.select``: the topic's own aspects, at most 10 passages, MiniLM relevance.
SELECT = ContextPolicy()
#: ``covrag select``: as ``covrag.select``, over a dataset's topics on an executor; the aspects
#: ``--aspects`` names (``gold``: the topics' own), no coverage estimator unless ``--coverage``
#: names one, and no floor or gate (a batch selection applies neither).
SELECT_BATCH = ContextPolicy()
#: ``POST /v1/select``: as ``covrag.select``; a request without aspects and without a selector
#: gets :data:`LABEL_FREE_SELECTOR`; one without aspects that names a selector reading coverage
#: gets the ``pool`` source (``covrag.server.service.build_job``).
SERVER_SELECT = ContextPolicy(label_free=LABEL_FREE_SELECTOR)
#: The framework integrations (``CoverageChoice``): at most 5 documents, the retriever's scores
#: when every document has one; without aspects and without a selector,
#: :data:`LABEL_FREE_SELECTOR`; a selector that reads coverage and no aspects: the pool's
#: representatives as aspects (they beat the query as the only aspect under five-fold CV on
#: ArgKP, alpha-nDCG@10 0.500 against 0.383 with expected coverage,
#: docs/experiments/20-question-aware-coverage.md).
INTEGRATIONS = ContextPolicy(aspects="pool", k=5, relevance="auto", label_free=LABEL_FREE_SELECTOR)
#: ``covrag ask`` (the defaults of :class:`covrag.pipeline.AskConfig`): the planner's aspects
#: (at most 4 sub-questions, grounded in a first search, no sketches); the question answered
#: only when a passage clears the coverage floor (the question counts), the topic gate (by
#: passage) and the name filter; then the 12 passages the name filter keeps that are nearest the
#: question (their own cosine plus their nearest sentence's). Expected coverage over the
#: sub-questions, among only the passages that clear floor and gate, held 0.54 of the answer
#: benchmark's nuggets, this 0.69 (chosen in every leave-one-corpus-out fold,
#: docs/experiments/33-nearest-sentences.md); 12 passages rather than 8, 0.74 (chosen in every
#: fold, V_strict 0.51 -> 0.59, longer answers: docs/experiments/39-question-weight.md). The gate
#: read by document gave worse answers (docs/experiments/32-document-gate.md).
ASK = ContextPolicy(
    coverage=DEFAULT_COVERAGE,
    aspects="planner",
    aspect_options=AspectOptions(
        subquestions=ASK_DEFAULTS.subquestions, answers=ASK_DEFAULTS.answers
    ),
    selector=ASK_DEFAULTS.selector,
    k=ASK_DEFAULTS.k,
    relevance=ASK_DEFAULTS.relevance,
    floor=ASK_DEFAULTS.floor,
    floor_question=ASK_DEFAULTS.floor_question,
    gate=ASK_DEFAULTS.gate,
    gate_margin=ASK_DEFAULTS.gate_margin,
    gate_scope=ASK_DEFAULTS.gate_scope,
    filters=ASK_DEFAULTS.filters,
    names=ASK_DEFAULTS.names,
)
#: ``POST /v1/answer`` with ``k``: the request's aspects and passages in their order, floor and
#: gate as ``ask`` (the request's fields default to them); ``gold`` coverage, which needs
#: labels a request does not carry, is swapped for the cross-encoder.
ANSWER = replace(
    ASK, aspects=None, selector=DEFAULT_SELECTOR, relevance="order", k=None, filters="passages"
)
#: ``covrag bench`` and ``covrag-lab cv``: the aspect options behind ``--subquestions``,
#: ``--answers``, ``--pool-k``; budgets and aspect sources come from the command line.
BENCH = ContextPolicy(aspects="gold", aspect_options=AspectOptions())
