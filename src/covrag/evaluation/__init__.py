"""Evaluation: coverage and relevance measures, headroom to the optimum, and paired statistics.

The verbs are :func:`evaluate` (per-topic values) and :func:`aggregate` (their means); measures
are value objects parsed from strings such as ``"alpha-nDCG@10"`` (see ``MEASURES``).

Example:
    >>> from covrag.evaluation import Judgments, aggregate
    >>> judgments = Judgments.from_labels({"q1": {"d1": ["a"], "d2": ["a"], "d3": ["b"]}})
    >>> aggregate(judgments, {"q1": ["d1", "d3"]}, ["StRecall@2", "P@2"])
    {StRecall@2: 1.0, P@2: 1.0}
"""

from covrag.evaluation.headroom import Headroom, gap_closed
from covrag.evaluation.judgments import Judgments, RunLike, TopicJudgments
from covrag.evaluation.measures import (
    MEASURES,
    NDCG,
    RVC,
    RVC2,
    AlphaNDCG,
    Excluded,
    Measure,
    Precision,
    StRecall,
    parse_measure,
    parse_measures,
)
from covrag.evaluation.qrels import (
    DiversityQrel,
    binary_qrels,
    diversity_qrels,
    judgments_from_qrels,
    read_judgments,
    read_qrels,
    write_qrels,
)
from covrag.evaluation.scoring import EvalResults, aggregate, evaluate
from covrag.evaluation.stats import (
    ConfidenceInterval,
    RandomizationTest,
    bootstrap_ci,
    holm,
    paired_randomization_test,
)

__all__ = [
    "MEASURES",
    "NDCG",
    "RVC",
    "RVC2",
    "AlphaNDCG",
    "ConfidenceInterval",
    "DiversityQrel",
    "EvalResults",
    "Excluded",
    "Headroom",
    "Judgments",
    "Measure",
    "Precision",
    "RandomizationTest",
    "RunLike",
    "StRecall",
    "TopicJudgments",
    "aggregate",
    "binary_qrels",
    "bootstrap_ci",
    "diversity_qrels",
    "evaluate",
    "gap_closed",
    "holm",
    "judgments_from_qrels",
    "paired_randomization_test",
    "parse_measure",
    "parse_measures",
    "read_judgments",
    "read_qrels",
    "write_qrels",
]
