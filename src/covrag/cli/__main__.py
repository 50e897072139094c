"""``python -m covrag.cli``: the same as the ``covrag`` command."""

import sys

from covrag.cli import main

sys.exit(main())
