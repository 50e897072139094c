"""Count entry -> stage module pairs through re-exports (issue 48), as the architecture test
does (``tests/test_architecture.py``, :func:`entry_stage_pairs`): a name an entry module (cli,
server, integrations, the top-level package) imports is charged to the module that defines it,
following ``from X import name`` chains; imports inside functions count; records in ``types``
and ``schema`` are foundations, not stages.

    python scripts/count_entry_stage.py [-v]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_architecture import SRC, entry_stage_pairs, name_imports  # noqa: E402


def main() -> None:
    pairs = entry_stage_pairs(name_imports(SRC))
    print(len(pairs), "pairs", sum(len(names) for names in pairs.values()), "names")
    if "-v" in sys.argv:
        for (importer, stage), names in pairs.items():
            print(importer, stage, ", ".join(names))


if __name__ == "__main__":
    main()
