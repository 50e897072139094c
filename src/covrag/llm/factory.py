"""Build an LLM from a specification string, as the CLI and configs name it.

``local`` (the embedded default model), ``local(model='smollm2')``, ``local(model='/path/x.gguf')``,
``openai(model='gpt-4o-mini')``, ``openai(model='qwen', base_url='http://127.0.0.1:8000/v1')``,
``transformers(model='out/planner/dpo')`` (a planner trained by ``covrag-lab train planner``).
Every LLM built here answers repeated requests from the persistent response cache unless
``cache=False``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from covrag.llm.base import LLM, ChatParams
from covrag.llm.cache import CachedLLM, ResponseCache
from covrag.llm.local import LocalChat
from covrag.llm.openai_backend import OpenAIChat
from covrag.llm.transformers_backend import TransformersChat
from covrag.registry import Registry

BACKENDS: Registry[LLM] = Registry("LLM backend", key="backend")
BACKENDS.register(LocalChat)
BACKENDS.register(OpenAIChat)
BACKENDS.register(TransformersChat)


def parse_llm(
    spec: str,
    *,
    cache: bool | str | os.PathLike[str] = True,
    params: ChatParams | None = None,
) -> LLM:
    """The LLM a specification names, behind the response cache.

    Args:
        spec: ``local``, ``local(model='smollm2')``, ``openai(model='...', base_url='...')``.
        cache: True for the default cache file, a path for another, False for none.
        params: Default sampling parameters (temperature 0, seed 0 when None).
    """
    overrides: dict[str, Any] = {"params": params} if params is not None else {}
    llm = BACKENDS.parse(spec, **overrides)
    if cache is False:
        return llm
    path = None if cache is True else Path(cache)
    return CachedLLM(llm, ResponseCache(path))
