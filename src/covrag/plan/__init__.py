"""Planning: DES sub-questions, coverage-conditioned (C2) queries, QTree, outlines and their
judge, aspects discovered from the pool, and outlines as search queries.

Every LLM step asks for schema-constrained JSON, checks it and retries a bounded number of times
(:func:`covrag.llm.chat_json`).
"""

from covrag.plan.conditioned import C2Query, split_request
from covrag.plan.decompose import LLMDecomposer, SubQuestions
from covrag.plan.judge import OutlineJudge
from covrag.plan.outline import Outline, OutlineExtractor, random_outline
from covrag.plan.planned import Planned, PlannerAspects
from covrag.plan.planner import Plan, QPlanner
from covrag.plan.pool import PoolAspectFinder
from covrag.plan.qtree import QTree, QTreeBuilder, QTreeNode
from covrag.plan.search import draft, outline_search
from covrag.plan.sources import (
    ASPECT_SOURCES,
    AspectOptions,
    AspectSource,
    GoldAspects,
    LLMAspects,
    PoolAspects,
    SourcedTopic,
    build_aspect_sources,
)
from covrag.plan.writer import OutlineWriter, outline_messages

__all__ = [
    "Planned",
    "PlannerAspects",
    "ASPECT_SOURCES",
    "AspectOptions",
    "AspectSource",
    "C2Query",
    "GoldAspects",
    "LLMAspects",
    "LLMDecomposer",
    "Outline",
    "OutlineExtractor",
    "OutlineJudge",
    "OutlineWriter",
    "Plan",
    "PoolAspectFinder",
    "PoolAspects",
    "QPlanner",
    "QTree",
    "QTreeBuilder",
    "QTreeNode",
    "SourcedTopic",
    "SubQuestions",
    "build_aspect_sources",
    "draft",
    "outline_messages",
    "outline_search",
    "random_outline",
    "split_request",
]
