from __future__ import annotations

from covrag.cli.common import console, err_console


def test_dataset_specs_print_as_written_not_as_emoji() -> None:
    # rich turns ":train:" into an emoji unless told not to; a question-form split would print
    # as "argkp2021🚋questions".
    for target in (console, err_console):
        with target.capture() as captured:
            target.print("argkp2021:train:questions")
        assert captured.get().strip() == "argkp2021:train:questions"
