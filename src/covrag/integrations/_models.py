"""The options of :class:`~covrag.integrations.CoverageChoice` as pydantic fields, for the
adapters that are pydantic models (LangChain's compressor, LlamaIndex's postprocessor).

The names, defaults and help come from :data:`~covrag.integrations._engine.OPTIONS`; the types
are what pydantic validates (a list where the choice takes any sequence).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from covrag.coverage.base import CoverageEstimator
from covrag.integrations._engine import (
    DEFAULTS,
    CoverageChoice,
    LabelFree,
    Relevance,
    choice_of,
    option_help,
)
from covrag.selectors.base import Selector
from covrag.types import Aspect


def _option(name: str) -> Any:
    return Field(default=DEFAULTS[name], description=option_help(name))


class CoverageOptions(BaseModel):
    """The options as fields, and the choice they describe (built once, after validation)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    selector: str | Selector | None = _option("selector")
    coverage: str | CoverageEstimator = _option("coverage")
    aspects: list[str | Aspect] | Callable[[str], Sequence[str | Aspect]] | LabelFree | None = (
        _option("aspects")
    )
    k: int | None = _option("k")
    max_tokens: int | None = _option("max_tokens")
    relevance: Relevance = _option("relevance")

    _choice: CoverageChoice = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._choice = choice_of(self)
