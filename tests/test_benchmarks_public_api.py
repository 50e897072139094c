"""Benchmarks use covrag's public API only (issue 33), checked on the source with :mod:`ast`.

A benchmark that reaches a private name breaks silently when that name changes, and hides what
the library should offer. Three uses are refused in ``benchmarks/``:

1. ``from covrag.x import _name`` and any import of a private module (``covrag.x._mod``);
2. ``module._name`` where ``module`` was bound by an import of a covrag module;
3. ``anything._name`` where ``_name`` is private in covrag (a function, class, module-level
   name, method or attribute whose name starts with one underscore) and the benchmark does not
   define that name itself (its own helpers may be private).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "covrag"
BENCHMARKS = ROOT / "benchmarks"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree: ast.AST) -> set[str]:
    """Every name a module defines: functions, classes, assignments, attributes of ``self``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def covrag_private_names() -> frozenset[str]:
    """The private names covrag defines anywhere (modules included)."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        names |= {
            n for n in _defined_names(ast.parse(path.read_text(encoding="utf-8"))) if _private(n)
        }
        if _private(path.stem):
            names.add(path.stem)
    return frozenset(names)


def violations(source: str, private: frozenset[str]) -> list[str]:
    """What ``source`` (a benchmark) reaches of covrag's private names, one line each."""
    tree = ast.parse(source)
    own = _defined_names(tree)
    modules: set[str] = set()  # local names bound to covrag modules
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "covrag":
            parts = (node.module or "").split(".")
            if any(_private(p) for p in parts):
                found.append(f"line {node.lineno}: private module {node.module}")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"line {node.lineno}: {node.module}.{alias.name}")
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] != "covrag":
                    continue
                if any(_private(p) for p in parts):
                    found.append(f"line {node.lineno}: private module {alias.name}")
                modules.add(alias.asname or parts[0])
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        on_module = isinstance(node.value, ast.Name) and node.value.id in modules
        if on_module or (node.attr in private and node.attr not in own):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_benchmarks_reach_no_private_covrag_name() -> None:
    private = covrag_private_names()
    scripts = sorted(BENCHMARKS.rglob("*.py"))
    assert scripts
    found = {
        str(path.relative_to(ROOT)): hits
        for path in scripts
        if (hits := violations(path.read_text(encoding="utf-8"), private))
    }
    assert not found, found


def test_the_check_finds_each_kind_of_private_use() -> None:
    private = frozenset({"_scorer", "_lengths", "_cache"})
    cases = {
        "from covrag.coverage.cross_encoder import _scorer": 1,
        "from covrag.data._columns import Columns": 1,
        "import covrag.data._columns": 1,
        "from covrag.coverage import cover\ncover._encoder('m')": 1,
        "import covrag.coverage.cover as c\nc._encoder('m')": 1,
        "from covrag.embed import default_encoder\ndefault_encoder()._cache.clear()": 1,
        "scorer = object()\nscorer._lengths([])": 1,
        # the benchmark's own private helpers, and public names, pass
        "class _Fixed:\n    def __init__(self):\n        self._cache = {}\n_Fixed()._cache": 0,
        "from covrag.coverage import CrossEncoderCoverage\nCrossEncoderCoverage().scorer()": 0,
        "import covrag\ncovrag.__version__": 0,
    }
    for source, expected in cases.items():
        assert len(violations(source, private)) == expected, source


def test_every_covrag_module_a_benchmark_imports_exists() -> None:
    # A moved or renamed module (covrag.select -> covrag.selectors, covrag.train ->
    # covrag_lab.train) must not leave a benchmark importing a path that is gone: the scripts
    # run only when someone measures.
    import importlib.util

    missing = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                top = name.split(".")[0]
                if top in ("covrag", "covrag_lab") and importlib.util.find_spec(name) is None:
                    missing.append(f"{path.name}: {name}")
    assert not missing, missing
