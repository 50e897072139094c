"""The top-level parser of ``covrag`` and of ``covrag-lab`` (:func:`command_parser`): one
builder, so the two commands take ``--version`` and ``-v`` and list their commands alike."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from covrag.cli.common import Subparsers
from covrag.version import __version__

__all__ = ["command_parser"]


class _OrderedCommands(argparse.ArgumentParser):
    """A top-level parser whose help lists its commands under "commands", in the order given
    (not the order the modules register them)."""

    def __init__(self, *args: Any, commands: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = tuple(commands)

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        sub = next(a for a in self._actions if isinstance(a, argparse._SubParsersAction))
        entries = {entry.dest: entry for entry in sub._choices_actions}
        formatter.start_section("commands")
        formatter.add_arguments([entries[name] for name in self.commands])
        formatter.end_section()
        formatter.start_section("options")
        formatter.add_arguments([a for a in self._actions if a.option_strings])
        formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def command_parser(
    prog: str,
    description: str,
    modules: Iterable[Any],
    *,
    commands: Sequence[str] | None = None,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """The top-level parser of ``covrag`` and of ``covrag-lab``: ``--version``, ``-v`` and one
    sub-command per command each of ``modules`` registers (``module.register(sub)``). With
    ``commands``, the help lists the commands in that order under "commands"; else as argparse
    does, in the order they are registered."""
    parser = (
        argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
        if commands is None
        else _OrderedCommands(prog=prog, description=description, epilog=epilog, commands=commands)
    )
    parser.add_argument("--version", action="version", version=f"{prog} {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub: Subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="command", parser_class=argparse.ArgumentParser
    )
    for module in modules:
        module.register(sub)
    return parser
