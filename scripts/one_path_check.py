"""Each entry point's context selection on bundled dev topics, as one JSON (no timing fields).

Issue 33 routes ``covrag.select``, ``/v1/select``, ``/v1/answer``, the integrations, ``ask``,
``bench`` and ``cv`` through one composition (:func:`covrag.pipeline.context.choose`). The
refactoring changes no selection: run this script on the commit before and after and compare
the output byte for byte::

    git worktree add --detach /tmp/base <base-commit>
    PYTHONPATH=/tmp/base/src python scripts/one_path_check.py > before.json
    PYTHONPATH=src python scripts/one_path_check.py > after.json
    cmp before.json after.json

It reads private internals of the entry points on purpose (the same code on both commits), so it
lives in ``scripts/``, not ``benchmarks/`` (which use the public API only). The server's request
models moved from ``covrag.server.schemas`` to ``covrag.schema`` (issue 33 item 4); both are tried.

The same topics every time: the four ArgKP-2021 dev topics (their first 40 passages for the
entry points, whole for the bench) and the first three Perspectrum dev topics.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import covrag
from covrag.data import load_dataset
from covrag.types import Selection, Topic

POOL = 40


def _selection(s: Selection) -> dict[str, Any]:
    return {
        "query_id": s.query_id,
        "selector": s.selector,
        "budget": str(s.budget),
        "steps": [
            [t.passage_id, round(t.score, 9), list(t.newly_covered), t.tokens] for t in s.steps
        ],
    }


def _topics() -> list[Topic]:
    argkp = load_dataset("argkp2021:dev")
    perspectrum = load_dataset("perspectrum:dev")[:3]
    cut = [dataclasses.replace(t, passages=t.passages[:POOL]) for t in argkp[:2]]
    return [*cut, *perspectrum]


def _scored(topic: Topic) -> Topic:
    """The topic as a retriever gives it: a score on every passage, falling with rank."""
    passages = tuple(
        dataclasses.replace(p, score=1.0 / (i + 1)) for i, p in enumerate(topic.passages)
    )
    return dataclasses.replace(topic, passages=passages)


def check_select(topics: list[Topic]) -> list[Any]:
    out = []
    for t in topics:
        out.append(_selection(covrag.select(t)))
        out.append(_selection(covrag.select(t, "greedy-coverage", k=5, coverage="gold")))
        out.append(_selection(covrag.select(t, "mmr(lam=0.7)", max_tokens=300)))
        out.append(_selection(covrag.select(t, "topk", relevance="order")))
    return out


def check_integrations(topics: list[Topic]) -> list[Any]:
    from covrag.integrations._engine import CoverageChoice

    out = []
    for t in topics:
        texts = [p.text for p in t.passages]
        scores = [1.0 / (i + 1) for i in range(len(texts))]
        for choice, kwargs in [
            (CoverageChoice(), {}),
            (CoverageChoice(), {"aspects": "query"}),
            (CoverageChoice(selector="greedy-coverage", k=4), {"scores": scores}),
        ]:
            picked = choice.choose(texts, t.query, **kwargs)
            out.append(
                {
                    "aspects": [[a.id, a.text] for a in picked.aspects],
                    "picks": [[p.index, round(p.score, 9), p.tokens] for p in picked.picks],
                    "selection": _selection(picked.selection),
                    "run": _strip(picked.run_record()),
                }
            )
    return out


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip(v) for k, v in value.items() if "seconds" not in k and not k.endswith("_s")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def check_server(topics: list[Topic]) -> list[Any]:
    from covrag.deadline import Deadline
    from covrag.server.config import ServerConfig

    try:
        from covrag.schema.http import SelectRequest
    except ImportError:  # before issue 33 item 4
        from covrag.server.schemas import SelectRequest  # type: ignore[no-redef]
    from covrag.server.service import Menus, build_job, run_job

    config = ServerConfig()
    menus = Menus.of(config)
    out = []
    for t in topics:
        passages = [{"id": p.id, "text": p.text} for p in t.passages]
        aspects = [{"id": a.id, "text": a.text} for a in t.aspects]
        for extra in [{}, {"aspects": aspects}, {"aspects": aspects, "k": 3, "selector": "mmr"}]:
            request = SelectRequest.model_validate(
                {"query": t.query, "query_id": t.query_id, "passages": passages, **extra}
            )
            response = run_job(build_job(request, config, menus), Deadline.after(600.0), 600.0)
            out.append(_strip(response.model_dump(mode="json")))
    return out


def check_answer_context(topics: list[Topic]) -> list[Any]:
    from covrag.server.config import ServerConfig
    from covrag.server.llm_routes import _context, _topic

    try:
        from covrag.schema.http_answer import AnswerRequest
    except ImportError:  # before issue 33 item 4
        from covrag.server.schemas import AnswerRequest  # type: ignore[no-redef]

    out = []
    for t in topics:
        for k, floor, gate, floor_question in [(5, 0.5, 0.5, True), (3, 0.2, 0.0, False)]:
            request = AnswerRequest.model_validate(
                {
                    "question": t.query,
                    "passages": [{"id": p.id, "text": p.text} for p in t.passages],
                    "aspects": [{"id": a.id, "text": a.text} for a in t.aspects],
                    "k": k,
                    "floor": floor,
                    "gate": gate,
                    "floor_question": floor_question,
                }
            )
            chosen = _context(request, _topic(request), ServerConfig())
            assert chosen.filters is not None and chosen.coverage is not None
            out.append(
                {
                    "passages": [p.id for p in chosen.passages],
                    "filters": chosen.filters.as_dict(),
                    "probs": [[round(float(x), 9) for x in row] for row in chosen.coverage.probs],
                }
            )
    return out


def _ask_select(topic: Topic, config: Any) -> tuple[Selection, dict[str, Any]]:
    """ask's estimate and select stages on a given pool (the API before or after issue 33)."""
    try:
        from covrag.pipeline import context as steps
    except ImportError:  # before issue 33
        steps = None
    if hasattr(steps, "estimate_context"):  # as pipeline.ask.ask runs its estimate and select
        from covrag.coverage import parse_estimator as parse

        policy = dataclasses.replace(config.policy(), aspects=None)
        estimated = steps.estimate_context(topic, policy, estimator=parse(config.coverage))
        chosen = steps.pick_context(estimated, policy)
        return chosen.selection, chosen.filters.as_dict()
    from covrag.coverage import parse_estimator
    from covrag.pipeline.ask import _estimate_pool, _select
    from covrag.plan import C2Query

    estimator = parse_estimator(config.coverage)
    _, candidates, _ = _estimate_pool(topic, estimator)
    selection, filters = _select(candidates, estimator, config, C2Query.explicit(topic.query))
    return selection, filters.as_dict()


