"""Selectors only select (issue 48): no module of ``covrag.selectors`` imports model code.

Whatever a selector reads that a model computes (coverage, embeddings, sentence pieces,
same-point vectors) is computed in the estimate step, under a request's deadline and the
server's model lock (:mod:`covrag.pipeline.inputs`); ``select`` only computes over arrays. The
check reads the source with :mod:`ast`, as the rest of the architecture test does: imports at
the top of a module, inside functions (lazy imports) and under ``if TYPE_CHECKING:`` alike.
"""

from __future__ import annotations

from pathlib import Path

from test_architecture import SRC, import_graph, importers_of

SELECTORS = "covrag.selectors"
MODEL_MODULES = ("covrag.embed", "covrag.coverage", "covrag.llm", "covrag.packaged")
"""covrag's model code: encoders, coverage estimators (the ONNX bi-encoder among them), LLMs,
and the packaged models' paths."""
MODEL_PACKAGES = (
    "sentence_transformers",
    "onnxruntime",
    "onnx",
    "torch",
    "transformers",
    "tokenizers",
    "llama_cpp",
    "openai",
)
"""Third-party model runtimes."""


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def model_imports(root: Path) -> list[str]:
    """Every ``selector module -> model code`` import under the package folder ``root``."""
    graph = import_graph(root)
    package = root.name
    selectors = package + SELECTORS.removeprefix("covrag")
    found = [
        f"{module} -> {target}"
        for module, targets in graph.items()
        if _inside(module, selectors)
        for target in sorted(targets)
        if any(_inside(target, package + m.removeprefix("covrag")) for m in MODEL_MODULES)
    ]
    for third_party in MODEL_PACKAGES:
        found += [
            f"{module} -> {third_party}"
            for module in sorted(importers_of(root, third_party))
            if _inside(module, selectors)
        ]
    return sorted(found)


def test_selectors_import_no_model_code() -> None:
    assert model_imports(SRC) == [], "compute it in the estimate step (covrag.pipeline.inputs)"


def test_the_check_finds_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    root = tmp_path / "covrag"
    (root / "selectors").mkdir(parents=True)
    (root / "coverage").mkdir()
    for path in ("__init__.py", "embed.py", "coverage/__init__.py", "coverage/onnx_encoder.py"):
        (root / path).write_text("")
    (root / "selectors" / "__init__.py").write_text("")
    (root / "selectors" / "a.py").write_text(
        "def vectors():\n    from covrag.coverage.onnx_encoder import onnx_encoder\n"
        "    import torch\n"
    )
    (root / "selectors" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from covrag.embed import E\n"
        "import numpy\nfrom sentence_transformers import SentenceTransformer\n"
    )
    (root / "pipeline.py").write_text("from covrag.embed import E\nimport torch\n")
    assert model_imports(root) == [
        "covrag.selectors.a -> covrag.coverage.onnx_encoder",
        "covrag.selectors.a -> torch",
        "covrag.selectors.b -> covrag.embed",
        "covrag.selectors.b -> sentence_transformers",
    ]
