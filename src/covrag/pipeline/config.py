"""The run configurations of the pipeline: how a topic is prepared and how ``ask`` runs.

Every field carries its help text in ``metadata["help"]`` (and its allowed values in
``metadata["choices"]`` where the type does not say them): the CLI builds its options from these
fields (:func:`covrag.cli.common.add_config_options`), so each default and each help text is
written once, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from covrag.embed import Encoder, default_encoder
from covrag.errors import ConfigError
from covrag.pipeline.policy import ASK, ContextPolicy, Relevance, policy_field
from covrag.pipeline.policy import DEFAULT_COVERAGE as DEFAULT_COVERAGE  # re-exported
from covrag.pipeline.policy import DEFAULT_FLOOR as DEFAULT_FLOOR  # re-exported
from covrag.pipeline.policy import DEFAULT_GATE as DEFAULT_GATE  # re-exported
from covrag.pipeline.policy import DEFAULT_SELECTOR as DEFAULT_SELECTOR  # re-exported
from covrag.registry import check_seed
from covrag.schema.defaults import FilterScope, GateScope
from covrag.schema.writer import WRITER_FIELDS, WriterPolicy
from covrag.schema.writer import Fallback as Fallback  # re-exported
from covrag.schema.writer import FeedbackMode as FeedbackMode  # re-exported
from covrag.schema.writer import UnsupportedPolicy as UnsupportedPolicy  # re-exported
from covrag.schema.writer import WriterName as WriterName  # re-exported
from covrag.selectors.base import EMBEDDINGS, PIECES, Selector
from covrag.tokens import TokenCounter

RelevanceSource = Literal["dense", "sentences", "score", "order"]
DecomposeStyle = Literal["factors", "points"]  # covrag.plan.decompose.STYLES
RELEVANCE_SOURCES: tuple[RelevanceSource, ...] = ("dense", "sentences", "score", "order")

#: The most resamples of a bootstrap or permutation test (``--n-resamples``): far above the
#: 10,000 that give stable p-values, far below what would not fit in memory.
MAX_RESAMPLES = 1_000_000


def _help(text: str, **extra: object) -> dict[str, object]:
    return {"help": text, **extra}


_WRITER = {f.name: f for f in fields(WriterPolicy)}

#: The fields of :class:`AskConfig` that are :class:`~covrag.pipeline.policy.ContextPolicy`'s
#: (or its aspect options'): their defaults are the :data:`ASK` preset's, their help the policy
#: field's (:func:`~covrag.pipeline.policy.policy_field`), and :meth:`AskConfig.policy` hands
#: them back to the policy.
CONTEXT_FIELDS: tuple[str, ...] = (
    "subquestions",
    "decompose_style",
    "answers",
    "k",
    "selector",
    "coverage",
    "floor",
    "floor_question",
    "gate",
    "gate_margin",
    "gate_scope",
    "filters",
    "relevance",
    "names",
    "pool_aspects",
    "outline",
)


def _context(name: str) -> Any:
    """A context field of :class:`AskConfig`: the :data:`ASK` preset's value as its default and
    the policy field's help."""
    return field(default=ASK.value(name), metadata=policy_field(name).metadata)


def _writer(name: str) -> Any:
    """A writer field of :class:`AskConfig`: :class:`WriterPolicy`'s, its default and help."""
    return field(default=_WRITER[name].default, metadata=_WRITER[name].metadata)


@dataclass(frozen=True)
class PrepareConfig:
    """How a topic becomes a selector's input (see :func:`covrag.pipeline.prepare`).

    The encoder is resolved without changing the config: None means the packaged MiniLM,
    loaded once per process (:func:`covrag.embed.default_encoder`).
    """

    relevance: RelevanceSource = field(
        default="dense",
        metadata=_help(
            "relevance signal: dense = MiniLM cosine to the query (the DES bi-encoder score), "
            "sentences = that plus the cosine of the passage's sentence nearest the query, "
            "score = the passages' own retriever scores, order = pool order (first = most "
            "relevant)"
        ),
    )
    embeddings: bool = field(
        default=False,
        metadata=_help(
            "compute passage embeddings even when relevance is not dense (MMR, clustering, "
            "facility location and LMVU need them)"
        ),
    )
    pieces: bool = field(
        default=False, metadata=_help("also embed each passage's sentences (for LMVU)")
    )
    counter: TokenCounter | None = field(
        default=None, metadata=_help("token counter for budgets (None = MiniLM WordPiece)")
    )
    encoder: Encoder | None = field(
        default=None, repr=False, compare=False, metadata=_help("None = the packaged MiniLM")
    )

    def __post_init__(self) -> None:
        if self.relevance not in RELEVANCE_SOURCES:
            raise ConfigError(
                f"relevance must be one of {RELEVANCE_SOURCES}, got {self.relevance!r}"
            )

    def resolved_encoder(self) -> Encoder:
        """The encoder to use: the given one, or the process-wide default (never stored)."""
        return self.encoder if self.encoder is not None else default_encoder()


def config_for(
    selectors: Iterable[Selector],
    relevance: RelevanceSource = "dense",
    counter: TokenCounter | None = None,
) -> PrepareConfig:
    """The preparation these selectors need: embeddings and pieces only when one reads them."""
    chosen = list(selectors)
    return PrepareConfig(
        relevance=relevance,
        embeddings=any(s.needs(EMBEDDINGS) for s in chosen),
        pieces=relevance == "sentences" or any(s.needs(PIECES) for s in chosen),
        counter=counter,
    )


