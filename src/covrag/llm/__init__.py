"""The LLM layer: one protocol (``chat``), an OpenAI-compatible HTTP backend, an embedded
llama.cpp backend, a persistent response cache and JSON-schema structured output.

The backends need the ``llm`` extra (``pip install 'covrag[llm]'``); they are imported lazily.
"""

from covrag.llm.base import (
    LLM,
    ChatParams,
    ChatResult,
    Message,
    Usage,
    assistant,
    system,
    user,
)
from covrag.llm.cache import CachedLLM, ResponseCache
from covrag.llm.factory import BACKENDS, parse_llm
from covrag.llm.structured import Structured, chat_json, extract_json

__all__ = [
    "BACKENDS",
    "LLM",
    "CachedLLM",
    "ChatParams",
    "ChatResult",
    "Message",
    "ResponseCache",
    "Structured",
    "Usage",
    "assistant",
    "chat_json",
    "extract_json",
    "parse_llm",
    "system",
    "user",
]
