"""``covrag <command>``: select, eval, bench, demo, datasets, index, search."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from covrag import __version__
from covrag.commands_ask import add_ask_parsers
from covrag.commands_plan import add_aspect_args, add_plan_parser
from covrag.commands_report import add_report_parser
from covrag.commands_serve import add_serve_parser
from covrag.errors import CovragError

# Wide enough for bench tables when output goes to a file or a pipe.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)


def _budget_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=int, default=None, help="at most K passages")
    parser.add_argument(
        "--budget-tokens", type=int, default=None, help="at most T tokens (MiniLM WordPiece)"
    )


def _exclude_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exclude-aspects",
        nargs="+",
        default=[],
        metavar="SPEC",
        help="gold aspects the request asks to leave out: aspect ids, or random:N (N per topic, "
        "drawn with --exclude-seed); selectors avoid them by their exclude= mode, measures "
        "count no gain for them, and Excl@k reports how much of a ranking supports them",
    )
    parser.add_argument(
        "--exclude-seed", type=int, default=0, help="seed of --exclude-aspects random:N"
    )


def _prepare_args(parser: argparse.ArgumentParser, multiple: bool = False) -> None:
    parser.add_argument(
        "--aspects",
        choices=["gold", "llm", "pool"],
        nargs="+" if multiple else None,
        default=["gold"] if multiple else "gold",
        help="the sub-questions coverage is estimated against: gold = the dataset's aspect "
        "texts (DES's human-nugget setting); llm = sub-questions the --llm writes for each "
        "query; pool = representative passages of each pool (facility location); measures "
        "always use the gold labels" + ("; several are compared side by side" if multiple else ""),
    )
    add_aspect_args(parser)
    _exclude_args(parser)
    parser.add_argument(
        "--relevance",
        choices=["dense", "score", "order"],
        default="dense",
        help="relevance signal: dense = MiniLM cosine to the query (default), score = the "
        "passages' own scores, order = pool order",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="covrag",
        description="Build RAG context that covers the whole question, and measure it.",
    )
    parser.add_argument("--version", action="version", version=f"covrag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")

    p = sub.add_parser("select", help="select passages per topic and write a TREC run")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--selector", required=True, help="e.g. greedy-coverage, 'mmr(lam=0.7)'")
    p.add_argument("--coverage", default=None, help="gold, embedding, 'embedding(threshold=.6)'")
    _budget_args(p)
    _prepare_args(p)
    p.add_argument("--out", required=True, type=Path, help="TREC run to write")
    p.add_argument("--trace", type=Path, default=None, help="also write each selection as JSONL")
    p.add_argument(
        "--run-json",
        type=Path,
        default=None,
        help="also write the run file `covrag report` reads: per topic the aspects, passages, "
        "coverage matrix, selection and trace",
    )

    p = sub.add_parser("eval", help="score a TREC run against a dataset's labels")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--run", required=True, type=Path, help="TREC run file")
    p.add_argument(
        "--measures",
        nargs="+",
        default=["alpha-nDCG@10", "StRecall@10", "P@10", "nDCG@10"],
        help="measure specs, e.g. alpha-nDCG@10 'alpha-nDCG(alpha=0.7)@20' RVC@1024",
    )
    _exclude_args(p)
    p.add_argument("--per-query", action="store_true", help="show per-query values")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p = sub.add_parser("bench", help="compare selectors and coverage sources on a dataset")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--selectors", nargs="+", required=True, help="selector specs")
    p.add_argument("--coverage", nargs="+", default=["gold"], help="coverage estimator specs")
    p.add_argument(
        "--budgets",
        nargs="+",
        default=["k=10"],
        help="budgets as k=10, tokens=1024 or k=10,tokens=1024",
    )
    p.add_argument("--measures", nargs="+", default=None, help="measure specs (default by budget)")
    p.add_argument(
        "--baseline", default=None, help="selector spec to test against (default: first)"
    )
    _prepare_args(p, multiple=True)
    p.add_argument("--no-exact", action="store_true", help="skip the exact optimum and headroom")
    p.add_argument("--seed", type=int, default=0, help="seed for bootstrap and permutation tests")
    p.add_argument("--out", type=Path, default=None, help="folder for runs and summary.json")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")

    p = sub.add_parser("demo", help="the newcomer's tour: a bench on ArgKP dev")
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="folder for the outputs")

    p = sub.add_parser("fit", help="fit a learned selector")
    fit = p.add_subparsers(dest="what", required=True, metavar="what")
    p = fit.add_parser("lmvu", help="fit LMVU's linear scorer on labelled datasets")
    p.add_argument("--dataset", nargs="+", required=True, help="bundled name:split or JSONL paths")
    p.add_argument("--out", required=True, type=Path, help="model JSON to write")
    p.add_argument(
        "--budgets",
        nargs="+",
        type=int,
        default=[512, 1024, 2048],
        help="token budgets to generate training states under",
    )
    p.add_argument(
        "--features",
        choices=["full", "m0", "no-atomic", "static"],
        default="full",
        help="feature set (m0 and no-atomic are the paper's controls)",
    )
    p.add_argument(
        "--shuffle-state",
        action="store_true",
        help="control: permute the 14 state features within each state",
    )
    p.add_argument("--l2", type=float, default=1.0, help="L2 regularisation")
    p.add_argument(
        "--dataset-weight",
        nargs="+",
        default=[],
        metavar="NAME=W",
        help="weigh a dataset's states by W (others weigh 1), e.g. argkp2021:train=3",
    )
    p.add_argument(
        "--states-cache",
        type=Path,
        default=None,
        help="folder to keep each dataset's training states in (rebuilt if settings differ)",
    )
    p.add_argument("--seed", type=int, default=0)

    p = sub.add_parser("train", help="train a model")
    train = p.add_subparsers(dest="what", required=True, metavar="what")
    p = train.add_parser("coverage", help="fine-tune a coverage cross-encoder from MiniLM")
    p.add_argument(
        "--datasets",
        nargs="+",
        default=["argkp2021:train", "perspectrum:train", "perspectrum-evidence:train"],
        help="labelled training data (bundled names or JSONL paths)",
    )
    p.add_argument(
        "--dev",
        nargs="+",
        default=["argkp2021:dev", "perspectrum:dev", "perspectrum-evidence:dev"],
        help="labelled dev data for ROC-AUC and the threshold",
    )
    p.add_argument("--out", required=True, type=Path, help="model folder to write")
    p.add_argument(
        "--base-model",
        default=None,
        help="model to start from (default: the packaged MiniLM encoder)",
    )
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-length", type=int, default=160)
    p.add_argument(
        "--neg-ratio",
        type=float,
        default=3.0,
        help="at most this many negatives per positive per topic (0 = all)",
    )
    p.add_argument(
        "--limit-topics",
        type=int,
        default=None,
        help="use only the first N topics of each dataset (quick runs)",
    )
    p.add_argument(
        "--onnx-out",
        type=Path,
        default=None,
        help="also export an int8 ONNX copy (what covrag ships) to this folder",
    )
    p.add_argument("--seed", type=int, default=0)

    p = sub.add_parser("qrels", help="export diversity qrels (gold labels or a coverage matrix)")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--coverage", default="gold", help="gold (default) or an estimator spec")
    p.add_argument("--out", required=True, type=Path, help="qrels file to write")

    p = sub.add_parser("index", help="build and save a retrieval index over a passage corpus")
    p.add_argument(
        "--corpus",
        default="bundled",
        help="passage JSONL path, bundled name[:split], coverage JSONL path, or 'bundled' "
        "(default: the pools of all bundled datasets)",
    )
    p.add_argument("--kind", choices=["bm25", "dense", "hybrid"], default="bm25")
    p.add_argument("--out", required=True, type=Path, help="index folder to write")

    p = sub.add_parser("search", help="search a saved index")
    p.add_argument("--index", required=True, type=Path, help="index folder (covrag index)")
    p.add_argument("query", help="the query text")
    p.add_argument("--k", type=int, default=10, help="number of results")

    sub.add_parser("datasets", help="list the bundled datasets")
    add_serve_parser(sub)
    add_report_parser(sub)
    add_plan_parser(sub)
    add_ask_parsers(sub)
    return parser


def cmd_datasets(_: argparse.Namespace) -> int:
    from covrag.data import BUNDLED, load_dataset

    table = Table(title="Bundled datasets (test splits withheld)")
    for column in ("name", "topics", "passages", "aspects", "licence"):
        table.add_column(column)
    for dataset in BUNDLED.values():
        for split in dataset.splits:
            topics = load_dataset(f"{dataset.name}:{split}")
            table.add_row(
                f"{dataset.name}:{split}",
                str(len(topics)),
                str(sum(len(t.passages) for t in topics)),
                str(sum(len(t.aspects) for t in topics)),
                dataset.licence.split(";")[0],
            )
    console.print(table)
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    from covrag.commands import run_select

    return run_select(args, console)


def cmd_eval(args: argparse.Namespace) -> int:
    from covrag.commands import run_eval

    return run_eval(args, console)


def cmd_bench(args: argparse.Namespace) -> int:
    from covrag.commands import run_bench_command

    return run_bench_command(args, console)


def cmd_demo(args: argparse.Namespace) -> int:
    from covrag.commands import run_demo

    return run_demo(args, console)


def cmd_fit(args: argparse.Namespace) -> int:
    from covrag.commands_more import run_fit_lmvu

    return run_fit_lmvu(args, console)


def cmd_train(args: argparse.Namespace) -> int:
    from covrag.commands_more import run_train_coverage

    return run_train_coverage(args, console)


def cmd_qrels(args: argparse.Namespace) -> int:
    from covrag.commands_more import run_qrels

    return run_qrels(args, console)


def cmd_index(args: argparse.Namespace) -> int:
    from covrag.commands_retrieve import run_index

    return run_index(args, console)


def cmd_search(args: argparse.Namespace) -> int:
    from covrag.commands_retrieve import run_search

    return run_search(args, console)


def cmd_serve(args: argparse.Namespace) -> int:
    from covrag.commands_serve import run_serve

    return run_serve(args, console)


def cmd_report(args: argparse.Namespace) -> int:
    from covrag.commands_report import run_report

    return run_report(args, console)


def cmd_plan(args: argparse.Namespace) -> int:
    from covrag.commands_plan import run_plan

    return run_plan(args, console)


def cmd_ask(args: argparse.Namespace) -> int:
    from covrag.commands_ask import run_ask

    return run_ask(args, console)


def cmd_eval_answers(args: argparse.Namespace) -> int:
    from covrag.commands_ask import run_eval_answers

    return run_eval_answers(args, console)


COMMANDS = {
    "fit": cmd_fit,
    "qrels": cmd_qrels,
    "train": cmd_train,
    "datasets": cmd_datasets,
    "select": cmd_select,
    "eval": cmd_eval,
    "bench": cmd_bench,
    "demo": cmd_demo,
    "index": cmd_index,
    "search": cmd_search,
    "serve": cmd_serve,
    "report": cmd_report,
    "plan": cmd_plan,
    "ask": cmd_ask,
    "eval-answers": cmd_eval_answers,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return COMMANDS[args.command](args)
    except CovragError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        return 2
    except FileNotFoundError as exc:
        err_console.print(f"[bold red]error:[/] no such file: {exc.filename}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


def dump_json(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
