"""The one place that composes the stages: prepare a topic, answer a question, run a bench.

The CLI, the HTTP server and the framework integrations all call these functions; the stages
(plan, retrieve, coverage, select, generate, evaluate) never import this package.

- :func:`choose`: a topic -> a context, under a :class:`ContextPolicy` (one preset per entry
  point: :data:`SELECT`, :data:`SERVER_SELECT`, :data:`INTEGRATIONS`, :data:`ASK`,
  :data:`ANSWER`, :data:`BENCH`), the one path every entry point takes.
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
)
from covrag.pipeline.context import (
    Chosen,
    Estimated,
    choose,
    estimate_context,
    pick_context,
    select_context,
    select_with_filters,
)
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
    config_for,
    embed_pieces,
    prepare,
    prepare_for,
    select_topic,
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
    "choose",
    "estimate_context",
    "pick_context",
    "select_context",
    "select_with_filters",
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
    "prepare_for",
    "question_similarity",
    "retrieve_pool",
    "run_bench",
    "select_topic",
    "uses_coverage",
    "with_inputs",
]
