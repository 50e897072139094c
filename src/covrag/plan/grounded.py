"""Sub-questions in the user's frame, grounded in what the corpus holds (``ask``'s default plan).

DES decomposes every question into a fixed number of sub-questions written from the question
alone. On a folder of tool manuals that gave 8 template sub-questions for a one-line how-to
question ("What is the term for the file created by tar?") and asked about the SSH *server*
when the user asked about the client, and the constrained-JSON call that wrote them cost
several times the writer's time per token. :class:`GroundedPlanner` instead:

- shows the LLM the question together with the documents a first search finds (each
  passage's document and its opening words), so the sub-questions use the corpus's own terms;
- asks for as many sub-questions as the question has parts (one for a simple question, more
  for a broad or comparative one, at most ``most``), each keeping the question's frame: the
  same program or library, the same side (client or server), the same version;
- reads a plain list, one question a line (no grammar-constrained JSON), and drops what is not
  a usable question (not ending in ``?``, too short, a repeat, one pointing at the passages
  the planner was shown, "What are the block-listed codes mentioned in the passage?", which the
  user never saw: :func:`points_at_shown`), each with a note; a reply cut at the token limit
  (a model that loops) is used for its complete lines, noted, and kept by a response cache, so
  the next run plans the same;
- keeps each sub-question in the question's frame: when the question names a program whose
  document the search found (``tar``) and a sub-question leaves it out, the sub-question gets
  it back ("How can I exclude files?" -> "How can I exclude files with tar?"), with a note;
- keeps none when not one sub-question shares a word with the question (:func:`off_question`):
  the plan then copied what the search showed instead of asking what the user asked (a
  question about ``setTimeout`` planned as "What is the birthtime of the Timers
  documentation?", four times over, from the ``fs`` passages the search found first).

When no usable sub-question comes back, the question itself is the one aspect, with a note.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from covrag.generate.attribution import bare_name
from covrag.generate.requote import stems
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.prompts import document_of, truncate_words
from covrag.plan.decompose import clean_question, normalise, question_problem
from covrag.text import content_words
from covrag.types import Aspect, Passage

logger = logging.getLogger(__name__)

SYSTEM = (
    "You plan how to answer a user's question from a collection of documents. You list the "
    "sub-questions a complete answer must answer, one per line."
)

PROMPT = (
    "Question: {question}\n\n"
    "What a search of the documents found first (document, then the passage's opening words):\n"
    "{found}\n\n"
    "List the sub-questions a complete answer to the question must answer: one for each part "
    "of the question and no more. A simple question has one; a question that asks for two "
    "things has two; at most {most}. Each sub-question keeps the question's own frame: the "
    "same program, tool or library, the same side (client or server), the same version, named "
    "in full so that it can be searched on its own. Use the documents' terms where they fit. "
    "Do not ask for definitions of words the question already uses, and do not ask about "
    "anything the question does not ask. Write one sub-question per line, each ending with "
    "'?', and nothing else."
)


@dataclass(frozen=True)
class GroundedPlan:
    """The sub-questions of one question and why candidates were dropped."""

    question: str
    aspects: tuple[Aspect, ...]
    notes: tuple[str, ...] = ()
    raw: str = ""


def found_lines(pool: Sequence[Passage], shown: int, words: int) -> str:
    """The first ``shown`` passages of ``pool`` from distinct places, as the prompt lists them:
    ``- (document) opening words``."""
    lines: list[str] = []
    seen: set[str] = set()
    for passage in pool:
        opening = truncate_words(passage.text, words)
        if opening in seen:
            continue
        seen.add(opening)
        document = document_of(passage)
        lines.append(f"- ({document}) {opening}" if document else f"- {opening}")
        if len(lines) == shown:
            break
    return "\n".join(lines) or "(nothing found)"


class GroundedPlanner:
    """Question + first pool -> as many sub-questions as the question has parts (see the
    module docs).

    Args:
        llm: Writes the sub-questions.
        most: At most this many sub-questions.
        shown: Passages of the first pool shown to the LLM.
        words: Opening words shown of each.
        max_tokens: Most tokens of the reply.
    """

    def __init__(
        self, llm: LLM, *, most: int = 4, shown: int = 6, words: int = 30, max_tokens: int = 160
    ) -> None:
        if most < 1 or shown < 0 or words < 1 or max_tokens < 16:
            raise ValueError("most and words must be >= 1, shown >= 0, max_tokens >= 16")
        self.llm = llm
        self.most = most
        self.shown = shown
        self.words = words
        self.max_tokens = max_tokens

    def plan(self, question: str, pool: Sequence[Passage]) -> GroundedPlan:
        """The sub-questions of ``question`` (aspects ``sq1``, ``sq2``, ...)."""
        prompt = PROMPT.format(
            question=question,
            found=found_lines(pool, self.shown, self.words),
            most=self.most,
        )
        params = ChatParams(
            temperature=self.llm.params.temperature,
            max_tokens=self.max_tokens,
            seed=self.llm.params.seed,
        )
        messages = [system(SYSTEM), user(prompt)]
        reply = self.llm.chat(messages, params=params)
        kept, notes = parse_subquestions(reply.text, question, self.most)
        if reply.finish_reason == "length":
            # a model that loops writes to the limit; its complete lines are the plan, so the
            # reply is kept (a response cache then gives the same plan on the next run)
            notes.append(f"the plan reply reached its limit of {self.max_tokens} tokens")
            self.llm.accept(messages, reply, params=params)
        kept = [with_frame(text, question, pool, notes) for text in kept]
        if off_question(kept, question):
            notes.append(
                "no sub-question shares a word with the question, so none asks what it asks: "
                + "; ".join(repr(text) for text in kept)
            )
            kept = []
        if not kept:
            notes.append("no usable sub-question: the question itself is the one aspect")
            kept = [question]
        aspects = tuple(
            Aspect(f"sq{i}", text, metadata={"planner": "grounded"})
            for i, text in enumerate(kept, start=1)
        )
        for note in notes:
            logger.info("plan: %s", note)
        return GroundedPlan(question, aspects, tuple(notes), reply.text)


def frame_terms(question: str, pool: Sequence[Passage]) -> list[str]:
    """The words of ``question`` that name a document of ``pool`` (``tar``, ``curl``,
    ``ssh_config``): the program or library the question is about, as the question writes them."""
    names: set[str] = set()
    for passage in pool:
        document = document_of(passage)
        if document:
            names.add(bare_name(document.lower()))
    return [w for w in dict.fromkeys(_TOKEN.findall(question)) if w.lower() in names]


def off_question(texts: Sequence[str], question: str) -> bool:
    """Whether no text of ``texts`` (one at least) shares a content word with ``question``
    (stems, numbers aside: "30" in a delay and "v20" in a version are not a shared subject); a
    word of the question of four letters or more written inside a longer word of the text is
    shared (``bzip2recover`` writes "bzip2" and "recover").

    Example:
        >>> off_question(["What is the birthtime of the Timers documentation?"],
        ...              "Why does setTimeout(fn, 30 * 24 * 60 * 60 * 1000) fire at once?")
        True
        >>> off_question(["How do I set ServerAliveInterval?", "How do I keep SSH alive?"],
        ...              "How do I keep an SSH connection from timing out?")
        False
        >>> off_question(["How does bzip2recover work?"],
        ...              "How can data be recovered from a damaged bzip2 file?")
        False
    """
    asked = {w for w in stems(question) if not w.isdigit()}
    parts = [w for w in asked if len(w) >= 4]

    def shares(text: str) -> bool:
        written = stems(text)
        return bool(asked & written) or any(p in w for w in written for p in parts)

    return bool(texts) and not any(shares(text) for text in texts)


def with_frame(text: str, question: str, pool: Sequence[Passage], notes: list[str]) -> str:
    """``text`` naming the program the question names, when it leaves it out ("How can I
    create a gzip-compressed archive?" for a question about tar -> "... archive with tar?");
    a note says so."""
    missing = [t for t in frame_terms(question, pool) if not _has(text, t)]
    if not missing:
        return text
    framed = text[:-1].rstrip() + " with " + " and ".join(missing) + "?"
    notes.append(f"sub-question {text!r} kept in the question's frame: {framed!r}")
    return framed


def _has(text: str, term: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text, re.IGNORECASE) is not None


_TOKEN = re.compile(r"[A-Za-z][\w.+-]*[A-Za-z0-9]|[A-Za-z]")


#: Share of content words two sub-questions must share (of the smaller set) to be one question
#: worded twice ("How can I configure scp to ...?" and "How can I set up scp to ...?").
SAME_WORDS = 0.8


def _repeats(candidate: str, kept: Sequence[str]) -> bool:
    mine = content_words(candidate)
    for other in kept:
        theirs = content_words(other)
        smaller = min(len(mine), len(theirs))
        if normalise(candidate) == normalise(other) or (
            smaller and len(mine & theirs) / smaller >= SAME_WORDS
        ):
            return True
    return False


_SHOWN_NAMES = r"(?:passages?|excerpts?|snippets?|search results?)"
_ORDINAL = (
    r"(?:first|second|third|(?:four|fif|six|seven|eigh|nin|ten|eleven|twelf)th|"
    r"(?:thir|four|fif|six|seven|eigh|nine)teenth|twentieth|\d+(?:st|nd|rd|th)|"
    r"last|above|given|previous|same)"
)
#: Words that point at what the planner was shown rather than at the user's subject ("...
#: mentioned in the passage", "... in the first document" at the end of a clause, "what does
#: the second passage say"): the user never saw those passages.
_POINTS_AT_SHOWN = re.compile(
    r"\b(?:mentioned|described|listed|discussed|referred to|shown|given|named|used)\s+"
    rf"(?:in|by)\s+the\s+(?:{_ORDINAL}\s+)?(?:{_SHOWN_NAMES}|documents?|texts?)\b"
    rf"|\b(?:in|from|of)\s+the\s+{_ORDINAL}\s+(?:documents?|texts?)\b(?=\s*[?.,]|\s*$)"
    rf"|\b(?:the|this|that|these|those)\s+(?:{_ORDINAL}\s+)?{_SHOWN_NAMES}\b",
    re.IGNORECASE,
)


def points_at_shown(text: str) -> bool:
    """Whether a sub-question points at the passages the planner was shown instead of the
    user's subject (such a sub-question is out of the question's frame: worded without the
    pointer it still asks what the passage was about, "What is the name of the compression
    library?" for a question about thread safety).

    Example:
        >>> points_at_shown("What are the block-listed codes mentioned in the passage?")
        True
        >>> points_at_shown("How do I number the pages of a document?")
        False
    """
    return _POINTS_AT_SHOWN.search(text) is not None


def parse_subquestions(text: str, question: str, most: int) -> tuple[list[str], list[str]]:
    """The usable sub-questions of a reply (at most ``most``, in order) and a note for each
    line dropped."""
    kept: list[str] = []
    notes: list[str] = []
    for line in text.splitlines():
        candidate = clean_question(line)
        if not candidate:
            continue
        if points_at_shown(candidate):
            notes.append(
                f"sub-question dropped: {candidate!r} asks about the passages shown, not the "
                "question's subject"
            )
            continue
        # a simple question is its own one sub-question
        same = normalise(candidate) == normalise(question) and candidate.endswith("?")
        problem = None if same else question_problem(candidate, question)
        if problem is None and _repeats(candidate, kept):
            problem = f"{candidate!r} repeats an earlier sub-question"
        if problem is None and len(kept) == most:
            problem = f"{candidate!r} is past the limit of {most} sub-questions"
        if problem is not None:
            notes.append(f"sub-question dropped: {problem}")
            continue
        kept.append(candidate)
    return kept, _counted(notes)


def _counted(notes: Sequence[str]) -> list[str]:
    """``notes`` with a note written more than once given once, with its count (a reply that
    loops writes one line a dozen times).

    Example:
        >>> _counted(["a", "b", "a", "a"])
        ['a (3 times)', 'b']
    """
    counts = dict.fromkeys(notes, 0)
    for note in notes:
        counts[note] += 1
    return [note if n == 1 else f"{note} ({n} times)" for note, n in counts.items()]
