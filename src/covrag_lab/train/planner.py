"""Train a planner: SFT on the best judged outlines, then DPO on better/worse pairs (QPlanner).

Both stages fine-tune LoRA adapters (PEFT) of a small causal LM with TRL's trainers, on the data
of ``covrag-lab train planner-data`` (``sft.jsonl``, ``dpo.jsonl``; the prompt is
:func:`covrag.plan.writer.outline_messages`). After each stage the adapters are merged into the
weights and the model is saved as a plain transformers folder (``OUT/sft``, ``OUT/dpo``), which
``transformers(model='OUT/dpo')`` loads for :class:`~covrag.plan.writer.OutlineWriter`. DPO starts
from the merged SFT model and uses it as its reference. ``OUT/card.json`` records the base model,
the configuration and seeds, the data sizes, the losses, the time and the peak memory of each
stage, and the library versions.

The base may be a packaged GGUF (``smollm2``: SmolLM2-135M-Instruct Q4_1, which transformers
dequantises to float32 with the ``gguf`` package), a GGUF file or a transformers folder.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from covrag.errors import ConfigError, MissingExtraError
from covrag.files import iter_lines
from covrag.llm.transformers_backend import load_causal_lm
from covrag.schema.cards import PlannerTrainCard, write_card

logger = logging.getLogger(__name__)

#: What a step reports: (stage, step, total steps, last loss or None).
Progress = Callable[[str, int, int, float | None], None]


@dataclass(frozen=True)
class PlannerTrainConfig:
    """Hyperparameters of both stages (``dpo_*`` only DPO's); defaults suit a 135M model on CPU."""

    base_model: str = "smollm2"
    # 20: with the 15 examples of a CPU data run, 3 epochs (12 steps) left the reply's form
    # unlearnt; 20 (80 steps) learnt it on the training prompts
    # (docs/experiments/17-trained-planner.md)
    sft_epochs: float = 20.0
    dpo_epochs: float = 2.0
    sft_learning_rate: float = 2e-4
    dpo_learning_rate: float = 5e-5
    batch_size: int = 4
    max_length: int = 512
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    dpo_beta: float = 0.1
    max_steps: int = -1
    seed: int = 0


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (``sft.jsonl`` / ``dpo.jsonl``)."""
    return [json.loads(text) for _, text in iter_lines(path) if text.strip()]


def _imports() -> tuple[Any, Any, Any]:
    try:
        import datasets
        import peft
        import trl
    except ImportError as exc:
        raise MissingExtraError(exc.name or "trl", "lab") from exc
    return datasets, peft, trl


def _lora(peft: Any, config: PlannerTrainConfig) -> Any:
    return peft.LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )


def _common(config: PlannerTrainConfig, folder: Path, epochs: float, lr: float) -> dict[str, Any]:
    return {
        "output_dir": str(folder),
        "num_train_epochs": epochs,
        "learning_rate": lr,
        "per_device_train_batch_size": config.batch_size,
        "max_length": config.max_length,
        "max_steps": config.max_steps,
        "seed": config.seed,
        "data_seed": config.seed,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": [],
        "use_cpu": True,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }


def _callback(stage: str, progress: Progress | None) -> list[Any]:
    if progress is None:
        return []
    from transformers import TrainerCallback

    report: Progress = progress

    class Report(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            loss = (logs or {}).get("loss")
            report(stage, state.global_step, state.max_steps, loss)

    return [Report()]


def _quiet(trainer: Any) -> Any:
    """The trainer without the callback that prints its logs (library code does not print;
    progress goes to the caller's ``progress``)."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


def _train(
    stage: str,
    trainer_class: Any,
    args: Any,
    model: Any,
    tokenizer: Any,
    data: Any,
    out: Path,
    config: PlannerTrainConfig,
    progress: Progress | None,
) -> dict[str, Any]:
    """Train the LoRA adapters of ``model`` with a TRL trainer (``stage`` ``sft`` or ``dpo``:
    ``trainer_class`` under ``args``), quietly, then :func:`_finish` into ``out``."""
    _, peft, _ = _imports()
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
        peft_config=_lora(peft, config),
        callbacks=_callback(stage, progress),
    )
    _quiet(trainer).train()
    return _finish(trainer, tokenizer, out)


def _finish(trainer: Any, tokenizer: Any, folder: Path) -> dict[str, Any]:
    """Merge the adapters, save the plain model, and the stage's log."""
    merged = trainer.model.merge_and_unload()
    merged.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    history = [h for h in trainer.state.log_history if "loss" in h]
    return {
        "steps": trainer.state.global_step,
        "losses": [round(float(h["loss"]), 4) for h in history],
        "train_seconds": round(trainer.state.log_history[-1].get("train_runtime", 0.0), 1),
    }


def train_sft(
    rows: Sequence[dict[str, Any]],
    out: Path,
    config: PlannerTrainConfig,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """LoRA SFT of the base on ``rows`` (prompt, completion); saves the merged model to ``out``."""
    datasets, _, trl = _imports()
    model, tokenizer = load_causal_lm(config.base_model)
    data = datasets.Dataset.from_list(
        [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]
    )
    args = trl.SFTConfig(
        **_common(config, out, config.sft_epochs, config.sft_learning_rate),
        completion_only_loss=True,
    )
    return _train("sft", trl.SFTTrainer, args, model, tokenizer, data, out, config, progress)


def train_dpo(
    rows: Sequence[dict[str, Any]],
    start: Path,
    out: Path,
    config: PlannerTrainConfig,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """LoRA DPO from the model in ``start`` (also the reference); saves the merged model."""
    datasets, _, trl = _imports()
    model, tokenizer = load_causal_lm(str(start))
    keys = ("prompt", "chosen", "rejected")
    data = datasets.Dataset.from_list([{k: r[k] for k in keys} for r in rows])
    args = trl.DPOConfig(
        **_common(config, out, config.dpo_epochs, config.dpo_learning_rate),
        beta=config.dpo_beta,
    )
    return _train("dpo", trl.DPOTrainer, args, model, tokenizer, data, out, config, progress)


def _versions() -> dict[str, str]:
    names = ("torch", "transformers", "trl", "peft", "gguf", "datasets", "accelerate")
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def train_planner(
    data: Path,
    out: Path,
    config: PlannerTrainConfig,
    *,
    skip_dpo: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """SFT then DPO on the planner data in the folder ``data``; writes ``out/sft``,
    ``out/dpo`` and ``out/card.json``, and returns the card."""
    import torch
    import transformers

    sft_rows = read_lines(data / "sft.jsonl")
    dpo_rows = read_lines(data / "dpo.jsonl")
    if not sft_rows:
        raise ConfigError(f"{data / 'sft.jsonl'} has no examples: nothing to train on")
    torch.manual_seed(config.seed)
    transformers.set_seed(config.seed)
    card: dict[str, Any] = {
        "base_model": config.base_model,
        "config": dataclasses.asdict(config),
        "data": str(data),
        "sft_examples": len(sft_rows),
        "dpo_pairs": len(dpo_rows),
        "threads": torch.get_num_threads(),
        "versions": _versions(),
    }
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    card["sft"] = train_sft(sft_rows, out / "sft", config, progress)
    card["sft"]["seconds"] = round(time.perf_counter() - started, 1)
    card["sft"]["peak_rss_mb"] = _peak_rss_mb()
    if dpo_rows and not skip_dpo:
        started = time.perf_counter()
        card["dpo"] = train_dpo(dpo_rows, out / "sft", out / "dpo", config, progress)
        card["dpo"]["seconds"] = round(time.perf_counter() - started, 1)
        card["dpo"]["peak_rss_mb"] = _peak_rss_mb()
    else:
        card["dpo"] = None
    write_card(PlannerTrainCard, card, out / "card.json")
    return card
