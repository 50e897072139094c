"""The stages' names the entry points use, in one place.

The entry points (``cli/``, ``server/``, ``integrations/`` and the verbs of ``covrag``) reach
the stages through ``pipeline/``: this module re-exports what they need of them, so the stages
an entry point depends on are listed here (``tests/test_architecture.py`` counts the imports
that go around it).
"""

from covrag.coverage import parse_estimator
from covrag.coverage.base import ESTIMATORS, CoverageEstimator
from covrag.coverage.cross_encoder import CrossEncoderCoverage
from covrag.evaluation import Judgments, aggregate, evaluate, parse_measures, read_judgments
from covrag.evaluation.answer_stats import ANSWER_MEASURES, compare_variants
from covrag.evaluation.answers import LLMAnswerJudge, agreement, evaluation_record
from covrag.evaluation.answers_io import evaluate_variants, load_variants
from covrag.evaluation.qrels import coverage_qrels, topic_qrels, write_qrels
from covrag.generate import CritiqueContext, support_warnings
from covrag.generate.answer_coverage import answer_coverage
from covrag.generate.records import Draft, LLMCost, draft_record
from covrag.ingest import Chunker, IngestReport, update_index
from covrag.ingest.chunk import DEFAULT_OVERLAP, DEFAULT_TOKENS
from covrag.ingest.walk import DEFAULT_MAX_BYTES
from covrag.llm.base import LLM
from covrag.plan import ASPECT_SOURCES, AspectOptions, C2Query, LLMDecomposer, build_aspect_sources
from covrag.plan.decompose import STYLES
from covrag.plan.keypoints import pool_keypoints
from covrag.plan.planner import QPlanner
from covrag.plan.sketch import AnswerSketcher
from covrag.plan.sources import AspectSource
from covrag.report import load_report_input, render_report, write_report
from covrag.report.runfile import run_file_record, topic_run_record
from covrag.retrieve import (
    INDEX_KINDS,
    BM25Retriever,
    CoverRetriever,
    Retriever,
    load_corpus,
    load_index,
)
from covrag.selectors import parse_selector
from covrag.selectors.base import SELECTORS, Selector
from covrag.selectors.exclusion import EXCLUDE_MODES
from covrag.selectors.facility import SIMILARITIES
from covrag.selectors.floor import FilterReport
from covrag.selectors.lmvu import FEATURES, LMVUModel
from covrag.selectors.optimize import OPTIMIZERS
from covrag.tokens import TokenCounter

__all__ = [
    "ANSWER_MEASURES",
    "ASPECT_SOURCES",
    "AnswerSketcher",
    "AspectOptions",
    "AspectSource",
    "BM25Retriever",
    "C2Query",
    "Chunker",
    "CoverRetriever",
    "CoverageEstimator",
    "CritiqueContext",
    "CrossEncoderCoverage",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_OVERLAP",
    "DEFAULT_TOKENS",
    "Draft",
    "ESTIMATORS",
    "EXCLUDE_MODES",
    "FEATURES",
    "FilterReport",
    "INDEX_KINDS",
    "IngestReport",
    "Judgments",
    "LLM",
    "LLMAnswerJudge",
    "LLMCost",
    "LLMDecomposer",
    "LMVUModel",
    "OPTIMIZERS",
    "QPlanner",
    "Retriever",
    "SELECTORS",
    "SIMILARITIES",
    "STYLES",
    "Selector",
    "TokenCounter",
    "aggregate",
    "agreement",
    "answer_coverage",
    "build_aspect_sources",
    "compare_variants",
    "coverage_qrels",
    "draft_record",
    "evaluate",
    "evaluate_variants",
    "evaluation_record",
    "load_corpus",
    "load_index",
    "load_report_input",
    "load_variants",
    "parse_estimator",
    "parse_measures",
    "parse_selector",
    "pool_keypoints",
    "read_judgments",
    "render_report",
    "run_file_record",
    "support_warnings",
    "topic_qrels",
    "topic_run_record",
    "update_index",
    "write_qrels",
    "write_report",
]
