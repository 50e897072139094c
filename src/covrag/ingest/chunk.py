"""Documents into passages: token-sized, sentence-respecting chunks with character offsets.

The text is first unwrapped (:mod:`covrag.ingest.unwrap`): the line breaks inside a paragraph
of hard-wrapped text or of a PDF's text become spaces, so a passage reads as prose and the
chunker sees sentences rather than printed lines. Chunking is done by ``semchunk`` (Isaacus): it
splits at the most meaningful boundary that makes a piece fit (blank lines, then line breaks,
tabs, sentence ends, clause marks, words), so a sentence is cut only when it is longer than a
whole passage. It is token-aware with any counter: covrag gives it the budget's own tokenizer
(MiniLM WordPiece, :mod:`covrag.tokens`), so a passage of at most ``tokens`` tokens costs at most
that in a budget and fits the coverage cross-encoder's 256-token pairs with room for the
sub-question. It returns each chunk's exact ``(start, end)`` in the text it was given (LangChain's
``add_start_index`` recovers offsets with ``str.find``, which picks the wrong place in a document
that repeats itself; LlamaIndex's ``SentenceSplitter`` joins its pieces again), and the unwrapped
text maps those back to the document's own text, so ``unwrap(document.text[start:end], keep)
== passage.text`` holds by construction (``keep``: the document's verbatim spans, its code
blocks, shifted by ``start``) and ``[start, end)`` spans exactly the passage's content.

Overlap is made here, not by semchunk (whose overlapping windows start every ``overlap`` tokens,
mid-sentence): chunks are cut at ``tokens - overlap``, and each one after the first is extended
back over the last whole sentences of the chunk before that fit in ``overlap`` tokens. When the
previous sentence alone is longer, the passage keeps its own start (no overlap) rather than start
mid-sentence.

Each passage keeps where it came from in its metadata: ``doc_id``, ``title``, ``source``,
``start``, ``end`` (and, from a PDF, the ``page`` it starts on).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, cast

from covrag.errors import ConfigError, MissingExtraError
from covrag.ingest.readers import Document
from covrag.ingest.unwrap import Unwrapped
from covrag.text import sentence_starts
from covrag.tokens import TokenCounter, default_counter
from covrag.types import Passage, as_mapping

#: Passage size and overlap, in tokens of the budget's tokenizer (see the module docstring).
DEFAULT_TOKENS = 200
DEFAULT_OVERLAP = 20


@dataclass(frozen=True)
class Chunker:
    """Splits a document into passages of at most ``tokens`` tokens overlapping by ``overlap``.

    Attributes:
        tokens: Most tokens per passage.
        overlap: At most this many tokens of whole sentences shared by consecutive passages of
            a document (0: none).
        counter: Token counter (None: MiniLM WordPiece, the budgets' default).

    Example:
        >>> from covrag.tokens import WhitespaceTokenCounter
        >>> text = "Tea is an old drink. It came to Europe from China in 1610."
        >>> doc = Document("/d/tea.txt", "tea", text, "0" * 64)
        >>> [p.text for p in Chunker(8, 0, WhitespaceTokenCounter()).split(doc, "tea.txt")]
        ['Tea is an old drink.', 'It came to Europe from China in 1610.']
    """

    tokens: int = DEFAULT_TOKENS
    overlap: int = DEFAULT_OVERLAP
    counter: TokenCounter | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.tokens < 8:
            raise ConfigError(f"chunk size must be at least 8 tokens, got {self.tokens}")
        if not 0 <= self.overlap < self.tokens // 2:
            raise ConfigError(
                f"chunk overlap must be >= 0 and under half the chunk size ({self.tokens}), "
                f"got {self.overlap}"
            )

    @property
    def settings(self) -> dict[str, Any]:
        """What decides the passages (an index built with other settings is re-chunked)."""
        counter = self.counter.name if self.counter is not None else "minilm-wordpiece"
        return {
            "chunker": "semchunk",
            # 2: words hyphenated at a line end are joined (1, written as true: they were not)
            "unwrap": 2,
            # 3: a <pre> block or Markdown code block kept as written (Document.verbatim; 2:
            # joined into one line); 2: HTML read from its main content, inline markup as
            # written (covrag.ingest.readers; 1, absent: the whole page, the relaxed profile)
            "reader": 3,
            "tokens": self.tokens,
            "overlap": self.overlap,
            "counter": counter,
        }

    def split(self, document: Document, doc_id: str) -> tuple[Passage, ...]:
        """The passages of ``document``, ids ``{doc_id}#1``, ``{doc_id}#2``, ... in text order.

        The text is unwrapped first (:mod:`covrag.ingest.unwrap`); each passage's ``start`` and
        ``end`` span its content in ``document.text``, and
        ``unwrap(document.text[start:end], keep) == passage.text``, ``keep`` the document's
        :attr:`~covrag.ingest.readers.Document.verbatim` spans shifted by ``start``.
        """
        counter = self.counter if self.counter is not None else default_counter()
        flat = Unwrapped.of(document.text, document.verbatim)
        # Chunks leave room for the overlap, which is whole sentences of the chunk before.
        size = self.tokens - self.overlap
        _, offsets = _semchunker(size, cast(Hashable, counter))(flat.text, offsets=True)
        spans = [_stripped(flat.text, start, end) for start, end in offsets]
        spans = [(start, end) for start, end in spans if start < end]
        if self.overlap:
            spans = _overlapped(flat.text, spans, counter, self.overlap, self.tokens)
        passages: list[Passage] = []
        for start, end in spans:
            first, last = flat.span(start, end)
            meta: dict[str, Any] = {
                "doc_id": doc_id,
                "title": document.title,
                "source": document.source,
                "start": first,
                "end": last,
            }
            page = document.page_at(first)
            if page is not None:
                meta["page"] = page
            number = len(passages) + 1
            text = flat.text[start:end]
            passages.append(Passage(f"{doc_id}#{number}", text, metadata=as_mapping(meta)))
        return tuple(passages)


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without the white space at either end (semchunk keeps some)."""
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    return start + lead, start + len(piece.rstrip())


def _overlapped(
    text: str,
    spans: list[tuple[int, int]],
    counter: TokenCounter,
    overlap: int,
    tokens: int,
) -> list[tuple[int, int]]:
    """Each span but the first moved back to the earliest sentence of the span before it (or
    that span's start) whose sentences up to the span fit in ``overlap`` tokens (and the whole
    in ``tokens``). A span whose previous sentence alone is too long keeps its start: a passage
    starts at a sentence (or where the chunker cut) rather than mid-sentence."""
    starts = sentence_starts(text)
    out = spans[:1]
    for (before, _), (start, end) in zip(spans, spans[1:], strict=False):
        low = bisect.bisect_right(starts, before)
        high = bisect.bisect_left(starts, start)
        best = start
        for candidate in reversed([before, *starts[low:high]]):
            shared, whole = counter.count([text[candidate:start], text[candidate:end]])
            if shared > overlap or whole > tokens:
                break
            best = candidate
        out.append((best, end))
    return out


#: Token counts remembered per chunker (semchunk asks for the same pieces more than once).
_COUNT_CACHE = 1 << 16
#: Longer than any WordPiece token: semchunk counts a long text by a prefix of
#: ``6 * tokens + _TOKEN_CHARS`` characters first, and only a text whose prefix fits is counted
#: whole (a prefix has no more tokens than the text, so a cut is never too long).
_TOKEN_CHARS = 32


@functools.lru_cache(maxsize=8)
def _semchunker(tokens: int, key: Hashable) -> Any:
    """semchunk's chunker for a size and a counter (``key``), made once: it memoizes counts."""
    try:
        from semchunk.semchunk import chunkerify
    except ImportError as exc:
        raise MissingExtraError("semchunk", "docs") from exc
    counter = cast(TokenCounter, key)
    return chunkerify(
        lambda text: counter.count([text])[0],
        tokens,
        max_token_chars=_TOKEN_CHARS,
        cache_maxsize=_COUNT_CACHE,
    )
