"""What the command modules share: the consoles, progress bars, options and their parsing, and
running a parsed command (:func:`run_command`). ``covrag``'s commands and ``covrag-lab``'s
(:mod:`covrag_lab.cli`) both build on it.

Options that set a field of a config dataclass are generated from the field
(:func:`add_config_options`): its default, type, choices and ``metadata["help"]`` are written once,
in the dataclass, and read back with :func:`config_from_args`.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import logging
import os
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from covrag.errors import ConfigError, CovragError, DataError
from covrag.schema.runfile import parse_budget as budget_from_text
from covrag.types import Budget, Topic

if typing.TYPE_CHECKING:
    from covrag.llm.base import LLM
    from covrag.pipeline.policy import ContextPolicy
    from covrag.plan.sources import AspectOptions, AspectSource

C = TypeVar("C")

#: ``sub.add_parser(...)`` of the top-level parser, handed to each command module's ``register``.
if typing.TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

# Wide enough for bench tables when output goes to a file or a pipe.
# emoji=False: dataset specs such as argkp2021:train:questions must not print as emoji codes.
console = Console(width=None if sys.stdout.isatty() else 160, emoji=False)
# Errors are one line each (terminals wrap them; pipes and logs keep them whole).
err_console = Console(stderr=True, soft_wrap=True, emoji=False)

DEFAULT_LLM = "local"
#: The seed of ``--exclude-aspects random:N`` (fixed: ``select`` and ``eval`` must draw alike).
EXCLUDE_SEED = 0


# --- options generated from config dataclasses ---------------------------------------------------


def _option(kind: Any) -> dict[str, Any]:
    """The argparse ``type``, ``choices`` and ``nargs`` of a field type: ``X | None`` reads as
    ``X``, a ``Literal`` gives the choices, ``tuple[X, ...]`` takes one or more values."""
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"no CLI option for the union {kind}")
        return _option(args[0])
    if origin is Literal:
        values = typing.get_args(kind)
        return {"type": type(values[0]), "choices": values}
    if origin is tuple:
        return {**_option(typing.get_args(kind)[0]), "nargs": "+"}
    return {"type": kind}


def add_config_options(
    parser: argparse.ArgumentParser,
    config: type[Any],
    names: Sequence[str],
    *,
    flags: Mapping[str, str] | None = None,
) -> None:
    """Add one ``--field-name`` option per named field of the dataclass ``config``.

    The default, the type, the choices (a ``Literal`` type or ``metadata["choices"]``) and the
    help (``metadata["help"]``) come from the field; a ``tuple[X, ...]`` field takes one or more
    values. A bool field that defaults to False becomes
    a switch ``--name``; one that defaults to True becomes ``--no-name``. ``flags`` renames an
    option (field -> flag).
    """
    hints = typing.get_type_hints(config)
    fields = {f.name: f for f in dataclasses.fields(config)}
    for name in names:
        spec = fields[name]
        help_text = str(spec.metadata.get("help", ""))
        flag = (flags or {}).get(name, "--" + name.replace("_", "-"))
        if hints[name] is bool:
            if spec.default is True and name not in (flags or {}):
                flag = "--no-" + name.replace("_", "-")
            action = "store_false" if spec.default is True else "store_true"
            parser.add_argument(flag, dest=name, action=action, help=help_text)
            continue
        option = _option(hints[name])
        if "choices" in spec.metadata:
            option["choices"] = spec.metadata["choices"]
        default = spec.default if spec.default is not dataclasses.MISSING else None
        shown = f"{help_text} (default: %(default)s)" if default is not None else help_text
        parser.add_argument(flag, dest=name, default=default, help=shown, **option)


def config_from_args(
    config: type[C], args: argparse.Namespace, names: Sequence[str], **values: Any
) -> C:
    """An instance of the dataclass ``config`` from the options of ``names`` (and ``values``)."""
    return config(**{name: getattr(args, name) for name in names}, **values)


def field_default(config: type[Any], name: str) -> Any:
    """The default of one field of a dataclass (for options that are not generated)."""
    (spec,) = [f for f in dataclasses.fields(config) if f.name == name]
    return spec.default


# --- progress ------------------------------------------------------------------------------------


def progress_bar(console: Console) -> Progress:
    """The CLI's progress bar: transient, and hidden when output is not a terminal."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


# --- budgets -------------------------------------------------------------------------------------


def add_budget_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=int, default=None, help="at most K passages")
    parser.add_argument(
        "--budget-tokens", type=int, default=None, help="at most T tokens (MiniLM WordPiece)"
    )