@dataclass(frozen=True)
class AskConfig:
    """How :func:`covrag.pipeline.ask` runs each stage (help texts in the field metadata); its
    context fields (:data:`CONTEXT_FIELDS`) are :class:`~covrag.pipeline.policy.ContextPolicy`'s
    under the :data:`ASK` preset (:meth:`policy`), its writer fields
    :class:`~covrag.schema.writer.WriterPolicy`'s (:meth:`writer_policy`)."""

    subquestions: int = _context("subquestions")
    aspect_source: Literal["grounded", "llm", "keypoints"] = field(
        default="grounded",
        metadata=_help(
            "where the sub-questions come from: grounded = as many as the question has parts "
            "(at most subquestions), written seeing what a first search of the corpus finds, "
            "in the question's frame; llm = DES's, written from the question alone; "
            "keypoints = read off a first pool retrieved for the question (one key point per "
            "group of similar passages, each with the question it answers; points no pooled "
            "passage covers are dropped with a warning)"
        ),
    )
    decompose_style: DecomposeStyle = _context("decompose_style")
    answers: int = _context("answers")
    pool: int = field(default=50, metadata=_help("candidate passages to retrieve"))
    definitions: int = field(
        default=4,
        metadata=_help(
            "add to the pool at most this many passages that define what the pooled passages "
            "nearest the question name and no pooled passage defines (a config key such as "
            "ServerAliveInterval, an option such as --json, a snake_case name), each from the "
            "same document (0 = none)"
        ),
    )
    k: int = _context("k")
    selector: str = _context("selector")
    coverage: str = _context("coverage")
    floor: float = _context("floor")
    floor_question: bool = _context("floor_question")
    gate: float = _context("gate")
    gate_margin: float = _context("gate_margin")
    gate_scope: GateScope = _context("gate_scope")
    filters: FilterScope = _context("filters")
    relevance: Relevance = _context("relevance")
    names: bool = _context("names")
    pool_aspects: int = _context("pool_aspects")
    writer: WriterName = _writer("writer")
    passes: int = _writer("passes")
    feedback: FeedbackMode = _writer("feedback")
    outline: bool = _context("outline")
    max_words: int | None = _writer("max_words")
    sentences: int = _writer("sentences")
    rewrite_sentences: int = _writer("rewrite_sentences")
    max_tokens: int = _writer("max_tokens")
    unsupported: UnsupportedPolicy = _writer("unsupported")
    fallback: Fallback = _writer("fallback")
    complete: int = _writer("complete")
    evidence: int = _writer("evidence")
    quotes: int = _writer("quotes")

    def __post_init__(self) -> None:
        if self.feedback.startswith("oracle"):
            raise ConfigError("oracle feedback modes need gold labels: use them in benchmarks")
        for name in ("pool", "k"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if min(self.subquestions, self.passes, self.pool_aspects, self.answers) < 0:
            raise ConfigError("subquestions, passes, pool_aspects and answers must be >= 0")
        if self.definitions < 0:
            raise ConfigError(f"definitions must be >= 0, got {self.definitions}")
        if not 0.0 <= self.floor <= 1.0:
            raise ConfigError(f"floor must lie in [0, 1], got {self.floor}")
        if not 0.0 <= self.gate <= 1.0:
            raise ConfigError(f"gate must lie in [0, 1] (0: no gate), got {self.gate}")
        if not 0.0 <= self.gate_margin <= 1.0:
            raise ConfigError(f"gate_margin must lie in [0, 1], got {self.gate_margin}")

    def writer_policy(self) -> WriterPolicy:
        """How ``ask`` writes its answer under this configuration (its writer fields)."""
        return WriterPolicy(**{name: getattr(self, name) for name in WRITER_FIELDS})

    def policy(self) -> ContextPolicy:
        """How ``ask`` chooses its context under this configuration (the :data:`ASK` preset with
        this configuration's :data:`CONTEXT_FIELDS`)."""
        return ASK.with_values(**{name: getattr(self, name) for name in CONTEXT_FIELDS})


@dataclass(frozen=True)
class BenchConfig:
    """How :func:`covrag.pipeline.run_bench` measures and compares (help in the field metadata)."""

    measures: tuple[str, ...] | None = field(
        default=None, metadata=_help("measure specs (default: by budget)")
    )
    baseline: str | None = field(
        default=None, metadata=_help("method to test the others against (default: the first)")
    )
    exact: bool = field(
        default=True,
        metadata=_help(
            "run the exact optimum on the gold labels and report headroom (--no-exact: skip it)"
        ),
    )
    seed: int = field(default=0, metadata=_help("seed for bootstrap and permutation tests"))
    n_resamples: int = field(
        default=10_000, metadata=_help("resamples of the bootstrap and of the permutation tests")
    )

    def __post_init__(self) -> None:
        if self.measures is not None:
            object.__setattr__(self, "measures", tuple(_as_list(self.measures)))
        check_seed("--seed", self.seed)
        check_resamples(self.n_resamples)


def check_resamples(n_resamples: int) -> None:
    """Refuse a resample count below 1 or above :data:`MAX_RESAMPLES` (``--n-resamples``).

    Raises:
        ConfigError: naming the option and the bounds.
    """
    if not 1 <= n_resamples <= MAX_RESAMPLES:
        raise ConfigError(
            f"--n-resamples must lie in [1, {MAX_RESAMPLES:,}], got {n_resamples:,} "
            "(each resample holds one number per topic and method)"
        )


def _as_list(values: Sequence[str]) -> list[str]:
    return [values] if isinstance(values, str) else list(values)
