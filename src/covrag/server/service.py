"""The work behind ``POST /v1/select``: request -> Topic -> coverage -> selection -> response.

Everything here is synchronous and CPU-bound; the app runs it in a thread pool. Model-backed steps
(embeddings, coverage estimation, every vector a selector reads) share process-wide models and
caches that are not thread-safe, so they run under one lock
(:class:`~covrag.server.gate.ModelGate`), waited for briefly and held under the request's
deadline: the estimate step (:func:`~covrag.pipeline.usecases.estimate`). Selection only computes
and runs unlocked, under the deadline. The LLM routes take a second gate
(:data:`LLM_GATE`) for their whole run, and this one for each scoring step.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from covrag.coverage.base import ESTIMATORS, CoverageEstimator, parse_estimator
from covrag.deadline import Deadline, DeadlineExceeded, deadline_scope
from covrag.errors import ConfigError, CovragError, DataError
from covrag.pipeline import SERVER_SELECT, ContextPolicy
from covrag.pipeline.usecases import estimate, pick, select
from covrag.schema.http import (
    AspectIn,
    AspectOut,
    CoverageOut,
    PassageIn,
    SelectRequest,
    SelectResponse,
    StepOut,
    TimingsOut,
)
from covrag.selectors.base import SELECTORS, Selector, parse_selector
from covrag.server.config import ServerConfig
from covrag.server.gate import ModelGate
from covrag.server.metrics import metrics
from covrag.server.specs import (
    ESTIMATOR_TUNABLES,
    SELECTOR_TUNABLES,
    SpecMenu,
    default_selector_specs,
)
from covrag.types import Aspect, CoverageMatrix, Passage, Selection, Topic

T = TypeVar("T")

MODEL_LOCK = threading.Lock()
#: The lock as /v1/select takes it: a bounded wait, then 429; held under the request's deadline.
MODEL_GATE = ModelGate(MODEL_LOCK, "model")
#: The LLM, taken by /v1/plan and /v1/answer for their whole run, the same way.
LLM_GATE = ModelGate(threading.Lock(), "llm")


class RequestFieldError(ConfigError):
    """A request that is well-formed JSON but asks for something covrag cannot do (422).

    Attributes:
        field: The offending field, in the ``passages[3].text`` notation of validation errors.
        status: The HTTP status it is answered with.
    """

    status = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class RequestTooLarge(RequestFieldError):
    """A request over a size cap of the server that its body size does not show (413)."""

    status = 413


@dataclass(frozen=True)
class SelectJob:
    """A validated request, turned into covrag's records: its topic and the one policy it is
    selected under (:data:`~covrag.pipeline.SERVER_SELECT` with the request's fields)."""

    topic: Topic
    policy: ContextPolicy
    include_matrix: bool
    #: The operator's cap on the pairs a pair model may score (``ServerConfig.max_pairs``).
    max_pairs: int | None = None

    @property
    def estimator(self) -> CoverageEstimator | None:
        coverage = self.policy.coverage
        assert coverage is None or isinstance(coverage, CoverageEstimator)
        return coverage

    @property
    def pool_aspects(self) -> bool:
        """The request gave no aspects for a selector that reads coverage: the pool's
        representatives become the aspects (found under the model lock, in :func:`run_job`)."""
        return self.policy.aspects == "pool"


@dataclass(frozen=True)
class Menus:
    """The selector and coverage specs a request may choose (:mod:`covrag.server.specs`)."""

    selectors: SpecMenu[Selector]
    coverages: SpecMenu[CoverageEstimator]

    @classmethod
    def of(cls, config: ServerConfig) -> Menus:
        """The operator's lists, with the server's defaults always first."""
        selectors = config.selectors or default_selector_specs(SELECTORS)
        coverages = config.coverages or tuple(ESTIMATORS.names())
        defaults = (config.default_selector, *label_free(config))
        return cls(
            SpecMenu(SELECTORS, (*defaults, *selectors), SELECTOR_TUNABLES),
            SpecMenu(ESTIMATORS, (config.default_coverage, *coverages), ESTIMATOR_TUNABLES),
        )


def label_free(config: ServerConfig) -> tuple[str, ...]:
    """The selector for a request that names no selector, no coverage and no aspects: the
    label-free default (:data:`~covrag.pipeline.LABEL_FREE_SELECTOR`), unless the operator chose
    a ``--selector`` (it then serves every request that names none) or listed the selectors
    requests may choose (``--selectors``: only those and ``--selector`` are offered)."""
    if config.default_selector != SERVER_SELECT.selector or config.selectors is not None:
        return ()
    return (SERVER_SELECT.label_free,) if SERVER_SELECT.label_free else ()


def build_job(request: SelectRequest, config: ServerConfig, menus: Menus) -> SelectJob:
    """Check what the schema cannot (ids, specs, cross-field rules) and build the records."""
    preset = dataclasses.replace(
        SERVER_SELECT,
        selector=config.default_selector,
        label_free=next(iter(label_free(config)), None),
    )
    named = request.selector is not None or request.coverage is not None
    default = preset.resolve(aspects_given=bool(request.aspects), selector_named=named).selector
    assert isinstance(default, str)
    selector = _parse("selector", request.selector or default, menus.selectors.resolve)
    estimator: CoverageEstimator | None = None
    pool_aspects = selector.needs("coverage") and not request.aspects
    if request.aspects or pool_aspects:
        estimator = _parse(
            "coverage", request.coverage or config.default_coverage, menus.coverages.resolve
        )
    elif request.coverage is not None:
        raise RequestFieldError("aspects", "a coverage estimator needs aspects to estimate against")
    if pool_aspects and estimator is not None and estimator.name == "gold":
        raise RequestFieldError(
            "aspects", "gold coverage reads the passages' 'covers' lists: give their aspects"
        )

    aspect_ids = unique_ids("aspects", [a.id for a in request.aspects])
    unique_ids("passages", [p.id for p in request.passages])
    labels: dict[str, frozenset[str]] = {}
    for i, passage in enumerate(request.passages):
        unknown = [a for a in passage.covers if a not in aspect_ids]
        if unknown:
            raise RequestFieldError(f"passages[{i}].covers", f"unknown aspect id {unknown[0]!r}")
        labels[passage.id] = frozenset(passage.covers)
        if request.relevance == "score" and passage.score is None:
            raise RequestFieldError(f"passages[{i}].score", "relevance 'score' needs a score")
    if estimator is not None and estimator.name == "gold" and not any(labels.values()):
        raise RequestFieldError(
            "coverage", "gold coverage reads the passages' 'covers' lists, and all are empty"
        )

    topic = Topic(
        query_id=request.query_id,
        query=request.query,
        passages=passage_records(request.passages),
        aspects=aspect_records(request.aspects),
        labels=labels,
    )
    policy = dataclasses.replace(
        SERVER_SELECT.budgeted(request.k, request.tokens),
        selector=selector,
        coverage=estimator,
        aspects="pool" if pool_aspects else None,
        relevance=request.relevance,
    )
    policy.budget()  # a budget that limits nothing is refused here, before any work
    job = SelectJob(topic, policy, request.include_matrix, config.max_pairs)
    if not pool_aspects:
        check_pairs(job)
    return job


def check_pairs(job: SelectJob) -> None:
    """Refuse a job whose coverage estimator would score more pairs than ``job.max_pairs``.

    The columns are the aspects and their answer sketches, as the estimator scores them.
    """
    if job.estimator is not None and job.max_pairs is not None:
        sketches = [len(a.answers) for a in job.topic.aspects]
        check_pair_count(job.estimator, len(job.topic.passages), sketches, job.max_pairs)


def check_pair_count(
    estimator: CoverageEstimator, n: int, sketches: Sequence[int], max_pairs: int
) -> None:
    """Refuse ``n`` passages x aspects with ``sketches[i]`` answer sketches each, which
    ``estimator`` would score as more than ``max_pairs`` pairs (422, naming ``--max-pairs``)."""
    columns = len(sketches) + sum(sketches)
    pairs = estimator.model_pairs(n, columns)
    if pairs > max_pairs:
        what = "aspects" if columns == len(sketches) else "aspects and answer sketches"
        raise RequestFieldError(
            "passages",
            f"{n} passages x {columns} {what} = {pairs:,} pairs for {estimator!r} to score, "
            f"over this server's limit of {max_pairs:,} (covrag serve --max-pairs); "
            "send fewer passages or aspects",
        )


def run_job(job: SelectJob, deadline: Deadline, wait_s: float) -> SelectResponse:
    """Estimate coverage, prepare the candidates and select (blocking; call from a thread).

    Args:
        job: The validated request.
        deadline: When the request times out; the model work stops at its first batch boundary
            past it (:mod:`covrag.deadline`), which gives the model lock back.
        wait_s: Longest wait for the model lock before :class:`~covrag.server.gate.ModelBusy`.

    Raises:
        DeadlineExceeded: The deadline passed (while queued, waiting, or scoring).
        ModelBusy: Another request held the model for longer than ``wait_s``.
        RequestFieldError: A field covrag cannot serve (e.g. over ``max_pairs``).
    """
    policy = job.policy
    started = time.perf_counter()
    try:
        with MODEL_GATE.hold(deadline, wait_s):
            estimated = estimate(
                job.topic,
                policy,
                check=(lambda t: check_pairs(dataclasses.replace(job, topic=t)))
                if job.pool_aspects
                else None,
            )
    except RequestFieldError:
        raise
    except (ConfigError, DataError) as exc:
        raise RequestFieldError("coverage" if job.estimator else "relevance", str(exc)) from exc
    if estimated.coverage is not None:
        metrics().pairs_scored.inc(estimated.coverage.pairs_scored)
    prepared = time.perf_counter()
    try:
        with deadline_scope(deadline):
            selection = pick(estimated, policy).selection
    except DeadlineExceeded:
        raise
    except CovragError as exc:  # a bad setting, or exact's optimum not proven in time
        raise RequestFieldError("selector", str(exc)) from exc
    job = dataclasses.replace(job, topic=estimated.topic)
    return _response(job, selection, estimated.coverage, prepared - started)


def warm_up(config: ServerConfig) -> None:
    """Load the default estimator's and the encoder's models (once per process)."""
    topic = Topic(
        query_id="warm-up",
        query="warm up",
        passages=(Passage(id="p", text="warm up"),),
        aspects=(Aspect(id="a", text="warm up"),),
        labels={"p": frozenset({"a"})},
    )
    estimator = parse_estimator(config.default_coverage)
    with MODEL_LOCK:
        for spec in (config.default_selector, *label_free(config)):
            policy = dataclasses.replace(
                SERVER_SELECT, selector=parse_selector(spec), coverage=estimator
            )
            select(topic, policy)


def _response(
    job: SelectJob, selection: Selection, coverage: CoverageMatrix | None, prepare_s: float
) -> SelectResponse:
    covered = set(selection.covered)
    excluded = {a.id for a in job.topic.aspects if a.polarity == "exclude"}
    return SelectResponse(
        query_id=selection.query_id,
        selector=selection.selector,
        budget=str(selection.budget),
        passage_ids=list(selection.passage_ids),
        tokens_used=selection.tokens_used,
        trace=[StepOut.of(step) for step in selection.steps],
        covered=list(selection.covered),
        uncovered=[a.id for a in job.topic.aspects if a.id not in covered and a.id not in excluded],
        coverage=CoverageOut.of(coverage) if coverage is not None and job.include_matrix else None,
        aspects=[AspectOut(id=a.id, text=a.text) for a in job.topic.aspects]
        if job.pool_aspects
        else None,
        timings=TimingsOut(prepare_s=prepare_s, select_s=selection.seconds),
    )


def _parse(field: str, spec: str, parse: Callable[[str], T]) -> T:
    try:
        return parse(spec)
    except ConfigError as exc:
        raise RequestFieldError(field, str(exc)) from exc


def passage_records(items: Sequence[PassageIn]) -> tuple[Passage, ...]:
    return tuple(p.to_passage() for p in items)


def aspect_records(items: Sequence[AspectIn]) -> tuple[Aspect, ...]:
    return tuple(a.to_aspect() for a in items)


def unique_ids(field: str, ids: list[str]) -> set[str]:
    """The ids, or a RequestFieldError naming ``field[i].id`` of the first repeat."""
    seen: set[str] = set()
    for i, item in enumerate(ids):
        if item in seen:
            raise RequestFieldError(f"{field}[{i}].id", f"duplicate id {item!r}")
        seen.add(item)
    return seen
