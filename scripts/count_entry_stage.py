"""Count entry -> stage module pairs through re-exports (issue 48): a name an entry module
(cli, server, integrations, the top-level package) imports is charged to the module that
defines it, following ``from X import name`` chains; imports inside functions count; records in
``types`` and ``schema`` are foundations, not stages.

    python scripts/count_entry_stage.py [-v]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "covrag"
STAGES = {"ingest", "plan", "retrieve", "coverage", "selectors", "generate", "evaluation", "report"}


def modname(p):
    rel = p.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


mods = {modname(p): p for p in SRC.rglob("*.py")}
trees = {m: ast.parse(p.read_text()) for m, p in mods.items()}


def resolve_from(mod, node):
    if node.level:
        base = mod.split(".") if mods[mod].name == "__init__.py" else mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module


def imports_of(mod):
    out = {}
    for node in ast.walk(trees[mod]):
        if isinstance(node, ast.ImportFrom):
            src = resolve_from(mod, node)
            if src and src.startswith("covrag"):
                for a in node.names:
                    out[a.asname or a.name] = (src, a.name)
    return out


IMP = {m: imports_of(m) for m in mods}


def defining(mod, name, depth=0):
    if depth > 10:
        return mod
    if f"{mod}.{name}" in mods:
        return f"{mod}.{name}"  # a submodule
    if mod not in mods:
        return mod
    if name in IMP[mod]:
        src, orig = IMP[mod][name]
        return defining(src, orig, depth + 1)
    return mod


def layer(m):
    parts = m.split(".")
    return parts[1] if len(parts) > 1 else ""


pairs = set()
names = set()
for m in mods:
    if layer(m) not in ("cli", "server", "integrations") and m != "covrag":
        continue
    for node in ast.walk(trees[m]):
        if isinstance(node, ast.ImportFrom):
            src = resolve_from(m, node)
            if not src or not src.startswith("covrag"):
                continue
            for a in node.names:
                d = defining(src, a.name)
                if layer(d) in STAGES:
                    pairs.add((m, d))
                    names.add((m, a.name))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("covrag") and layer(a.name) in STAGES:
                    pairs.add((m, a.name))
print(len(pairs), "pairs", len(names), "names")
if "-v" in sys.argv:
    for p in sorted(pairs):
        print(*p)
