"""The framework-neutral core of the integrations: texts + query -> an ordered, budgeted choice.

Each framework adapter reduces its document objects to texts (and retriever scores), calls
:meth:`CoverageChoice.choose`, and maps the picks back onto its own objects. Keeping the logic here
means LangChain, LlamaIndex and Haystack users get the same selection for the same input, which is
what their frameworks' MMR steps do not give them (see ``shared/USERS.md``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeVar, cast

from covrag.coverage.base import CoverageEstimator, parse_estimator
from covrag.errors import ConfigError
from covrag.pipeline.policy import DEFAULT_COVERAGE as DEFAULT_COVERAGE
from covrag.pipeline.policy import DEFAULT_SELECTOR as DEFAULT_SELECTOR
from covrag.pipeline.policy import INTEGRATIONS
from covrag.pipeline.usecases import aspects_for, select, topic_record
from covrag.selectors.base import Selector, parse_selector
from covrag.tokens import TokenCounter
from covrag.types import Aspect, Budget, CoverageMatrix, Passage, Selection, Topic

AspectLike = str | Aspect
LabelFree = Literal["pool", "query"]
AspectSource = Sequence[AspectLike] | Callable[[str], Sequence[AspectLike]] | LabelFree | None

#: The aspects used when none are given: the pool's representatives (the
#: :data:`covrag.pipeline.INTEGRATIONS` preset, which says why).
DEFAULT_ASPECTS = cast(LabelFree, INTEGRATIONS.aspects)
LABEL_FREE: tuple[LabelFree, ...] = ("pool", "query")
Relevance = Literal["auto", "score", "order", "dense"]
RELEVANCES: tuple[Relevance, ...] = ("auto", "score", "order", "dense")

METADATA_KEY = "covrag"
"""The metadata key under which every adapter records what a document newly covers."""

DEFAULT_K = INTEGRATIONS.k


def as_aspects(items: Sequence[AspectLike]) -> tuple[Aspect, ...]:
    """Aspects from strings (ids ``a1``, ``a2``, ...) or :class:`Aspect` records, in order."""
    aspects: list[Aspect] = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, Aspect):
            aspects.append(item)
        elif isinstance(item, str):
            if not item.strip():
                raise ConfigError(f"aspect {position} is an empty string")
            aspects.append(Aspect(id=f"a{position}", text=item))
        else:
            raise ConfigError(
                f"aspect {position} must be a string or covrag.Aspect, got {type(item).__name__}"
            )
    ids = [a.id for a in aspects]
    if len(set(ids)) != len(ids):
        raise ConfigError("aspect ids must be unique")
    return tuple(aspects)


def resolve_aspects(
    source: AspectSource,
    query: str,
    passages: Sequence[Passage] = (),
) -> tuple[Aspect, ...]:
    """The aspects for one query.

    ``source`` is a fixed list of sub-questions, a callable that plans them from the query, or
    label-free:

    - ``"pool"`` (the default of every adapter): the passages that best represent the others
      (facility location over MiniLM embeddings, :class:`covrag.plan.pool.PoolAspectFinder`),
      so coverage means "says what much of the pool says", and the choice spreads over the
      pool's viewpoints;
    - ``"query"`` or None: the query itself is the only aspect, so coverage means "answers the
      question" and greedy coverage picks the best-covering passage first, then follows
      relevance.
    """
    named, given = _aspect_input(source, query, passages)
    if named is None:
        return given
    policy = dataclasses.replace(INTEGRATIONS, aspects=named)
    topic = Topic("query", query, tuple(passages), ())
    return aspects_for(topic, policy)


@dataclass(frozen=True)
class Pick:
    """One chosen document.

    Attributes:
        index: Position of the document in the input list.
        rank: 1-based position in the selection.
        score: The value that made the selector pick it.
        tokens: Its token cost.
        newly_covered: Aspects it covered first.
        covers: Every aspect it covers (under the coverage threshold).
    """

    index: int
    rank: int
    score: float
    tokens: int
    newly_covered: tuple[Aspect, ...]
    covers: tuple[Aspect, ...]


@dataclass(frozen=True)
class Choice:
    """What :meth:`CoverageChoice.choose` decided for one query."""

    picks: tuple[Pick, ...]
    aspects: tuple[Aspect, ...]
    selection: Selection
    coverage: CoverageMatrix | None
    topic: Topic

    @property
    def uncovered(self) -> tuple[Aspect, ...]:
        """Wanted aspects (not ``exclude``) that no chosen document covers."""
        covered = set(self.selection.covered)
        return tuple(a for a in self.aspects if a.id not in covered and a.polarity != "exclude")

    def run_record(self) -> dict[str, Any]:
        """This choice as a run-file topic record, for ``covrag report`` (see
        :func:`covrag.report.run_file_record`). Passage ids are ``d0``, ``d1``, ... in input order.
        """
        return topic_record(self.topic, self.selection, self.coverage)

    def metadata(self, pick: Pick) -> dict[str, Any]:
        """The JSON-serialisable record an adapter stores under :data:`METADATA_KEY`."""
        return {
            "rank": pick.rank,
            "score": pick.score,
            "tokens": pick.tokens,
            "newly_covered": [a.text for a in pick.newly_covered],
            "covers": [a.text for a in pick.covers],
            "uncovered": [a.text for a in self.uncovered],
            "selector": self.selection.selector,
            "coverage": self.coverage.source if self.coverage is not None else None,
        }


def _option(default: Any, help: str) -> Any:
    """A field of :class:`CoverageChoice` with its help, which every adapter shows."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class CoverageChoice:
    """Selects a budgeted, ordered subset of retrieved texts that covers the query's aspects.

    Its fields are the options of every adapter (:data:`OPTIONS`, with the same names, defaults
    and help: :func:`options_help`); ``counter`` is the library's only.

    Example:
        >>> choice = CoverageChoice(selector="topk", k=2)
        >>> picked = choice.choose(["a", "b", "c"], "q", scores=[0.1, 0.9, 0.5])
        >>> [p.index for p in picked.picks]
        [1, 2]
    """

    selector: Selector | str | None = _option(
        None,
        "A selector or its spec (``greedy-coverage``, ``'mmr(lam=0.7)'``, ...). None (the "
        "default): ``expected-coverage`` when sub-questions are given, and without them "
        ":data:`~covrag.pipeline.LABEL_FREE_SELECTOR`, facility location over covrag's shipped "
        "same-point similarity with ``contrast=1`` (the best label-free choice under "
        "cross-validation: docs/experiments/24-same-point-mpnet-and-contrast.md).",
    )
    coverage: CoverageEstimator | str = _option(
        DEFAULT_COVERAGE,
        "A coverage estimator or its spec; used only when the selector reads coverage. The "
        "default is covrag's shipped cross-encoder (no download).",
    )
    aspects: AspectSource = _option(
        DEFAULT_ASPECTS,
        "Sub-questions a complete answer covers: a list, a callable ``query -> list``, or "
        "label-free: ``'pool'`` (the default; for a selector that reads coverage, the documents "
        "that best represent the others) or ``'query'`` / None (the query is the only aspect); "
        "see :func:`covrag.integrations.resolve_aspects`.",
    )
    k: int | None = _option(DEFAULT_K, "At most this many documents (None: no limit on the count).")
    max_tokens: int | None = _option(
        None,
        "At most this many tokens (MiniLM WordPiece unless ``counter`` is given). Documents are "
        "never truncated: one that does not fit is skipped.",
    )
    relevance: Relevance = _option(
        INTEGRATIONS.relevance,
        "``auto``: the retriever's scores when every document has one, else the retrieval "
        "order; ``score``, ``order`` or ``dense`` (MiniLM cosine to the query) to force one.",
    )
    counter: TokenCounter | None = _option(None, "Token counter for the budget.")

    def __post_init__(self) -> None:
        if isinstance(self.selector, str):
            object.__setattr__(self, "selector", parse_selector(self.selector))
        if isinstance(self.coverage, str):
            object.__setattr__(self, "coverage", parse_estimator(self.coverage))
        if self.relevance not in RELEVANCES:
            raise ConfigError(f"relevance must be one of {RELEVANCES}, got {self.relevance!r}")
        self.budget  # noqa: B018 - validates k and max_tokens now, not at the first query

    @property
    def budget(self) -> Budget:
        try:
            return Budget(max_passages=self.k, max_tokens=self.max_tokens)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _selector(self, source: AspectSource) -> Selector:
        """The configured selector; without one, by whether sub-questions are given."""
        if self.selector is not None:
            assert isinstance(self.selector, Selector)
            return self.selector
        given = not (source is None or isinstance(source, str))
        policy = INTEGRATIONS.resolve(aspects_given=given, selector_named=False)
        assert isinstance(policy.selector, str)
        return _default_selector(policy.selector)

    def choose(
        self,
        texts: Sequence[str],
        query: str,
        *,
        scores: Sequence[float | None] | None = None,
        aspects: AspectSource = None,
    ) -> Choice:
        """Choose among ``texts`` (retrieved for ``query``), in the selector's order.

        Args:
            texts: The documents' texts, in retrieval order.
            query: The user's question.
            scores: The retriever's scores, aligned with ``texts`` (None entries allowed).
            aspects: Overrides the configured aspects for this call.
        """
        source = aspects if aspects is not None else self.aspects
        selector = self._selector(source)
        scores = list(scores) if scores is not None else [None] * len(texts)
        if len(scores) != len(texts):
            raise ConfigError(f"{len(scores)} scores for {len(texts)} documents")
        passages = tuple(
            Passage(id=f"d{i}", text=text, score=score)
            for i, (text, score) in enumerate(zip(texts, scores, strict=True))
        )
        reads_coverage = selector.needs("coverage")
        if source == "pool" and not reads_coverage:
            source = "query"  # a selector that reads no coverage has no use for them
        named, given = _aspect_input(source, query, passages)
        policy = dataclasses.replace(
            INTEGRATIONS,
            selector=selector,
            coverage=self.coverage if reads_coverage else None,
            aspects=named,
            k=self.k,
            max_tokens=self.max_tokens,
            relevance=self.relevance,
            counter=self.counter,
        )
        chosen = select(Topic("query", query, passages, given), policy)
        return _choice(chosen.selection, chosen.coverage, chosen.topic)


