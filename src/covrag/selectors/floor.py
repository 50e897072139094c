"""A coverage floor: never pad a context with passages that answer none of the aspects.

Every selector fills its budget: once nothing new can be covered, it falls back to relevance
order (DES's rule), so a question the corpus cannot answer still gets ``k`` passages, all off
topic. The floor removes such passages from the pool *before* selection: a passage stays only
when its estimated probability of answering at least one wanted aspect (not an ``exclude`` one)
reaches ``floor``:

    support(p) = max_{a wanted} P[p, a]        keep p  iff  support(p) >= floor

A second, optional test reads the question rather than the sub-questions: the **topic gate**
keeps a passage only when its dense similarity to the question (cosine of the packaged MiniLM
embeddings, computed in the estimate step: :func:`covrag.pipeline.question_similarity`) reaches
``gate``. Sub-questions are often generic ("What is the impact on morale?"),
so a passage from another subject can answer one with a high probability; the gate asks that
the passage is about the question's subject at all:

    keep p  iff  support(p) >= floor  and  cos(p, question) >= gate

A third test reads the question's names (:func:`covrag.text.subject_names`: "TOML", "LZMA2",
``shutil.copy2``, ``-mtime``): when no passage of the pool writes one of them, the corpus does not
document what the question asks about, and every passage goes (:func:`absent_names`); the
refusal names the missing name. Without it, a question about TOML is answered from the nearest
passages about other formats. When some passages write them, the same test keeps only the
passages of documents that are about them (:func:`subject_documents`): a document is, when one of
its pooled passages writes one of the names or its title shares a word with the question. The
curl manual's ``--keepalive-time`` passage answers "keep an idle connection alive" as well as
ssh_config's ``ServerAliveInterval`` does, but nothing of curl's in the pool writes SSH.

The selector then chooses among what is left and returns fewer than ``k`` passages (possibly
none) when fewer clear the floor. The coverage probability is the relevance signal here: a
passage's retriever score says how well it matches the words of the question, the estimator how
likely it answers one of its sub-questions. The value is chosen by leave-topics-out
cross-validation (docs/experiments/13-coverage-floor.md); 0 disables the floor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.schema.defaults import FilterScope, GateScope
from covrag.selectors.base import Candidates, Selector
from covrag.text import STOPWORDS, words, writes
from covrag.types import (
    BoolArray,
    Budget,
    CoverageMatrix,
    FloatArray,
    IntArray,
    Passage,
    Selection,
)


def passage_support(candidates: Candidates) -> FloatArray:
    """Per passage: its highest probability of answering a wanted aspect (0 without any)."""
    coverage = candidates.coverage
    n = len(candidates)
    if coverage is None or not coverage.aspect_ids:
        return np.zeros(n)
    wanted = np.ones(len(coverage.aspect_ids), dtype=bool)
    if candidates.excluded is not None:
        wanted &= ~np.asarray(candidates.excluded, dtype=bool)
    if not wanted.any():
        return np.zeros(n)
    support: FloatArray = np.asarray(coverage.probs, dtype=np.float64)[:, wanted].max(axis=1)
    return support


def subset(candidates: Candidates, keep: IntArray) -> Candidates:
    """The candidates at the pool indexes ``keep`` (in that order), every signal cut alike."""
    keep = np.asarray(keep, dtype=np.int64)
    coverage = candidates.coverage
    if coverage is not None:
        coverage = CoverageMatrix(
            tuple(coverage.passage_ids[i] for i in keep),
            coverage.aspect_ids,
            np.asarray(coverage.probs)[keep],
            threshold=coverage.threshold,
            source=coverage.source,
            pairs_scored=coverage.pairs_scored,
            seconds=coverage.seconds,
            truncated_pairs=coverage.truncated_pairs,
            aspect_thresholds=coverage.aspect_thresholds,
        )
    pieces, owner = candidates.piece_embeddings, candidates.piece_owner
    if pieces is not None and owner is not None:
        position = {int(i): j for j, i in enumerate(keep)}
        rows = [r for r, o in enumerate(owner) if int(o) in position]
        pieces = pieces[rows]
        owner = np.array([position[int(owner[r])] for r in rows], dtype=np.int64)
        order = np.argsort(owner, kind="stable")
        pieces, owner = pieces[order], owner[order]
    same_point = {model: vectors[keep] for model, vectors in candidates.same_point.items()}
    return Candidates(
        query_id=candidates.query_id,
        query=candidates.query,
        passages=tuple(candidates.passages[i] for i in keep),
        relevance=candidates.relevance[keep],
        costs=candidates.costs[keep],
        coverage=coverage,
        embeddings=None if candidates.embeddings is None else candidates.embeddings[keep],
        query_embedding=candidates.query_embedding,
        aspect_weights=candidates.aspect_weights,
        excluded=candidates.excluded,
        piece_embeddings=pieces,
        piece_owner=owner,
        same_point=same_point,
    )


@dataclass(frozen=True)
class FilterReport:
    """What the floor and the gate did to a pool: how many passages each let through, and the
    best scores, so an empty context can say which filter emptied it and what would change it.

    Attributes:
        pool: Candidates before filtering.
        floor: The coverage floor (0: none).
        gate: The topic gate (0: none).
        cleared_floor: Candidates whose support reaches the floor (all of them at floor 0).
        cleared_gate: Candidates whose similarity reaches the gate (all of them at gate 0).
        kept: Candidates that clear both.
        best_support: The highest support of any candidate (0 without coverage).
        best_similarity: The highest similarity to the question (None without a gate).
        absent: The question's names no passage of the pool writes (all passages go then).
        off_subject: Candidates removed as passages of documents not about the question's names
            (:func:`subject_documents`), whatever the floor and the gate said of them.
        judged: What the floor and the gate judged: ``passages`` (``kept`` cleared them) or
            ``question`` (``kept`` is what the name filter keeps, when any cleared them).
        cleared: Candidates that clear the floor, the gate and the name filter (``kept``
            when they judge passages).
    """

    pool: int
    floor: float
    gate: float
    cleared_floor: int
    cleared_gate: int
    kept: int
    best_support: float = 0.0
    best_similarity: float | None = None
    absent: tuple[str, ...] = ()
    off_subject: int = 0
    judged: FilterScope = "passages"
    cleared: int = 0

    def reason(self) -> str | None:
        """Why nothing was kept, naming the filter, the best score and the option that would
        let a passage in; None when something was kept."""
        if self.kept:
            return None
        if not self.pool:
            return "nothing was retrieved: the index returned no passage for the question"
        if self.absent:
            names = ", ".join(repr(n) for n in self.absent)
            return (
                f"the name filter removed all {self.pool} retrieved passages: the question asks "
                f"about {names}, which none of them writes, so the documents do not cover it "
                "(--no-names, or names false, turns the filter off)"
            )
        support = (
            f"the best estimated probability of answering a sub-question (or the question) is "
            f"{self.best_support:.3f} < floor {self.floor:.2f} "
            + (
                f"(--floor {_below(self.best_support)} would let the best one in)"
                if self.best_support >= 0.01
                else "(no passage answers any of them; --floor 0 turns the floor off and pads "
                "the context with what was retrieved)"
            )
        )
        similar = self.best_similarity or 0.0
        closeness = (
            f"the best similarity to the question is {similar:.3f} < gate {self.gate:.2f} "
            f"(--gate {_below(similar)}, or --gate 0 for no gate, would let the closest one in)"
        )
        if self.cleared_floor == 0 and self.cleared_gate == 0 and self.gate > 0.0:
            return (
                f"both filters removed all {self.pool} retrieved passages: for the coverage "
                f"floor, {support}; for the topic gate, {closeness}"
            )
        if self.cleared_floor == 0:
            return f"the coverage floor removed all {self.pool} retrieved passages: {support}"
        if self.cleared_gate == 0:
            return (
                f"the topic gate removed all {self.cleared_floor} passages that cleared the "
                f"coverage floor: {closeness}"
            )
        if self.off_subject:
            return (
                f"no passage clears every filter: {self.cleared_floor} of {self.pool} clear the "
                f"coverage floor ({self.floor:.2f}), {self.cleared_gate} the topic gate "
                f"({self.gate:.2f}), and the name filter removed {self.off_subject} passages "
                "of documents that never write the names the question asks about (a lower "
                "--floor or --gate, or --no-names, lets them in)"
            )
        return (
            f"no passage clears both filters: {self.cleared_floor} of {self.pool} clear the "
            f"coverage floor ({self.floor:.2f}) and {self.cleared_gate} the topic gate "
            f"({self.gate:.2f}), none both (a lower --floor or --gate lets them in)"
        )

    def as_dict(self) -> dict[str, float | int | str | list[str] | None]:
        return {
            "pool": self.pool,
            "floor": self.floor,
            "gate": self.gate,
            "cleared_floor": self.cleared_floor,
            "cleared_gate": self.cleared_gate,
            "kept": self.kept,
            "best_support": round(self.best_support, 6),
            "best_similarity": None
            if self.best_similarity is None
            else round(self.best_similarity, 6),
            "absent": list(self.absent),
            "off_subject": self.off_subject,
            "judged": self.judged,
            "cleared": self.cleared,
        }


def _below(score: float) -> str:
    """A setting just under ``score`` (two decimals, rounded down), for a refusal's advice."""
    return f"{max(0.0, np.floor(score * 100.0) / 100.0):.2f}"