def check_ask(topics: list[Topic]) -> list[Any]:
    from covrag.pipeline import AskConfig

    out = []
    for t in topics:
        topic = dataclasses.replace(_scored(t), query_id="ask", labels={})
        for config in [
            AskConfig(),
            AskConfig(floor_question=False, gate=0.0),
            AskConfig(pool_aspects=3, k=5),
            AskConfig(floor=0.0, gate=0.3, selector="greedy-coverage"),
        ]:
            selection, filters = _ask_select(topic, config)
            out.append({"selection": _selection(selection), "filters": filters})
    return out


def check_bench() -> Any:
    from covrag.pipeline import build_methods, run_bench
    from covrag.plan.sources import AspectOptions, build_aspect_sources
    from covrag.types import Budget

    topics = load_dataset("argkp2021:dev")
    methods = build_methods(
        ["topk", "mmr", "greedy-coverage", "expected-coverage"],
        ["cross-encoder", "gold"],
        ["gold", "pool"],
    )
    sources = build_aspect_sources(["pool"], AspectOptions(), lambda: None)  # type: ignore
    result = run_bench(
        "argkp2021:dev",
        topics,
        methods,
        [Budget(max_passages=5), Budget(max_tokens=300)],
        aspect_sources=sources,
        exact=False,
        n_resamples=200,
    )
    return _strip(result.to_json())


def check_cv() -> Any:
    from covrag.pipeline import build_methods
    from covrag.types import Budget

    try:  # covrag_lab since issue 48; covrag.pipeline.cv before
        from covrag_lab.cv import run_cv
        from covrag_lab.cv_records import CVConfig
    except ImportError:
        from covrag.pipeline.cv import run_cv  # type: ignore[no-redef]
        from covrag.pipeline.cv_records import CVConfig  # type: ignore[no-redef]

    topics = load_dataset("perspectrum:dev")[:6]
    settings = build_methods(["mmr", "greedy-coverage", "expected-coverage"], ["cross-encoder"])
    result = run_cv(
        "perspectrum:dev",
        topics,
        settings,
        Budget(max_passages=5),
        CVConfig(folds=3, n_resamples=200),
    )
    return _strip(result.to_json())


def main() -> None:
    topics = _topics()
    parts = sys.argv[1:] or ["select", "integrations", "server", "answer", "ask", "bench", "cv"]
    runs = {
        "select": lambda: check_select(topics),
        "integrations": lambda: check_integrations(topics),
        "server": lambda: check_server(topics),
        "answer": lambda: check_answer_context(topics),
        "ask": lambda: check_ask(topics),
        "bench": check_bench,
        "cv": check_cv,
    }
    out = {name: runs[name]() for name in parts}
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