#: The options of every adapter: :class:`CoverageChoice`'s fields of these names, with their
#: defaults (:data:`DEFAULTS`) and help (:func:`options_help`), restated nowhere else.
OPTIONS: tuple[str, ...] = ("selector", "coverage", "aspects", "k", "max_tokens", "relevance")
_FIELDS = {f.name: f for f in dataclasses.fields(CoverageChoice)}
#: Each option's default.
DEFAULTS: Mapping[str, Any] = MappingProxyType({name: _FIELDS[name].default for name in OPTIONS})


def option_help(name: str) -> str:
    """The help of the option ``name``."""
    return str(_FIELDS[name].metadata["help"])


def options_help() -> str:
    """The options' help as a docstring's ``Args:`` section."""
    wrap = functools.partial(
        textwrap.fill, width=96, initial_indent="    ", subsequent_indent="        "
    )
    return "\n".join(["Args:", *(wrap(f"{name}: {option_help(name)}") for name in OPTIONS)])


T = TypeVar("T", bound=type)


def documented(adapter: T) -> T:
    """``adapter`` with the options' help at the end of its docstring (``help(adapter)``)."""
    adapter.__doc__ = f"{inspect.cleandoc(adapter.__doc__ or '')}\n\n{options_help()}\n"
    return adapter