def absent_names(names: Sequence[str], passages: Sequence[Passage]) -> tuple[str, ...]:
    """The ``names`` no passage of ``passages`` writes (:func:`covrag.text.writes`, ``loose``)."""
    return tuple(n for n in names if not any(writes(p.text, n, loose=True) for p in passages))


_TITLE_SPLIT = re.compile(r"[^A-Za-z0-9]+")
# Words of a file name that say what kind of document it is, not what it is about.
_TITLE_FORM = frozenset(
    "readme manual guide user license licence faq txt md rst html htm pdf doc docs text man "
    "info index".split()
)


def _document(passage: Passage) -> str:
    """The document a passage was cut from (its ``doc_id``, ``source`` or ``title``; itself
    when it names none)."""
    meta = passage.metadata
    return str(meta.get("doc_id") or meta.get("source") or meta.get("title") or passage.id)


def _title_words(passage: Passage) -> set[str]:
    """The words of a passage's document title or file name that could name a subject (not
    its kind: "README", "manual", "txt"; not a number)."""
    meta = passage.metadata
    title = " ".join(str(meta.get(key) or "") for key in ("title", "doc_id"))
    return {
        w.lower()
        for w in _TITLE_SPLIT.split(title)
        if len(w) >= 2 and not w.isdigit() and w.lower() not in _TITLE_FORM | STOPWORDS
    }


