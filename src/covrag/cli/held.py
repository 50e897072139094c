"""Each warning of a run once on the screen, and every one in its run file.

``covrag ask`` prints its run's warnings itself ("warning: ..."), and the library logs the same
warnings as they happen (``WARNING covrag...: ...`` on stderr): :func:`held_warnings` holds the
log lines back while the run is under way, and the command adds to its run the held ones it did
not record.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence


class HeldWarnings(logging.Filter):
    """Holds covrag's warning records back from the screen's log handlers while a run is under
    way (:func:`held_warnings`); every other record passes."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and record.name.startswith("covrag"):
            message = record.getMessage()
            if message not in self.messages:
                self.messages.append(message)
            return False
        return True

    def not_in(self, warnings: Sequence[str]) -> list[str]:
        """The held messages that no warning of ``warnings`` already says (a run's warnings
        hold the logged text, or the logged text holds the warning after a prefix such as
        "answer to 8 passages: ")."""
        return [m for m in self.messages if not any(w in m or m in w for w in warnings)]


@contextlib.contextmanager
def held_warnings() -> Iterator[HeldWarnings]:
    """While inside, covrag's ``WARNING`` log records do not reach the root logger's handlers
    (the ``WARNING covrag...: ...`` lines on stderr); they are held in the yielded filter. A
    command that shows its run's warnings itself uses it so that each warning reaches the screen
    once, and adds the held ones its run did not record (:meth:`HeldWarnings.not_in`) to the
    run, so none is lost from the screen or the file."""
    held = HeldWarnings()
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(held)
    try:
        yield held
    finally:
        for handler in handlers:
            handler.removeFilter(held)
