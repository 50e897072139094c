from __future__ import annotations

import io
import logging

from covrag.cli.common import console, err_console
from covrag.cli.held import held_warnings


def test_dataset_specs_print_as_written_not_as_emoji() -> None:
    # rich turns ":train:" into an emoji unless told not to; a question-form split would print
    # as "argkp2021🚋questions".
    for target in (console, err_console):
        with target.capture() as captured:
            target.print("argkp2021:train:questions")
        assert captured.get().strip() == "argkp2021:train:questions"


def test_a_run_s_warnings_reach_the_screen_once_and_none_is_lost() -> None:
    # `covrag ask` prints its run's warnings itself ("warning: ..."); the library's log line of
    # the same warning ("WARNING covrag...: ...") is held back while the run is under way
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    generator = logging.getLogger("covrag.generate.generator")
    try:
        with held_warnings() as held:
            generator.warning("answer to %d passages: %s", 8, "3 sentence(s) were dropped")
            logging.getLogger("covrag.plan.planned").warning("ask: a note the run missed")
            logging.getLogger("covrag.plan.planned").error("an error still shows")
            logging.getLogger("another.library").warning("another library's warning shows")
        shown = stream.getvalue()
        assert "were dropped" not in shown and "the run missed" not in shown
        assert "an error still shows" in shown and "another library's warning shows" in shown
        # what the run recorded is not added twice; what it did not record is kept
        assert held.not_in(["3 sentence(s) were dropped"]) == ["ask: a note the run missed"]
        generator.warning("after the run")
        assert "after the run" in stream.getvalue()
        assert held.not_in([]) == held.messages and len(held.messages) == 2
    finally:
        root.removeHandler(handler)