#: The largest rank cutoff or passage budget (``k``) the CLI accepts: far above any pool, far
#: below what would need an absurd allocation (a measure at k holds topics x k numbers).
MAX_PASSAGES = 10_000
#: The largest token budget (``tokens=``, ``RVC@T``) the CLI accepts.
MAX_TOKENS = 100_000_000


def _check_size(what: str, value: int | None, cap: int) -> None:
    if value is not None and value > cap:
        raise ConfigError(f"{what} {value} is too large (at most {cap:,})")


def budget_from_args(k: int | None, tokens: int | None, default_k: int | None = 10) -> Budget:
    if k is None and tokens is None:
        return Budget(max_passages=default_k)
    _check_size("--k", k, MAX_PASSAGES)
    _check_size("--budget-tokens", tokens, MAX_TOKENS)
    try:
        return Budget(max_passages=k, max_tokens=tokens)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def parse_budget(spec: str) -> Budget:
    """``k=10``, ``tokens=1024``, ``k=10,tokens=1024`` or ``all`` (the run file's reader); a
    key given twice, or a size above :data:`MAX_PASSAGES` / :data:`MAX_TOKENS`, is refused."""
    keys = [part.partition("=")[0].strip() for part in spec.split(",")]
    for key in {k for k in keys if keys.count(k) > 1}:
        raise ConfigError(f"budget {spec!r}: {key} is given twice")
    try:
        if not spec.strip():
            raise ValueError(f"budget {spec!r}: use k=N, tokens=N or k=N,tokens=N")
        budget = budget_from_text(spec)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_size(f"budget {spec!r}: k", budget.max_passages, MAX_PASSAGES)
    _check_size(f"budget {spec!r}: tokens", budget.max_tokens, MAX_TOKENS)
    return budget


def check_measures(specs: Iterable[str]) -> None:
    """Refuse measures whose cutoff or token budget is above :data:`MAX_PASSAGES` or
    :data:`MAX_TOKENS` (before any work: a cutoff sizes the arrays the measures fill)."""
    from covrag.evaluation.measures import parse_measures

    for measure in parse_measures(list(specs)):
        at = getattr(measure, measure.at, None)
        if isinstance(at, int):
            tokens = measure.at == "budget"
            cap = MAX_TOKENS if tokens else MAX_PASSAGES
            _check_size(f"measure {measure!r}: {measure.at}", at, cap)


# --- datasets and exclusions ---------------------------------------------------------------------


def add_exclude_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exclude-aspects",
        nargs="+",
        default=[],
        metavar="SPEC",
        help="gold aspects the request asks to leave out: aspect ids, or random:N (N per topic, "
        "drawn with seed 0); selectors avoid them by their exclude= mode, measures "
        "count no gain for them, and Excl@k reports how much of a ranking supports them",
    )


def load_topics(args: argparse.Namespace) -> list[Topic]:
    """The dataset ``--dataset`` names, with ``--exclude-aspects`` applied (never empty)."""
    from covrag.data import load_dataset
    from covrag.data.exclusion import exclude_aspects

    topics = load_dataset(args.dataset)
    if not topics:
        raise DataError("no topics: the dataset is empty", path=str(args.dataset))
    return exclude_aspects(topics, args.exclude_aspects, EXCLUDE_SEED)


# --- LLMs and aspect sources ---------------------------------------------------------------------


def add_llm_args(parser: argparse.ArgumentParser, cache_switch: bool = False) -> None:
    """``--llm``, shared by every command that calls an LLM, and with ``cache_switch`` the
    ``--no-llm-cache`` switch (``ask`` and ``plan``, whose timings are measured without the
    cache: docs/BENCHMARKS.md). Batch and research commands always read and fill the response
    cache, which makes them resumable; ``covrag cache clear`` or a fresh ``$COVRAG_CACHE_DIR``
    asks again."""
    parser.add_argument(
        "--llm",
        default=DEFAULT_LLM,
        help="LLM spec: local (embedded Qwen2.5-Coder-1.5B, offline), "
        "\"local(model='smollm2')\", \"local(model='/path/model.gguf')\", "
        "\"openai(model='gpt-4o-mini')\", \"openai(model='m', base_url='http://host:8000/v1')\"",
    )
    if cache_switch:
        parser.add_argument(
            "--no-llm-cache",
            action="store_true",
            help="call the LLM even for requests answered before (default: the response cache)",
        )


