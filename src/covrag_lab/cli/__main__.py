"""``python -m covrag_lab.cli``: the same as the ``covrag-lab`` command."""

import sys

from covrag_lab.cli import main

sys.exit(main())