def subject_documents(
    names: Sequence[str], question: str, passages: Sequence[Passage]
) -> np.ndarray:
    """Per passage, whether its document is about what the question names: one of the
    document's passages among ``passages`` writes one of ``names`` (:func:`covrag.text.writes`,
    ``loose``), or the
    document's title shares a word with ``question`` ("ssh_config.5" for a question about SSH).
    All True without names, or when no document is about them (:func:`absent_names` speaks then).

    Example: for "How do I keep an SSH connection from timing out when idle?", the passages of
    ssh_config (its title, and passages writing "ssh") are kept; curl's manual, none of whose
    pooled passages writes SSH, is not, though its ``--keepalive-time`` passage matches the
    question's words.
    """
    n = len(passages)
    if not names or not n:
        return np.ones(n, dtype=bool)
    asked = set(words(question)) - STOPWORDS
    about = {
        _document(p)
        for p in passages
        if any(writes(p.text, name, loose=True) for name in names) or _title_words(p) & asked
    }
    if not about:
        return np.ones(n, dtype=bool)
    return np.array([_document(p) in about for p in passages], dtype=bool)


#: The scopes of the topic gate (:data:`covrag.schema.defaults.GateScope`).
GATE_SCOPES: tuple[GateScope, ...] = ("passage", "document")
#: What the floor and the gate judge (:data:`covrag.schema.defaults.FilterScope`).
FILTER_SCOPES: tuple[FilterScope, ...] = ("passages", "question")


def _whole_documents(mask: np.ndarray, passages: Sequence[Passage]) -> np.ndarray:
    """``mask`` spread to documents: True for every passage of a document one of whose
    passages is True."""
    chosen = {_document(p) for p, on in zip(passages, mask, strict=True) if on}
    return np.array([_document(p) in chosen for p in passages], dtype=bool)


def _check(
    floor: float, gate: float, gate_margin: float, gate_scope: str, judge: str = "passages"
) -> None:
    """ConfigError naming the first setting of :func:`filter_pool` out of its range."""
    if judge not in FILTER_SCOPES:
        raise ConfigError(f"filters must be one of {FILTER_SCOPES}, got {judge!r}")
    if not 0.0 <= floor <= 1.0:
        raise ConfigError(f"the coverage floor must lie in [0, 1], got {floor}")
    if not 0.0 <= gate <= 1.0:
        raise ConfigError(f"the topic gate must lie in [0, 1] (0: no gate), got {gate}")
    if gate_scope not in GATE_SCOPES:
        raise ConfigError(f"the gate's scope must be one of {GATE_SCOPES}, got {gate_scope!r}")
    if not 0.0 <= gate_margin <= 1.0:
        raise ConfigError(
            f"the gate margin must lie in [0, 1] (0: a fixed gate), got {gate_margin}"
        )


def _gate(
    similarity: FloatArray | None, n: int, gate: float, gate_margin: float
) -> tuple[np.ndarray, float, float | None]:
    """Which of ``n`` candidates clear the topic gate, the gate applied (relative where the
    best is weak: :func:`filter_pool`) and the best similarity."""
    if similarity is None or len(similarity) != n:
        got = "none" if similarity is None else len(similarity)
        raise ValueError(f"a topic gate needs one similarity per candidate ({n}), got {got}")
    values = np.asarray(similarity, dtype=np.float64)
    best = float(values.max()) if n else None
    if gate_margin > 0.0 and best is not None:
        gate = max(min(gate, best - gate_margin), 0.0)
    return values >= gate, gate, best