def choice_of(adapter: object) -> CoverageChoice:
    """The choice an adapter's options describe (its attributes named in :data:`OPTIONS`)."""
    values = {name: getattr(adapter, name) for name in OPTIONS}
    if isinstance(values["aspects"], list):
        values["aspects"] = list(values["aspects"])  # a copy: the adapter's list may change
    return CoverageChoice(**values)


@functools.cache
def _default_selector(spec: str) -> Selector:
    """A default selector, built once per process."""
    return parse_selector(spec)


def _aspect_input(
    source: AspectSource, query: str, passages: Sequence[Passage]
) -> tuple[str | None, tuple[Aspect, ...]]:
    """The aspect source to name (``pool``, ``query``) or the aspects given: ``pool`` over no
    documents is the query."""
    if isinstance(source, str):
        if source not in LABEL_FREE:
            raise ConfigError(
                f"aspects: give a list of sub-questions, a callable, 'pool' or 'query'; "
                f"got the string {source!r}"
            )
        if source == "pool" and passages:
            return "pool", ()
        source = None
    if source is None:
        if not query.strip():
            raise ConfigError("no aspects and no query: give sub-questions or a query")
        return "query", ()
    items = source(query) if callable(source) else source
    aspects = as_aspects(list(items))
    if not aspects:
        raise ConfigError("the aspect list is empty: give at least one sub-question, or None")
    return None, aspects


def _choice(selection: Selection, coverage: CoverageMatrix | None, topic: Topic) -> Choice:
    aspects = topic.aspects
    by_id = {a.id: a for a in aspects}
    index = {p.id: i for i, p in enumerate(topic.passages)}
    picks = []
    for rank, step in enumerate(selection.steps, start=1):
        covers = coverage.aspects_of(step.passage_id) if coverage is not None else ()
        picks.append(
            Pick(
                index=index[step.passage_id],
                rank=rank,
                score=step.score,
                tokens=step.tokens,
                newly_covered=tuple(by_id[a] for a in step.newly_covered),
                covers=tuple(by_id[a] for a in covers),
            )
        )
    return Choice(tuple(picks), aspects, selection, coverage, topic)
