"""``manifest.json``: what a saved index (``covrag index``, ``Retriever.save``) holds::

    {"format": "covrag-index", "version": 1, "kind": "bm25", "count": N,
     "model": "all-MiniLM-L6-v2" | null, "params": {...}, "covrag": "0.1.0"}

``kind`` names the class that loads the folder (``bm25``, ``dense``, ``hybrid``), ``count`` the
passages in ``passages.jsonl``, ``model`` the embedding model of a dense index and ``params`` the
retriever's constructor parameters; ``covrag`` is the version that wrote it. The other files of
the folder are described in :mod:`covrag.retrieve.store`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

INDEX_FORMAT = "covrag-index"
INDEX_VERSION = 1


class IndexManifest(BaseModel):
    """The whole ``manifest.json`` (checked in field order: format and version first)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    format: str = Field(description="always covrag-index")
    version: int = Field(description="the layout's version")
    kind: str = Field(strict=True, description="which retriever class loads the folder")
    count: int = Field(description="passages in passages.jsonl")
    model: str | None = Field(default=None, description="the embedding model of a dense index")
    params: dict[str, Any] = Field(default={}, description="the retriever's parameters")
    covrag: str = Field(default="", description="the covrag version that wrote it")

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, value: Any) -> Any:
        if value != INDEX_FORMAT:
            raise ValueError("not a covrag index manifest")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if isinstance(value, bool) or value != INDEX_VERSION:
            raise ValueError(
                f"index format version {value!r}; this covrag reads version {INDEX_VERSION}: "
                "rebuild the index"
            )
        return value

    @field_validator("count", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("must be a non-negative integer")
        return value

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> Any:
        return value if isinstance(value, str) else None  # an older writer's null or other

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, value: Any) -> Any:
        return {} if value is None else value
