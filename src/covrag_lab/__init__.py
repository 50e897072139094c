"""covrag-lab: the research around covrag, kept out of the product.

Training (LMVU, the coverage cross-encoder, CoveR, same-point encoders, question forms, planners:
:mod:`covrag_lab.train`), cross-validation (:mod:`covrag_lab.cv`) and the ``covrag-lab`` commands
that run them (:mod:`covrag_lab.cli`). It builds on covrag's public names only: ``covrag`` never
imports ``covrag_lab``, and ``covrag_lab`` imports no name of covrag that starts with an
underscore (``tests/test_architecture_lab.py``). Install it with ``pip install 'covrag[lab]'``.
"""

__all__: list[str] = []
