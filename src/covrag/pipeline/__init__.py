"""The one place that composes the stages: prepare a topic, answer a question, run a bench.

The CLI, the HTTP server and the framework integrations all call these functions; the stages
(plan, retrieve, coverage, select, generate, evaluate) never import this package.

- :func:`covrag.pipeline.usecases.select`: a topic -> a context, under a :class:`ContextPolicy`
  (one preset per entry point: :data:`SELECT`, :data:`SERVER_SELECT`, :data:`INTEGRATIONS`,
  :data:`ASK`, :data:`ANSWER`, :data:`BENCH`), the one door every entry point takes to a
  selection (:mod:`covrag.pipeline.usecases` holds the others); its steps stay in
  :mod:`covrag.pipeline.context`.
- :func:`prepare`: a topic -> the selector's input (token costs, coverage, relevance, embeddings);
  :func:`with_inputs` adds what selectors read from a model beside them (same-point vectors).
- :func:`ask`: question -> plan -> pool -> coverage -> selection -> cited, critiqued answer;
  :func:`ask_stream` the same as events (stages, the writer's tokens, the result), by
  :class:`EventStream`, which the HTTP service's streamed ``/v1/answer`` runs too.
- :func:`run_bench`: selectors x coverage sources x budgets on a dataset, measured and compared.
"""

from covrag.evaluation.bench_results import ORACLE, BenchResult, MethodResult
from covrag.pipeline.ask import (
    STAGES,
    AskResult,
    Planned,
    StageCallback,
    StageCost,
    ask,
    ask_stream,
    build_generator,
    plan_aspects,
    retrieve_pool,
)
from covrag.pipeline.bench import (
    Method,
    build_methods,
    default_measures,
    headroom_measure,
    run_bench,
    uses_coverage,
)
from covrag.pipeline.config import (
    DEFAULT_COVERAGE,
    DEFAULT_SELECTOR,
    RELEVANCE_SOURCES,
    AskConfig,
    BenchConfig,
    PrepareConfig,
    RelevanceSource,
    config_for,
)
from covrag.pipeline.context import Chosen, Estimated
from covrag.pipeline.events import (
    AnswerEvent,
    Event,
    EventSink,
    EventStream,
    PlannedEvent,
    RetrievedEvent,
    SelectedEvent,
    TokenEvent,
)
from covrag.pipeline.inputs import question_similarity, with_inputs
from covrag.pipeline.policy import (
    ANSWER,
    ASK,
    BENCH,
    INTEGRATIONS,
    LABEL_FREE_SELECTOR,
    SELECT,
    SERVER_SELECT,
    ContextPolicy,
)
from covrag.pipeline.prepare import (
    Prepared,
    attach_coverage,
    embed_pieces,
    prepare,
)

__all__ = [
    "ANSWER",
    "ASK",
    "BENCH",
    "INTEGRATIONS",
    "SELECT",
    "SERVER_SELECT",
    "Chosen",
    "ContextPolicy",
    "Estimated",
    "DEFAULT_COVERAGE",
    "DEFAULT_SELECTOR",
    "LABEL_FREE_SELECTOR",
    "ORACLE",
    "RELEVANCE_SOURCES",
    "STAGES",
    "AnswerEvent",
    "AskConfig",
    "AskResult",
    "BenchConfig",
    "BenchResult",
    "Event",
    "EventSink",
    "EventStream",
    "Method",
    "MethodResult",
    "Planned",
    "PlannedEvent",
    "PrepareConfig",
    "Prepared",
    "RelevanceSource",
    "RetrievedEvent",
    "SelectedEvent",
    "StageCallback",
    "StageCost",
    "TokenEvent",
    "ask",
    "ask_stream",
    "attach_coverage",
    "build_generator",
    "build_methods",
    "config_for",
    "default_measures",
    "embed_pieces",
    "headroom_measure",
    "plan_aspects",
    "prepare",
    "question_similarity",
    "retrieve_pool",
    "run_bench",
    "uses_coverage",
    "with_inputs",
]
