"""A causal LM run in the process by ``transformers``: the backend of a trained planner.

``covrag-lab train planner`` writes a plain transformers folder (weights, tokenizer with its chat
template); ``transformers(model='out/planner/dpo')`` chats with it. ``model`` may also be a
packaged GGUF name (``smollm2``) or a GGUF file, which transformers dequantises on load (needs the
``gguf`` package), or any model name the ``transformers`` hub cache knows.

Decoding is not constrained to the reply's JSON schema (``supports_schema`` is False): the reply
is parsed and checked by :func:`covrag.llm.structured.chat_json` like any other backend's, and
retried with feedback when it fails. A model trained on the planner's replies writes them as
trained; a base model often does not.

Inside a :func:`covrag.llm.progress.reporting` block the reply's text is reported as it is
generated (transformers' ``TextStreamer``: a piece per word or so), as the embedded llama.cpp
model reports its tokens; so a streamed ``/v1/answer`` gets token events from this backend too.
Under a request's deadline (:mod:`covrag.deadline`, the HTTP service) generation stops at the
first token past it (a stopping criterion looks at the deadline after every token), and the
call raises :class:`~covrag.deadline.DeadlineExceeded`: a request that times out, or whose client
went away (which cancels its deadline), frees the model within a token.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from pathlib import Path
from typing import Any

from covrag.deadline import Deadline, DeadlineExceeded, current_deadline
from covrag.errors import LLMError, MissingExtraError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message
from covrag.llm.models import MODELS, resolve_model
from covrag.llm.progress import Meter, current

logger = logging.getLogger(__name__)


def load_causal_lm(model: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for a transformers folder or name, a packaged GGUF name or a GGUF
    file (dequantised to float32)."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MissingExtraError("transformers", "planner") from exc
    options: dict[str, Any] = {}
    source = model
    if model in MODELS or model.endswith(".gguf"):
        path = resolve_model(model)
        source, options = str(path.parent), {"gguf_file": path.name}
    tokenizer = AutoTokenizer.from_pretrained(source, **options)
    lm: Any = AutoModelForCausalLM.from_pretrained(source, **options)
    if "gguf_file" in options:
        # The GGUF weights were dequantised to float32 on load; only the marker that they came
        # quantised is left, and it makes trainers refuse the model and save_pretrained write a
        # quantisation config that no loader can honour.
        lm.hf_quantizer = None
        lm.is_quantized = False
        if hasattr(lm.config, "quantization_config"):
            del lm.config.quantization_config
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return lm, tokenizer


def weights_fingerprint(folder: Path) -> str:
    """Size and modification time of a model folder's weights: part of the response cache's
    keys (as :attr:`LLM.endpoint`), so a model retrained into the same folder is asked again
    instead of answering with its predecessor's cached replies."""
    files = sorted(p for p in folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    return ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)


class _Loaded:
    def __init__(self, model: str, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        started = time.perf_counter()
        self.model, self.tokenizer = load_causal_lm(model)
        self.model.eval()
        self.lock = threading.Lock()
        logger.info("loaded %s in %.1f s", model, time.perf_counter() - started)


@functools.cache
def _load(model: str, threads: int) -> _Loaded:
    return _Loaded(model, threads)


def _stop_past(deadline: Deadline) -> Any:
    """A ``StoppingCriteriaList`` that ends ``generate`` at the first token past ``deadline``
    (``generate`` calls it after every token)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class PastDeadline(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            stop = deadline.expired()
            return torch.full(
                (input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device
            )

    return StoppingCriteriaList([PastDeadline()])


def _reporter(tokenizer: Any, meter: Meter) -> Any:
    """A ``generate`` streamer that reports each piece of decoded reply text to ``meter``
    (the pieces, joined, are the reply; the prompt is not reported)."""
    from transformers import TextStreamer

    class Pieces(TextStreamer):
        def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
            if text:
                meter.piece(text)

    return Pieces(tokenizer, skip_prompt=True, skip_special_tokens=True)


class TransformersChat(LLM):
    """Chat with a causal LM through ``transformers`` (CPU, float32).

    Args:
        model: A transformers folder (``covrag-lab train planner``'s output), ``smollm2``, a GGUF
            file, or a model name.
        n_threads: CPU threads.
        params: Default sampling parameters.

    Example:
        >>> llm = TransformersChat("out/planner/dpo")  # doctest: +SKIP
    """

    backend = "transformers"
    supports_schema = False

    def __init__(self, model: str, *, n_threads: int = 2, params: ChatParams | None = None) -> None:
        folder = Path(model).expanduser()
        if folder.is_dir():
            model = str(folder.resolve())
            self.endpoint = weights_fingerprint(folder)
        super().__init__(model, params)
        self.n_threads = n_threads

    @property
    def loaded(self) -> _Loaded:
        return _load(self.model, self.n_threads)

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        import torch

        loaded = self.loaded
        tokenizer = loaded.tokenizer
        ids = tokenizer.apply_chat_template(
            [m.to_dict() for m in messages], add_generation_prompt=True, return_tensors="pt"
        )
        ids = ids["input_ids"] if not isinstance(ids, torch.Tensor) else ids
        sample = params.temperature > 0
        options: dict[str, Any] = {"max_new_tokens": params.max_tokens, "do_sample": sample}
        if sample:
            options["temperature"] = params.temperature
        deadline = current_deadline()
        if deadline is not None:
            options["stopping_criteria"] = _stop_past(deadline)
        callback = current()
        meter = Meter(self.model, callback) if callback is not None else None
        if meter is not None:
            options["streamer"] = _reporter(tokenizer, meter)
        started = time.perf_counter()
        with loaded.lock, torch.no_grad():
            torch.manual_seed(params.seed)
            try:
                output = loaded.model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    pad_token_id=tokenizer.pad_token_id,
                    **options,
                )
            except (RuntimeError, ValueError) as exc:
                raise LLMError(f"the transformers model failed: {exc}") from exc
        if deadline is not None and deadline.expired():
            raise DeadlineExceeded(deadline)  # stopped at it, the reply cut short
        new = output[0, ids.shape[1] :]
        ended = bool(len(new)) and int(new[-1]) == tokenizer.eos_token_id
        if meter is not None:
            meter.done(len(new))
        return ChatResult(
            text=tokenizer.decode(new, skip_special_tokens=True),
            model=self.model,
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=len(new),
            finish_reason="length" if len(new) >= params.max_tokens and not ended else "stop",
            seconds=time.perf_counter() - started,
        )