def build_llm(spec: str, no_cache: bool = False) -> LLM:
    from covrag.llm import parse_llm

    return parse_llm(spec, cache=not no_cache)


def add_prepare_args(
    parser: argparse.ArgumentParser, multiple: bool = False, exclusion: bool = True
) -> None:
    """``--aspects`` and its sources' options, ``--exclude-aspects`` (with ``exclusion``) and
    ``--relevance``."""
    from covrag.pipeline.config import PrepareConfig
    from covrag.plan.sources import ASPECT_SOURCES, AspectOptions

    parser.add_argument(
        "--aspects",
        choices=ASPECT_SOURCES.names(),
        nargs="+" if multiple else None,
        default=["gold"] if multiple else "gold",
        help="the sub-questions coverage is estimated against: gold = the dataset's aspect "
        "texts (DES's human-nugget setting); llm = sub-questions the --llm writes for each "
        "query; pool = representative passages of each pool (facility location); +answers = "
        "each question also worded as 3 statements an answer would make, written by the "
        "--llm; measures always use the gold labels"
        + ("; several are compared side by side" if multiple else ""),
    )
    add_llm_args(parser)
    parser.add_argument(
        "--subquestions",
        type=int,
        default=field_default(AspectOptions, "subquestions"),
        help="sub-questions per query for --aspects llm",
    )
    if exclusion:
        add_exclude_args(parser)
    add_config_options(parser, PrepareConfig, ["relevance"])


def aspect_sources(args: argparse.Namespace, names: Iterable[str]) -> dict[str, AspectSource]:
    """The aspect sources ``names`` asks for (registered in ``covrag.plan.ASPECT_SOURCES``),
    built from the command's options; the LLM is built once, only when a source needs it."""
    from covrag.plan.sources import build_aspect_sources

    return build_aspect_sources(names, aspect_options(args), lambda: build_llm(args.llm))


def aspect_options(args: argparse.Namespace) -> AspectOptions:
    """What the aspect sources are built from: ``--subquestions``."""
    from covrag.plan.sources import AspectOptions

    return AspectOptions(subquestions=args.subquestions)


def needs_llm(policy: ContextPolicy) -> bool:
    """Whether the policy's aspect source writes with the ``--llm``."""
    from covrag.plan.sources import source_class

    return policy.aspects is not None and source_class(policy.aspects).needs_llm(
        policy.aspect_options
    )


def write_files(files: Mapping[Path, str]) -> None:
    """Write every file once all are rendered, all or none (:func:`covrag.files.write_all`)."""
    from covrag.files import write_all

    write_all(files)


# --- inputs and outputs --------------------------------------------------------------------------


def input_path(spec: str | os.PathLike[str] | None) -> Path | None:
    """The file a dataset or corpus option reads (a path, or a bundled ``name:split``), if any."""
    from covrag.data import resolve_dataset

    if spec is None:
        return None
    if os.path.exists(spec):
        return Path(spec)
    try:
        return resolve_dataset(spec)
    except CovragError:
        return None


def check_outputs(
    inputs: Iterable[tuple[str, str | os.PathLike[str] | None]],
    outputs: Iterable[tuple[str, str | os.PathLike[str] | None]],
    folders: Iterable[tuple[str, str | os.PathLike[str] | None]] = (),
) -> None:
    """Refuse, before any work, an output that is an input (dataset and corpus specs resolved
    to their files; see :func:`covrag.files.check_outputs`)."""
    from covrag.files import check_outputs as check

    resolved = [(name, input_path(p) if isinstance(p, str) else p) for name, p in inputs]
    check(resolved, outputs, folders)


Command = Callable[[argparse.Namespace, Console], int]
"""What a sub-command's ``run_command`` is: parsed options and the console -> the exit status."""


def os_message(exc: OSError) -> str:
    """One line for an operating-system error: the path and what went wrong with it."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def run_command(args: argparse.Namespace) -> int:
    """Run the command ``args`` were parsed for (its ``run_command``), logging at ``--verbose``'s
    level: a covrag error or an operating-system error is one line on stderr and status 2, an
    interrupt status 130."""
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    command: Command = args.run_command
    try:
        return command(args, console)
    except CovragError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        return 2
    except FileNotFoundError as exc:
        missing = escape(str(exc.filename))
        err_console.print(f"[bold red]error:[/] no such file: {missing}", highlight=False)
        return 2
    except OSError as exc:
        err_console.print(f"[bold red]error:[/] {escape(os_message(exc))}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