def _floor(
    candidates: Candidates, floor: float, also: FloatArray | None
) -> tuple[FloatArray, BoolArray]:
    """Each candidate's support (the greater of :func:`passage_support` and ``also``) and
    whether it reaches ``floor`` (all do at 0)."""
    n = len(candidates)
    if floor <= 0.0:
        support = passage_support(candidates) if candidates.coverage is not None else np.zeros(n)
        return support, np.ones(n, dtype=bool)
    if candidates.coverage is None:
        raise ConfigError("a coverage floor needs a coverage matrix (choose --coverage)")
    support = passage_support(candidates)
    if also is not None:
        if len(also) != n:
            raise ValueError(f"also has {len(also)} values for {n} candidates")
        support = np.maximum(support, np.asarray(also, dtype=np.float64))
    return support, support >= floor


def filter_pool(
    candidates: Candidates,
    floor: float,
    also: FloatArray | None = None,
    *,
    gate: float = 0.0,
    similarity: FloatArray | None = None,
    gate_margin: float = 0.0,
    names: Sequence[str] = (),
    question: str = "",
    gate_scope: GateScope = "passage",
    judge: FilterScope = "passages",
) -> tuple[Candidates, FilterReport]:
    """The candidates whose :func:`passage_support` reaches ``floor`` (all of them at 0) and,
    with a ``gate`` above 0, whose ``similarity`` to the question reaches ``gate``; and a
    :class:`FilterReport` of what each filter let through.

    ``also`` gives each candidate a second chance at the floor: its probability of answering
    the question itself (one value per candidate, in pool order); a passage then clears the
    floor when either reaches it. ``similarity`` holds one value per candidate, in pool order
    (:func:`covrag.pipeline.question_similarity`). With a ``gate_margin`` above 0 the gate is
    relative where the best passage is weak: it is ``min(gate, best similarity - gate_margin)``,
    so a question whose best passages all sit just under the gate (a cross-document question
    worded unlike any one passage) keeps the passages close to its best instead of none; the
    report names the gate that applied. ``names`` (the question's:
    :func:`covrag.text.subject_names`) must each be written by a candidate, else none is kept
    (:func:`absent_names`); when they are, only the candidates of documents about them are
    (:func:`subject_documents`, reading the ``question``'s words for titles).

    ``judge`` = ``question``: the floor and the gate judge the question, not each passage: when
    a candidate clears them and the name filter, all the name filter keeps are kept, else none.
    """
    _check(floor, gate, gate_margin, gate_scope, judge)
    n = len(candidates)
    support, by_floor = _floor(candidates, floor, also)
    by_gate = np.ones(n, dtype=bool)
    best_similarity = None
    if gate > 0.0:
        by_gate, gate, best_similarity = _gate(similarity, n, gate, gate_margin)
        if gate_scope == "document":  # also the passages of a document that clears both
            by_gate = by_gate | _whole_documents(by_gate & by_floor, candidates.passages)
    keep = by_floor & by_gate
    absent = absent_names(names, candidates.passages) if n else ()
    on_subject = subject_documents(names, question, candidates.passages)
    off_subject = int((keep & ~on_subject).sum())
    keep &= on_subject
    if absent:
        keep = np.zeros(n, dtype=bool)
        off_subject = 0
    cleared = int(keep.sum())
    if judge == "question" and keep.any():  # answerable: choose among what the names keep
        keep = on_subject.copy()
        off_subject = int((~on_subject).sum())
    report = FilterReport(
        pool=n,
        floor=floor,
        gate=gate,
        cleared_floor=int(by_floor.sum()),
        cleared_gate=int(by_gate.sum()),
        kept=int(keep.sum()),
        best_support=float(support.max()) if n else 0.0,
        best_similarity=best_similarity,
        absent=absent,
        off_subject=off_subject,
        judged=judge,
        cleared=cleared,
    )
    if keep.all():
        return candidates, report
    return subset(candidates, np.flatnonzero(keep)), report


def above_floor(
    candidates: Candidates,
    floor: float,
    also: FloatArray | None = None,
    *,
    gate: float = 0.0,
    similarity: FloatArray | None = None,
) -> Candidates:
    """The candidates :func:`filter_pool` keeps (without its report)."""
    return filter_pool(candidates, floor, also, gate=gate, similarity=similarity)[0]


def select_above_floor(
    selector: Selector, candidates: Candidates, budget: Budget, floor: float
) -> Selection:
    """``selector``'s choice among the candidates that clear ``floor``: it may hold fewer than
    the budget allows, or nothing."""
    return selector.select(above_floor(candidates, floor), budget)
