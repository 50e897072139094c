"""Key points the LLM reads off the retrieved pool (key point generation, ``--aspects keypoints``).

The pool's own representatives (:mod:`covrag.plan.pool`) are passages, so covering them is
facility location by another route; sub-questions written from the question alone
(:mod:`covrag.plan.decompose`) include templates no passage answers ("... tax obligations?"
for software licences). Key point analysis (Bar-Haim et al., "From arguments to key points",
ACL 2020; the key point generation track of ArgMining 2021) summarises a set of arguments as
the short, distinct points they make. Here the pool is grouped by k-means over MiniLM
embeddings, and for each group the LLM is shown the members nearest its centre (with their
document titles) and writes the one point they share, as a short statement in its own words (the
form the coverage estimator reads best) and, for ``ask`` and ``covrag plan --from-pool``, the
question such passages answer. One group per call: shown the whole pool at once, the embedded
1.5B model copied passages verbatim instead of naming their points.

Then every point is checked against the pool: it is kept only when at least one pooled
passage covers its statement or its sub-question by the coverage estimator (the shipped
cross-encoder, at its thresholds), among the passages nearest to it by embedding. Points no
passage covers are dropped with a note naming them, as are near-duplicates; of the rest, the
``n`` that best represent the others (facility location) are kept.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.prompts import truncate_words
from covrag.llm.structured import chat_json
from covrag.plan.decompose import clean_question, near_duplicates, representative
from covrag.schema.llm import Reply
from covrag.selectors.cluster import kmeans
from covrag.text import is_question, words
from covrag.types import Aspect, Passage, Topic, as_mapping

if TYPE_CHECKING:
    from covrag.coverage.base import CoverageEstimator
    from covrag.embed import Encoder
    from covrag.retrieve import Retriever

logger = logging.getLogger(__name__)

SYSTEM = (
    "You name the point that a group of passages on a topic share, in a few plain words of your "
    "own. You reply with JSON only."
)

MAX_POINT_WORDS = 15
#: Passages below this MiniLM cosine to the question are not read by :func:`pool_keypoints`
#: (the default of ``ask``'s topic gate, ``AskConfig.gate``).
DEFAULT_GATE = 0.5
#: The worked example of the prompt (another topic); a reply that copies it is refused.
EXAMPLE = ("Fast food causes obesity", "Does fast food cause obesity?")


class PointReply(Reply):
    """``{"point": ...}`` (the ``statement`` form)."""

    point: str


class PointQuestionReply(Reply):
    """``{"point": ..., "question": ...}`` (the ``question`` form)."""

    point: str
    question: str


def point_problem(
    point: str, question: str | None, query: str, max_words: int = MAX_POINT_WORDS
) -> str | None:
    """Why a statement (and its sub-question, if any) is not a usable key point of ``query``."""
    if is_question(point):
        return f"{point!r} is a question, not a statement of a point"
    count = len(words(point))
    if count < 3 or count > max_words:
        return f"{point!r} must be a short statement, 3 to {max_words} words"
    if question is not None and (not question.endswith("?") or len(words(question)) < 3):
        return f"{question!r} is not a specific question ending with '?'"
    if " ".join(words(point)) == " ".join(words(query)):
        return f"{point!r} repeats the topic itself"
    if question is not None and " ".join(words(question)) == " ".join(words(query)):
        return f"{question!r} repeats the question itself"
    if " ".join(words(point)) == " ".join(words(EXAMPLE[0])):
        return f"{point!r} copies the example, which is about another topic"
    if question is not None and " ".join(words(question)) == " ".join(words(EXAMPLE[1])):
        return f"{question!r} copies the example, which is about another topic"
    return None


@dataclass(frozen=True)
class KeyPoints:
    """The key points of one pool.

    Attributes:
        query: The question or claim the pool was retrieved for.
        aspects: The kept points (ids ``kp1``, ``kp2``, ...), worded as statements or as
            sub-questions (the other wording in ``metadata`` and, for questions, as the
            aspect's answer sketch).
        notes: Why each dropped candidate was dropped, one line each (ungrounded, duplicate,
            unusable), so nothing is dropped silently.
        groups: Passages shown to the LLM per group (pool indices).
    """

    query: str
    aspects: tuple[Aspect, ...]
    notes: tuple[str, ...] = ()
    groups: tuple[tuple[int, ...], ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(a.text for a in self.aspects)


@dataclass(frozen=True)
class _Candidate:
    point: str
    question: str | None


@dataclass
class KeyPointGenerator:
    """Pool -> up to ``n`` key points the LLM reads off it, each grounded in a pooled passage.

    Args:
        llm: The backend that writes the points.
        n: Points wanted (fewer when the pool supports fewer).
        groups: k-means groups of the pool shown to the LLM, one point asked of each (None =
            ``ceil(1.2 n)``: some points are dropped).
        per_group: Passages shown per group (those nearest the group's centre).
        passage_words: Words of each shown passage (longer ones are cut).
        form: ``statement`` (the aspect is the point; the estimator reads statements best) or
            ``question`` (the aspect is the sub-question, the point its answer sketch).
        ground: Whether to drop points no pooled passage covers.
        ground_top: Passages, nearest to a point by embedding, the estimator checks it against.
        max_words: Longest point accepted (a longer one is refused and asked again).
        dedup: Cosine at or above which two points count as the same.
        retries: Extra attempts when a reply is unparsable or has no usable point.
        estimator: Judge of the grounding check (default: the shipped cross-encoder).
        encoder: Sentence encoder (default: packaged MiniLM).
    """

    llm: LLM
    n: int = 10
    groups: int | None = None
    per_group: int = 3
    passage_words: int = 25
    form: str = "statement"
    ground: bool = True
    ground_top: int = 8
    max_words: int = MAX_POINT_WORDS
    dedup: float = 0.9
    retries: int = 1
    estimator: CoverageEstimator | None = field(default=None, repr=False)
    encoder: Encoder | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("n", "asked", "per_group", "passage_words", "ground_top"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.form not in ("statement", "question"):
            raise ConfigError(f"form must be 'statement' or 'question', got {self.form!r}")
        if not 0 < self.dedup <= 1:
            raise ConfigError(f"dedup must lie in (0, 1], got {self.dedup}")

    @property
    def asked(self) -> int:
        """Groups shown, and so points asked for."""
        return self.groups if self.groups is not None else math.ceil(1.2 * self.n)

    def _encoder(self) -> Encoder:
        if self.encoder is None:
            from covrag.embed import default_encoder

            self.encoder = default_encoder()
        return self.encoder

    def _estimator(self) -> CoverageEstimator:
        if self.estimator is None:
            from covrag.coverage import CrossEncoderCoverage

            self.estimator = CrossEncoderCoverage()
        return self.estimator

    def group(self, vectors: np.ndarray) -> list[list[int]]:
        """The pool's groups, largest first, each its ``per_group`` members nearest its centre."""
        count = len(vectors)
        labels = kmeans(vectors, min(self.asked, count), random_state=0)
        shown: list[tuple[int, list[int]]] = []
        for label in np.unique(labels):
            members = np.flatnonzero(labels == label)
            centre = vectors[members].mean(axis=0)
            order = members[np.argsort(-(vectors[members] @ centre), kind="stable")]
            shown.append((len(members), [int(i) for i in order[: self.per_group]]))
        shown.sort(key=lambda s: (-s[0], s[1][0]))
        return [members for _, members in shown]

    def prompt(self, topic: Topic, members: Sequence[int]) -> str:
        """The request for one group: the topic and the task first (a prefix the model can
        reuse from group to group), then the group's passages."""
        lines = []
        for i in members:
            passage = topic.passages[i]
            title = str(passage.metadata.get("title") or "").strip()
            text = truncate_words(passage.text, self.passage_words)
            lines.append(f"- ({title}) {text}" if title else f"- {text}")
        point, question = EXAMPLE
        if self.form == "question":
            also = (
                " and the question such passages answer, narrower than the topic (not the "
                "topic itself), ending with '?'"
            )
            example = f'{{"point": "{point}", "question": "{question}"}}'
            reply = '{"point": "...", "question": "...?"}'
        else:
            also, example, reply = "", f'{{"point": "{point}"}}', '{"point": "..."}'
        return (
            f"Topic: {topic.query}\n\nWrite the one point the passages below share, as a short "
            f"sentence in your own plain words (at most 10 words), not a copy of a passage{also}. "
            "As in this example about another topic: for the passages '- burgers have too many "
            "calories and kids get fat' and '- fast food is full of fat, it makes people obese' "
            f"write {example}.\n\nPassages:\n" + "\n".join(lines) + f"\n\nReply with JSON: {reply}"
        )

    def _ask(self, topic: Topic, members: Sequence[int]) -> _Candidate:
        query = topic.query

        def check(value: PointReply | PointQuestionReply) -> _Candidate:
            point = " ".join(value.point.split()).strip("\"'")
            asked = getattr(value, "question", None)
            question = None if asked is None else clean_question(asked)
            problem = point_problem(point, question, query, self.max_words)
            if problem is not None:
                raise ValueError(problem)
            return _Candidate(point, question)

        reply: type[PointReply | PointQuestionReply] = (
            PointQuestionReply if self.form == "question" else PointReply
        )
        result = chat_json(
            self.llm,
            [system(SYSTEM), user(self.prompt(topic, members))],
            reply,
            task=f"key point of a group of {query!r}",
            check=check,
            retries=self.retries,
            params=ChatParams(max_tokens=100 if self.form == "question" else 60),
        )
        candidate: _Candidate = result.value
        return candidate

    def grounded(
        self, topic: Topic, vectors: np.ndarray, items: Sequence[_Candidate]
    ) -> list[bool]:
        """Whether a pooled passage covers each item's statement or question, by the estimator,
        among the ``ground_top`` passages nearest that text by embedding."""
        texts: list[str] = []
        owners: list[int] = []
        for k, item in enumerate(items):
            for text in (item.point, item.question):
                if text is not None:
                    texts.append(text)
                    owners.append(k)
        if not texts:
            return []
        top = min(self.ground_top, len(topic.passages))
        nearest = np.argsort(-(self._encoder().encode(texts) @ vectors.T), axis=1, kind="stable")
        nearest = nearest[:, :top]
        rows = sorted({int(i) for i in nearest.ravel()})
        check = Topic(
            topic.query_id,
            topic.query,
            tuple(topic.passages[i] for i in rows),
            tuple(Aspect(f"t{j}", text) for j, text in enumerate(texts)),
        )
        covered = self._estimator().estimate(check).covered
        position = {row: r for r, row in enumerate(rows)}
        hits = [False] * len(items)
        for j, owner in enumerate(owners):
            if any(covered[position[int(i)], j] for i in nearest[j]):
                hits[owner] = True
        return hits

    def generate(self, topic: Topic) -> KeyPoints:
        """The key points of ``topic``'s pool (none for an empty pool).

        Raises:
            StructuredOutputError: when the LLM gives no usable point within the retries.
        """
        if not topic.passages:
            return KeyPoints(topic.query, (), ("the pool is empty: no key points",))
        encoder = self._encoder()
        vectors = encoder.encode([p.text for p in topic.passages])
        groups = self.group(vectors)
        items: list[_Candidate] = []
        notes: list[str] = []
        for g, members in enumerate(groups, start=1):
            try:
                items.append(self._ask(topic, members))
            except StructuredOutputError as exc:
                last = exc.attempts[-1][1] if exc.attempts else str(exc)
                notes.append(f"unusable: group {g} has no point ({last})")
        drop = set(near_duplicates([c.point for c in items], self.dedup, encoder))
        notes += [f"duplicate: {items[k].point!r}" for k in sorted(drop)]
        items = [c for k, c in enumerate(items) if k not in drop]
        if self.form == "question":  # distinct questions too, none a rewording of the topic
            asked = [topic.query, *(c.question or c.point for c in items)]
            drop = {k - 1 for k in near_duplicates(asked, self.dedup, encoder)}
            notes += [
                f"duplicate of the topic or of another question: {items[k].question!r}"
                for k in sorted(drop)
            ]
            items = [c for k, c in enumerate(items) if k not in drop]
        if self.ground:
            flags = self.grounded(topic, vectors, items)
            notes += [
                f"no pooled passage covers it: {c.question or c.point!r}"
                for c, ok in zip(items, flags, strict=True)
                if not ok
            ]
            items = [c for c, ok in zip(items, flags, strict=True) if ok]
        if len(items) > self.n:
            chosen = set(representative(encoder.encode([c.point for c in items]), self.n))
            notes += [f"spare: {c.point!r}" for k, c in enumerate(items) if k not in chosen]
            items = [c for k, c in enumerate(items) if k in chosen]
        for note in notes:
            logger.info("key points of %r: dropped %s", topic.query, note)
        return KeyPoints(
            topic.query,
            tuple(self._aspect(k, c) for k, c in enumerate(items, start=1)),
            tuple(notes),
            tuple(tuple(g) for g in groups),
        )

    def _aspect(self, number: int, item: _Candidate) -> Aspect:
        meta = as_mapping({"source": "keypoints", "point": item.point, "question": item.question})
        if item.question is not None:
            return Aspect(f"kp{number}", item.question, metadata=meta, answers=(item.point,))
        return Aspect(f"kp{number}", item.point, metadata=meta)


def pool_keypoints(
    question: str,
    llm: LLM,
    retriever: Retriever,
    *,
    pool: int = 50,
    n: int = 10,
    gate: float = DEFAULT_GATE,
) -> KeyPoints:
    """The sub-questions of ``question`` read off the pool ``retriever`` finds for it: each the
    question a key point of the pool answers, that point its answer sketch (``covrag plan
    --from-pool``; ``AskConfig(aspect_source="keypoints")``).

    Passages whose MiniLM cosine to ``question`` is below ``gate`` are not read (``ask``'s topic
    gate): a corpus without the question's subject yields passages from other debates, whose
    points are grounded in the pool but not about the question. A note says how many.

    Raises:
        ConfigError: when ``pool`` < 1.
    """
    if pool < 1:
        raise ConfigError(f"pool must be >= 1, got {pool}")
    return read_keypoints(question, llm, tuple(retriever.search(question, pool)), n=n, gate=gate)


def read_keypoints(
    question: str, llm: LLM, found: tuple[Passage, ...], *, n: int = 10, gate: float = DEFAULT_GATE
) -> KeyPoints:
    """:func:`pool_keypoints` on a pool already retrieved (``found``, in rank order)."""
    # Asked for a question too, the 1.5B model writes longer points, and more are unusable:
    # 1.5 n groups and points of up to 20 words.
    generator = KeyPointGenerator(
        llm, n=n, groups=math.ceil(1.5 * n), form="question", max_words=20
    )
    notes: tuple[str, ...] = ()
    if found and gate > 0:
        encoder = generator._encoder()
        similarity = encoder.encode([p.text for p in found]) @ encoder.encode([question])[0]
        kept = tuple(p for p, s in zip(found, similarity, strict=True) if s >= gate)
        if len(kept) < len(found):
            notes = (
                f"off the question: {len(found) - len(kept)} of {len(found)} pooled passages "
                f"(MiniLM cosine < {gate}) were not read",
            )
        found = kept
    result = generator.generate(Topic("pool", question, found, ()))
    return dataclasses.replace(result, notes=notes + result.notes)
