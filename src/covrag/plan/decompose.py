"""DES's decomposer: a question becomes N sub-questions that a complete answer must address.

The LLM lists more candidates than needed (1.5 ``n`` by default) as JSON, schema-constrained
where the backend can: each a factor a complete answer must weigh with one sub-question about it.
A sub-question must be a real question (ends with ``?``, several words, not the question itself);
unusable ones and near-duplicates (embedding cosine >= ``dedup``) are dropped, the ``n`` that
best represent the rest (facility location) are kept, and when fewer than ``n`` remain the LLM is
asked once more for the missing ones, shown the ones already kept.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from covrag.errors import ConfigError
from covrag.llm.base import LLM, ChatParams, canonical, system, user
from covrag.llm.structured import chat_json
from covrag.schema.llm import Reply, sized, with_fields
from covrag.selectors.base import BudgetTracker
from covrag.selectors.facility import FacilityLocation
from covrag.selectors.optimize import fill, naive_greedy
from covrag.text import words
from covrag.types import Aspect, Budget, as_mapping

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

SYSTEM = (
    "You plan research for long, complete answers. You split a question into the distinct "
    "sub-questions a complete answer has to address. You reply with JSON only."
)

MEMO_VERSION = 1

STYLES = {
    "factors": (
        "A complete answer to this question must weigh many different factors. "
        "List {ask} distinct factors (short noun phrases, each about a different thing) "
        "and, for each, one specific sub-question about it. Each sub-question ends with "
        "'?', does not repeat the question, and names its subject in full rather than "
        "'it', so that it can be searched on its own.\n"
    ),
    "points": (
        "A complete answer to this question states many different points: the specific "
        "claims, reasons and consequences people raise, on every side where the question is "
        "contested. List {ask} distinct points and, for each, the yes/no question that a "
        "passage making exactly that point answers. Each question states one specific claim, "
        "as in this example about another topic, 'Should cities ban cars?': "
        '{{"factor": "cleaner air", "question": "Do car bans cut air pollution in city '
        'centres?"}}, {{"factor": "local shops", "question": "Do car bans hurt shops in '
        "the centre?\"}}. Not broad questions such as 'What are the benefits of ...?'. Each "
        "question ends with '?', does not repeat the question, and names its subject in full "
        "rather than 'it'.\n"
    ),
}
"""How the decomposer asks for sub-questions (``style``): ``factors`` is DES's (a factor a
complete answer must weigh, one sub-question about each); ``points`` asks for the specific
claims a complete answer states, each as the narrow question a passage making it answers."""

_NUMBERING = re.compile(r"^\s*(?:[-*\u2022]|\(?\d+[.):]|[a-z][.)])\s+")


def clean_question(text: str) -> str:
    """Strip list numbering, quotes and surrounding space from one generated question."""
    text = _NUMBERING.sub("", text.strip()).strip().strip("\"'").strip()
    return re.sub(r"\?{2,}$", "?", text)


def normalise(text: str) -> str:
    return " ".join(words(text))


def question_problem(text: str, question: str) -> str | None:
    """Why ``text`` is not a usable sub-question of ``question`` (None when it is)."""
    if not text.endswith("?"):
        return f"{text!r} is not a question (it must end with '?')"
    if len(words(text)) < 3:
        return f"{text!r} is too short to be a specific question"
    if normalise(text) == normalise(question):
        return f"{text!r} repeats the question itself"
    return None


class FactorQuestion(Reply):
    factor: str
    question: str


class ItemsReply(Reply):
    """``{"items": [{"factor": ..., "question": ...}, ...]}``."""

    items: list[FactorQuestion]


@lru_cache(maxsize=64)
def items_reply(least: int, most: int) -> type[ItemsReply]:
    """The reply with ``least``..``most`` items."""
    return with_fields(ItemsReply, items=sized(FactorQuestion, least, most))


def near_duplicates(texts: Sequence[str], threshold: float, encoder: Encoder | None) -> list[int]:
    """Indices of texts to drop: exact (normalised) repeats, and texts whose embedding cosine to
    an earlier kept text is >= ``threshold`` (no embedding check when ``encoder`` is None)."""
    drop: list[int] = []
    seen: set[str] = set()
    for i, text in enumerate(texts):
        key = normalise(text)
        if key in seen:
            drop.append(i)
        seen.add(key)
    if encoder is None or len(texts) < 2:
        return drop
    vectors = encoder.encode(list(texts))
    kept: list[int] = []
    for i in range(len(texts)):
        if i in drop:
            continue
        if kept and float(np.max(vectors[kept] @ vectors[i])) >= threshold:
            drop.append(i)
        else:
            kept.append(i)
    return sorted(drop)


@dataclass(frozen=True)
class SubQuestions:
    """The decomposition of one question.

    Attributes:
        question: The question decomposed.
        aspects: The kept sub-questions as aspects ``sq1``, ``sq2``, ... (polarity neutral; the
            factor each one asks about is in ``metadata["factor"]``).
        dropped: Candidates removed as near-duplicates of kept ones, or as unusable (not a
            question, the question itself).
        spare: Distinct candidates left over once the ``n`` most distinct were kept.
        calls: LLM calls made (retries and the top-up included).
    """

    question: str
    aspects: tuple[Aspect, ...]
    dropped: tuple[str, ...] = ()
    calls: int = 1
    spare: tuple[str, ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(a.text for a in self.aspects)


@dataclass(frozen=True)
class _Candidate:
    factor: str
    question: str


def representative(vectors: np.ndarray, n: int) -> list[int]:
    """``n`` row indices that best represent all rows, returned in order.

    Greedy facility location over cosine similarity (select's ``FacilityLocation`` objective and
    greedy optimizer): each step adds the row that most raises
    ``sum_j max(-1, max_{i chosen} cos(i, j))``, so the rows left out are the ones the chosen rows
    already stand for (the most redundant), not the odd ones out. Ties (within float noise) go to
    the earlier row; once no row adds anything, the earliest rows fill the rest.
    """
    count = len(vectors)
    if n >= count:
        return list(range(count))
    if n < 1:
        return []
    objective = FacilityLocation(vectors @ vectors.T, start=-1.0)
    tracker = BudgetTracker(Budget(max_passages=n), np.zeros(count, dtype=np.int64))
    available = np.ones(count, dtype=bool)
    order = np.arange(count, dtype=np.int64)
    chosen, scores = naive_greedy(objective, tracker, available, order)
    fill(tracker, available, order, np.zeros(count), chosen, scores)
    return sorted(chosen)


@dataclass
class LLMDecomposer:
    """Question -> ``n`` distinct sub-questions (DES step 1).

    The LLM is asked for ``candidates`` (default 1.5 ``n``) factors a complete answer must
    weigh, each with one sub-question about it: naming the factor first keeps a small model
    from writing the same question in several wordings. Unusable candidates and near-duplicates
    are dropped, the ``n`` that best represent the rest are kept, and when fewer than ``n`` remain
    the LLM is asked once more for the missing ones, shown the factors already kept.

    Args:
        llm: The backend that writes them.
        n: Sub-questions wanted (DES: 10).
        candidates: Sub-questions asked for (None = ``ceil(1.5 n)``).
        dedup: Cosine at or above which two sub-questions count as the same (None = only
            exact repeats are removed and the first ``n`` are kept).
        retries: Extra attempts when a reply is unparsable or has no usable question.
        max_tokens: Token limit of each reply (None = 60 per candidate, at least 300).
        encoder: Sentence encoder for the near-duplicate check (default: packaged MiniLM).
        style: How the LLM is asked (:data:`STYLES`): ``factors`` (DES's) or ``points``.
    """

    llm: LLM
    n: int = 10
    dedup: float | None = 0.9
    retries: int = 2
    max_tokens: int | None = None
    encoder: Encoder | None = field(default=None, repr=False)
    candidates: int | None = None
    style: str = "factors"

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"n must be >= 1, got {self.n}")
        if self.style not in STYLES:
            raise ConfigError(f"style must be one of {', '.join(STYLES)}, got {self.style!r}")
        if self.candidates is not None and self.candidates < self.n:
            raise ConfigError(f"candidates must be >= n ({self.n}), got {self.candidates}")
        if self.dedup is not None and not 0 < self.dedup <= 1:
            raise ConfigError(f"dedup must lie in (0, 1], got {self.dedup}")

    @property
    def asked(self) -> int:
        return self.candidates if self.candidates is not None else math.ceil(1.5 * self.n)

    def _encoder(self) -> Encoder | None:
        if self.dedup is None:
            return None
        if self.encoder is None:
            from covrag.embed import default_encoder

            return default_encoder()  # cached by covrag.embed; the decomposer stays as built
        return self.encoder

    def _ask(
        self, question: str, want: int, ask: int, kept: Sequence[_Candidate]
    ) -> tuple[list[_Candidate], list[str], int, str]:
        prompt = f"Question: {question}\n\n" + STYLES[self.style].format(ask=ask)
        if kept:
            listed = "\n".join(f"- {k.factor}: {k.question}" for k in kept)
            what = "factors" if self.style == "factors" else "points"
            prompt += f"\nThese {what} are already covered; list different ones:\n{listed}\n"
        prompt += (
            f'\nReply with JSON: {{"items": [{ask} objects like '
            '{"factor": "...", "question": "...?"}]}'
        )

        def check(value: ItemsReply) -> tuple[list[_Candidate], list[str]]:
            good: list[_Candidate] = []
            bad: list[str] = []
            problems: list[str] = []
            for item in value.items:
                text = clean_question(item.question)
                problem = question_problem(text, question)
                if problem is None:
                    good.append(_Candidate(item.factor.strip(), text))
                else:
                    bad.append(text)
                    problems.append(problem)
            if not good:
                raise ValueError("no usable sub-question: " + "; ".join(problems[:3]))
            return good, bad

        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            items_reply(want, ask),
            task=f"decompose {question!r}",
            check=check,
            retries=self.retries,
            params=ChatParams(max_tokens=self.max_tokens or max(300, 60 * ask)),
        )
        good, bad = result.value
        return good, bad, result.attempts, result.results[-1].text

    def _distinct(
        self, items: list[_Candidate]
    ) -> tuple[list[_Candidate], list[str], list[_Candidate]]:
        """(kept, dropped as near-duplicates, spare) of ``items``."""
        texts = [i.question for i in items]
        encoder = self._encoder()
        drop = set(near_duplicates(texts, self.dedup or 1.0, encoder))
        rest = [i for k, i in enumerate(items) if k not in drop]
        dropped = [t for k, t in enumerate(texts) if k in drop]
        if len(rest) <= self.n:
            return rest, dropped, []
        if encoder is None:
            return rest[: self.n], dropped, rest[self.n :]
        chosen = set(representative(encoder.encode([i.factor or i.question for i in rest]), self.n))
        kept = [i for k, i in enumerate(rest) if k in chosen]
        spare = [i for k, i in enumerate(rest) if k not in chosen]
        return kept, dropped, spare

    def _memo_key(self, question: str, reply: str) -> str:
        """The key of the outcome of this first reply, kept with the LLM's cached replies.

        The outcome (kept, dropped, spare, the top-up) follows from the first reply and these
        settings, so a rerun answered from the response cache also skips loading the encoder.
        """
        from covrag.embed import DEFAULT_MODEL

        encoder = self.encoder.name if self.encoder is not None else DEFAULT_MODEL
        payload = {
            "v": MEMO_VERSION,
            "question": question,
            "reply": reply,
            "settings": [self.n, self.asked, self.dedup, self.retries, self.max_tokens, encoder],
        }
        if self.style != "factors":  # the earlier keys (all DES's style) stay valid
            payload["style"] = self.style
        return "decompose:" + hashlib.sha256(canonical(payload).encode("utf-8")).hexdigest()

    def decompose(self, question: str) -> SubQuestions:
        """The sub-questions of ``question``.

        Raises:
            StructuredOutputError: when the LLM gives no usable list within the retries.
        """
        items, bad, calls, reply = self._ask(question, self.n, self.asked, [])
        key = self._memo_key(question, reply)
        memo = self.llm.recall(key)
        if memo is not None:
            try:
                return _from_memo(question, memo)
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("ignoring unreadable decomposition memo %s: %s", key, exc)
        kept, dropped, spare = self._distinct(items)
        dropped = bad + dropped
        if len(kept) < self.n:
            missing = self.n - len(kept)
            more, bad, extra_calls, _ = self._ask(question, missing, missing + 2, kept)
            calls += extra_calls
            kept, near, spare = self._distinct(kept + more)
            dropped += bad + near
        if dropped:
            logger.info("decompose %r: dropped %d candidates", question, len(dropped))
        aspects = tuple(
            Aspect(
                f"sq{i}",
                c.question,
                metadata=as_mapping({"source": "llm", "factor": c.factor}),
            )
            for i, c in enumerate(kept, start=1)
        )
        result = SubQuestions(
            question, aspects, tuple(dropped), calls, tuple(c.question for c in spare)
        )
        record = {
            "kept": [[c.factor, c.question] for c in kept],
            "dropped": list(result.dropped),
            "spare": list(result.spare),
            "calls": calls,
        }
        self.llm.remember(key, record)
        return result


def _from_memo(question: str, record: Any) -> SubQuestions:
    aspects = tuple(
        Aspect(f"sq{i}", str(text), metadata=as_mapping({"source": "llm", "factor": str(factor)}))
        for i, (factor, text) in enumerate(record["kept"], start=1)
    )
    return SubQuestions(
        question,
        aspects,
        tuple(str(t) for t in record["dropped"]),
        int(record["calls"]),
        tuple(str(t) for t in record["spare"]),
    )
