"""covrag: build RAG context that covers the whole question, and measure it honestly.

The records (:class:`Topic`, :class:`Passage`, :class:`Aspect`, :class:`Budget`,
:class:`Selection`, ...) and three verbs:

- :func:`select`: a topic -> an ordered, budgeted selection that covers its aspects;
- :func:`evaluate`: a run -> the mean of each measure on gold labels;
- :func:`ask`: a question -> a cited, critiqued answer, with every stage recorded
  (:func:`ask_stream`: the same as it happens, stage events and the writer's tokens).

``covrag.select`` and ``covrag.evaluate`` are also the names of subpackages: the verbs stay
callable, and their attributes are the subpackages' (``covrag.selectors.GreedyCoverageSelector``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from covrag.types import Aspect, Budget, CoverageMatrix, Passage, Selection, SelectionStep, Topic
from covrag.version import __version__

if TYPE_CHECKING:
    from covrag.pipeline import AskConfig, AskResult, EventStream, RelevanceSource
    from covrag.pipeline.usecases import Corpus, EstimatorSpec, LLMSpec, SelectorSpec

__all__ = [
    "Aspect",
    "Budget",
    "CoverageMatrix",
    "Passage",
    "Selection",
    "SelectionStep",
    "Topic",
    "__version__",
    "ask",
    "ask_stream",
    "evaluate",
    "select",
]


def select(
    topic: Topic,
    selector: SelectorSpec | None = None,
    *,
    k: int | None = None,
    max_tokens: int | None = None,
    coverage: EstimatorSpec | None = None,
    relevance: RelevanceSource = "dense",
) -> Selection:
    """Select an ordered, budgeted subset of a topic's passages that covers its aspects.

    Args:
        topic: The query, its candidate passages and the aspects to cover.
        selector: A selector or its spec (``"greedy-coverage"``, ``"mmr(lam=0.7)"``, ...);
            None for the default, ``expected-coverage``.
        k: At most this many passages (10 when neither ``k`` nor ``max_tokens`` is given: the
            :data:`covrag.pipeline.SELECT` preset, as every default here).
        max_tokens: At most this many tokens; passages are never truncated.
        coverage: A coverage estimator or its spec (``"gold"`` reads the topic's labels); None
            for the shipped cross-encoder when the selector reads coverage.
        relevance: ``dense`` (MiniLM cosine to the query), ``score`` (the passages' own
            scores) or ``order`` (first = most relevant).

    Returns:
        The selection, with a trace of what each pick newly covers.

    Example:
        >>> import covrag
        >>> topic = covrag.Topic(
        ...     query_id="q1",
        ...     query="Should cities ban cars?",
        ...     passages=(
        ...         covrag.Passage("p1", "Cars pollute the air."),
        ...         covrag.Passage("p2", "Car exhaust pollutes."),
        ...         covrag.Passage("p3", "Car bans hurt shops."),
        ...     ),
        ...     aspects=(covrag.Aspect("a1", "pollution"), covrag.Aspect("a2", "economy")),
        ...     labels={"p1": frozenset({"a1"}), "p2": frozenset({"a1"}), "p3": frozenset({"a2"})},
        ... )
        >>> s = covrag.select(topic, "greedy-coverage", k=2, coverage="gold", relevance="order")
        >>> s.passage_ids, s.covered
        (('p1', 'p3'), ('a1', 'a2'))
    """
    import dataclasses

    from covrag.pipeline import SELECT
    from covrag.pipeline.usecases import select as choose

    policy = dataclasses.replace(
        SELECT.budgeted(k, max_tokens),
        selector=selector or SELECT.selector,
        coverage=coverage,
        relevance=relevance,
    )
    return choose(topic, policy).selection


def evaluate(
    topics: Sequence[Topic],
    run: Mapping[str, Sequence[str]] | Iterable[Selection],
    measures: str | Sequence[str] = ("alpha-nDCG@10", "StRecall@10"),
) -> dict[str, float]:
    """Mean of each measure over the topics, for a run judged on the topics' gold labels.

    Args:
        topics: Topics with gold labels (which passage covers which aspect).
        run: Query id -> passage ids, best first; or the selections themselves.
        measures: Measure specs: ``"alpha-nDCG@10"``, ``"StRecall@5"``, ``"RVC@1024"``, ...

    Returns:
        Measure spec (as the measure writes itself, e.g. ``"alpha-nDCG@10"``) -> mean over the
        topics (a topic the run lacks counts as 0).

    Example:
        >>> import covrag
        >>> topic = covrag.Topic(
        ...     query_id="q1",
        ...     query="Should cities ban cars?",
        ...     passages=(covrag.Passage("p1", "Cars pollute."), covrag.Passage("p2", "Shops.")),
        ...     aspects=(covrag.Aspect("a1", "pollution"), covrag.Aspect("a2", "economy")),
        ...     labels={"p1": frozenset({"a1"}), "p2": frozenset({"a2"})},
        ... )
        >>> covrag.evaluate([topic], {"q1": ["p1"]}, ["StRecall@1"])
        {'StRecall@1': 0.5}
    """
    from covrag.pipeline.usecases import evaluate as score

    if not isinstance(run, Mapping):
        run = {s.query_id: s.passage_ids for s in run}
    specs = [measures] if isinstance(measures, str) else list(measures)
    means = score(run, specs, topics=topics).means()
    return {repr(measure): value for measure, value in means.items()}


def ask(
    question: str,
    corpus: Corpus = "bundled",
    *,
    llm: LLMSpec = "local",
    config: AskConfig | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    aspects: Sequence[Aspect] | None = None,
) -> AskResult:
    """Answer a question from a corpus: plan -> retrieve -> estimate -> select -> cited answer.

    Args:
        question: The question.
        corpus: A retriever, passages (indexed with BM25), a folder of documents (.txt, .md,
            .html, .pdf: indexed on the fly and cached, as ``covrag ask --docs``), or a corpus
            spec: a saved index folder (``covrag index --docs`` / ``--corpus``), a passage JSONL
            path, a bundled ``name[:split]``, or ``"bundled"`` (the pools of all bundled data).
        llm: An LLM or its spec (``"local"``, ``"openai(model='gpt-4o-mini')"``); it plans,
            writes and critiques.
        config: Stage settings (:class:`covrag.pipeline.AskConfig`; its defaults otherwise).
        include: Subtopics the answer must cover.
        exclude: Subtopics it must leave out.
        aspects: Use these aspects instead of asking the LLM for sub-questions.

    Returns:
        Every intermediate result and the cost of each stage;
        ``result.generation.answer`` is the cited answer.

    Example:
        >>> import covrag
        >>> result = covrag.ask("Should schools require uniforms?")  # doctest: +SKIP
        >>> [s.text for s in result.generation.answer.sentences][:1]  # doctest: +SKIP
        ['School uniforms reduce bullying [1].']
    """
    from covrag.pipeline.usecases import ask as run_ask

    return run_ask(
        question, corpus, llm=llm, config=config, include=include, exclude=exclude, aspects=aspects
    )


def ask_stream(
    question: str,
    corpus: Corpus = "bundled",
    *,
    llm: LLMSpec = "local",
    config: AskConfig | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    aspects: Sequence[Aspect] | None = None,
) -> EventStream[AskResult]:
    """:func:`ask` as it happens (the same arguments): an iterator of typed events.

    In order: ``PlannedEvent`` (the aspects), ``RetrievedEvent`` (the pool's passage ids and the
    queries), ``SelectedEvent`` (the context), a ``TokenEvent`` per piece of text the LLM
    writes while generating (``step`` says which draft or critique), and last ``AnswerEvent``,
    whose ``result`` is what :func:`ask` returns (records of :mod:`covrag.pipeline.events`).
    Leaving the loop early stops the work at its next token or scoring batch.

    Example:
        >>> import covrag
        >>> from covrag.pipeline import AnswerEvent, TokenEvent
        >>> for event in covrag.ask_stream("Should schools require uniforms?"):  # doctest: +SKIP
        ...     if isinstance(event, TokenEvent) and event.step == "write":
        ...         print(event.text, end="", flush=True)
        ...     elif isinstance(event, AnswerEvent):
        ...         answer = event.result.generation.answer
    """
    from covrag.pipeline.events import EventStream
    from covrag.pipeline.usecases import ask as run_ask

    return EventStream.of(
        run_ask,
        question,
        corpus,
        llm=llm,
        config=config,
        include=include,
        exclude=exclude,
        aspects=aspects,
    )
