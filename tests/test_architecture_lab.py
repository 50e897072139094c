"""The rules between covrag (the product) and covrag_lab (its research), checked on the source
with :mod:`ast`, importing nothing (docs/ARCHITECTURE.md, "The lab"):

1. ``covrag`` never imports ``covrag_lab``: no module of ``src/covrag`` names it in an import,
   at the top, inside a function or under ``if TYPE_CHECKING:``. Training and cross-validation
   are not part of the product, and inference never imports training code.
2. ``covrag_lab`` uses covrag through its public names only, the rule the benchmarks follow
   (``tests/test_benchmarks_public_api.py``): no ``from covrag.x import _name``, no import of a
   private module (``covrag.x._mod``), no ``module._name`` on a covrag module, and no
   ``anything._name`` where ``_name`` is private in covrag and not defined by ``covrag_lab``
   itself. What the lab needs of covrag is therefore something covrag offers and keeps.
3. Within ``covrag_lab``: no import cycle, no function over 80 lines, no module over 400 lines
   (the sizes of ``tests/test_architecture.py``'s rule 9, without its allowance for long
   modules).
"""

from __future__ import annotations

from pathlib import Path

from test_architecture import (
    MAX_MODULE_LINES,
    cycles,
    import_graph,
    importers_of,
    long_functions,
    long_modules,
)
from test_benchmarks_public_api import covrag_private_names, violations

ROOT = Path(__file__).resolve().parents[1] / "src"
PRODUCT = ROOT / "covrag"
LAB = ROOT / "covrag_lab"


def test_the_product_never_imports_the_lab() -> None:
    assert importers_of(PRODUCT, "covrag_lab") == set()


def test_the_product_check_can_fail(tmp_path: Path) -> None:
    root = tmp_path / "covrag"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    from covrag_lab.train import lmvu\n")
    (root / "b.py").write_text("import covrag_lab.cv\n")
    (root / "c.py").write_text("import covrag_labs\nfrom covrag import lab\n")
    assert importers_of(root, "covrag_lab") == {"covrag.a", "covrag.b"}


def test_the_lab_uses_public_covrag_names_only() -> None:
    private = covrag_private_names()
    modules = sorted(LAB.rglob("*.py"))
    assert len(modules) > 20
    found = {
        str(path.relative_to(ROOT)): hits
        for path in modules
        if (hits := violations(path.read_text(encoding="utf-8"), private))
    }
    assert not found, f"make the name public in covrag, or keep it in covrag_lab: {found}"


def test_the_lab_check_can_fail() -> None:
    private = frozenset({"_quiet", "_cache"})
    cases = {
        "from covrag.embed import _quiet": 1,
        "from covrag.cli._common import config_from_args": 1,
        "import covrag.embed as e\ne._quiet()": 1,
        "from covrag.embed import default_encoder\ndefault_encoder()._cache.clear()": 1,
        "from covrag.cli.common import config_from_args": 0,
        "class Own:\n    def __init__(self):\n        self._cache = {}\nOwn()._cache": 0,
    }
    for source, expected in cases.items():
        assert len(violations(source, private)) == expected, source


def test_the_lab_has_no_import_cycle() -> None:
    graph = import_graph(LAB)
    assert (
        "covrag_lab.cli.cv" in graph
        and "covrag_lab.train.lmvu" in graph["covrag_lab.train.lmvu_run"]
    )
    assert cycles(graph) == []


def test_the_lab_has_no_long_function_or_module() -> None:
    functions, modules = long_functions(LAB), long_modules(LAB)
    print(f"covrag_lab: long functions {functions}, modules over {MAX_MODULE_LINES}: {modules}")
    assert functions == [] and modules == []
