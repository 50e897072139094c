"""Documents into passages: token-sized, sentence-respecting chunks with character offsets.

Chunking is done by ``semchunk`` (Isaacus): it splits at the most meaningful boundary that
makes a piece fit (blank lines, then line breaks, tabs, sentence ends, clause marks, words), so a
sentence is cut only when it is longer than a whole passage. It is token-aware with any counter:
covrag gives it the budget's own tokenizer (MiniLM WordPiece, :mod:`covrag.tokens`), so a
passage of at most ``tokens`` tokens costs at most that in a budget and fits the coverage
cross-encoder's 256-token pairs with room for the sub-question. It overlaps chunks by a number of
tokens, and it returns each chunk's exact ``(start, end)`` in the text, so
``document.text[start:end] == passage.text`` holds by construction (LangChain's
``add_start_index`` recovers offsets with ``str.find``, which picks the wrong place in a document
that repeats itself; LlamaIndex's ``SentenceSplitter`` joins its pieces again).

Each passage keeps where it came from in its metadata: ``doc_id``, ``title``, ``source``,
``start``, ``end`` (and, from a PDF, the ``page`` it starts on).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, cast

from covrag.errors import ConfigError, MissingExtraError
from covrag.ingest.readers import Document
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
        overlap: Tokens shared by consecutive passages of a document (0: none).
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
            "tokens": self.tokens,
            "overlap": self.overlap,
            "counter": counter,
        }

    def split(self, document: Document, doc_id: str) -> tuple[Passage, ...]:
        """The passages of ``document``, ids ``{doc_id}#1``, ``{doc_id}#2``, ... in text order."""
        counter = self.counter if self.counter is not None else default_counter()
        chunks, offsets = _semchunker(self.tokens, cast(Hashable, counter))(
            document.text, offsets=True, overlap=self.overlap or None
        )
        passages: list[Passage] = []
        for text, (start, end) in zip(chunks, offsets, strict=True):
            if not text.strip():
                continue
            meta: dict[str, Any] = {
                "doc_id": doc_id,
                "title": document.title,
                "source": document.source,
                "start": start,
                "end": end,
            }
            page = document.page_at(start)
            if page is not None:
                meta["page"] = page
            number = len(passages) + 1
            passages.append(Passage(f"{doc_id}#{number}", text, metadata=as_mapping(meta)))
        return tuple(passages)


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
