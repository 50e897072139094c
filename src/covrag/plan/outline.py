"""Outlines: a few connected or neighbouring QTree nodes that answer a C2 query (QPlanner).

Candidate outlines are extracted *sequentially*: each prompt lists the outlines already chosen and
asks for a different one, which gives more diverse candidates than sampling. Each candidate is
checked: parsable, the right number of distinct existing nodes, connected through parent / child /
sibling links, and not the same set of nodes as an earlier candidate. The random baseline starts at
a random node and grows by random up / neighbour / down moves until it has enough nodes.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from covrag.errors import ConfigError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.plan.conditioned import C2Query
from covrag.plan.qtree import QTree, QTreeNode
from covrag.schema.llm import Reply, one_of, sized, with_fields

SYSTEM = (
    "You choose an outline for an answer from a tree of sub-queries, so that the answer does "
    "exactly what the request asks. You reply with JSON only."
)


@dataclass(frozen=True)
class Outline:
    """Nodes of a QTree chosen as an answer's outline.

    Attributes:
        node_ids: The chosen node ids, in the order given.
        texts: Their sub-queries.
        source: ``llm`` or ``random``.
        score: The judge's 1-5 score (None until judged).
        rationale: The judge's reason.
    """

    node_ids: tuple[str, ...]
    texts: tuple[str, ...]
    source: str = "llm"
    score: int | None = None
    rationale: str = ""

    def render(self) -> str:
        return "\n".join(f"{i} {t}" for i, t in zip(self.node_ids, self.texts, strict=True))


def connected(tree: QTree, node_ids: Sequence[str]) -> bool:
    """Whether the nodes form one group through parent, child and sibling links."""
    chosen = set(node_ids)
    if not chosen:
        return False
    start = next(iter(chosen))
    seen = {start}
    stack = [start]
    while stack:
        for other in tree.adjacent(stack.pop()):
            if other in chosen and other not in seen:
                seen.add(other)
                stack.append(other)
    return seen == chosen


def check_outline(
    tree: QTree, ids: Sequence[str], size: int, previous: Sequence[Outline]
) -> Outline:
    """The outline these ids make, or a ValueError saying what is wrong with it."""
    ids = [str(i).strip() for i in ids]
    unknown = [i for i in ids if i not in tree]
    if unknown:
        raise ValueError(f"{unknown} are not node ids of the tree")
    if len(set(ids)) != len(ids):
        raise ValueError("a node is listed twice; choose distinct nodes")
    if len(ids) != size:
        raise ValueError(f"choose exactly {size} nodes, got {len(ids)}")
    if not connected(tree, ids):
        raise ValueError(
            f"nodes {ids} are not connected: each must be the parent, a child or a sibling of "
            "another chosen node"
        )
    for earlier in previous:
        if set(earlier.node_ids) == set(ids):
            raise ValueError(f"{ids} repeats an earlier outline; choose a different one")
    return Outline(tuple(ids), tuple(tree.node(i).text for i in ids))


class OutlineReply(Reply):
    """``{"node_ids": [...]}``: the nodes of one outline."""

    node_ids: list[str]


class NodeReply(Reply):
    """``{"node_id": ...}``: the next node of an outline."""

    node_id: str


@functools.lru_cache(maxsize=64)
def outline_reply(ids: tuple[str, ...], size: int) -> type[OutlineReply]:
    """``size`` node ids, each one of ``ids`` (the tree's)."""
    return with_fields(OutlineReply, node_ids=sized(one_of(str, ids), size, size))


@functools.lru_cache(maxsize=64)
def node_reply(options: tuple[str, ...]) -> type[NodeReply]:
    return with_fields(NodeReply, node_id=one_of(str, options))


def _frontier(tree: QTree, chosen: Iterable[str]) -> set[str]:
    """The nodes adjacent to some chosen node, not chosen themselves."""
    taken = set(chosen)
    return {a for c in taken for a in tree.adjacent(c)} - taken


def _completions(
    tree: QTree, size: int, earlier: set[frozenset[str]]
) -> Callable[[frozenset[str]], bool]:
    """Whether a connected node set grows into a connected outline of ``size`` nodes that is
    none of ``earlier`` (a search over the small tree, each set answered once)."""

    @functools.cache
    def completable(chosen: frozenset[str]) -> bool:
        if len(chosen) == size:
            return chosen not in earlier
        return any(completable(chosen | {o}) for o in _frontier(tree, chosen))

    return completable


@dataclass
class OutlineExtractor:
    """Extracts ``candidates`` outlines of ``size`` nodes, one after the other.

    Args:
        llm: The backend.
        size: Nodes per outline (QPlanner: 4).
        candidates: Outlines to extract (QPlanner: 3).
        retries: Extra attempts per outline (or per node) when it fails a check.
        strategy: ``whole`` asks for all nodes of an outline in one reply (QPlanner);
            ``nodes`` asks for one node at a time, offering only nodes adjacent to those already
            chosen (a schema enum, so a schema-capable backend cannot break connectivity) and,
            for the last node, none that would repeat an earlier outline.
    """

    llm: LLM
    size: int = 4
    candidates: int = 3
    retries: int = 2
    strategy: str = "nodes"

    def __post_init__(self) -> None:
        if self.size < 1 or self.candidates < 1:
            raise ConfigError("size and candidates must be >= 1")
        if self.strategy not in ("whole", "nodes"):
            raise ConfigError(f"strategy must be 'whole' or 'nodes', got {self.strategy!r}")

    def extract(self, tree: QTree, query: C2Query) -> list[Outline]:
        """The candidate outlines, in extraction order.

        Raises:
            StructuredOutputError: when an outline fails its checks after the retries.
            ConfigError: when the tree has fewer nodes than an outline needs.
        """
        if len(tree) < self.size:
            raise ConfigError(f"the tree has {len(tree)} nodes; an outline needs {self.size}")
        outlines: list[Outline] = []
        for _ in range(self.candidates):
            if self.strategy == "nodes":
                outlines.append(self._by_nodes(tree, query, outlines))
            else:
                outlines.append(self._one(tree, query, outlines))
        return outlines

    def _by_nodes(self, tree: QTree, query: C2Query, previous: list[Outline]) -> Outline:
        chosen: list[str] = []
        earlier = {frozenset(o.node_ids) for o in previous}
        completable = _completions(tree, self.size, earlier)
        for _ in range(self.size):
            options = sorted(_frontier(tree, chosen)) if chosen else list(tree.ids)
            # only nodes from which a new connected outline can still be finished: three
            # siblings whose parent completes an earlier outline are a dead end
            options = [o for o in options if completable(frozenset((*chosen, o)))]
            if not options:
                raise ConfigError(
                    f"no node can extend outline {chosen} without repeating an earlier one"
                )
            options = sorted(options, key=tree.ids.index)
            chosen.append(self._next_node(tree, query, previous, chosen, options))
        return check_outline(tree, chosen, self.size, previous)

    def _next_node(
        self,
        tree: QTree,
        query: C2Query,
        previous: list[Outline],
        chosen: list[str],
        options: list[str],
    ) -> str:
        # The tree and the request come first and stay the same: a local model reuses them.
        prompt = (
            f"Request: {query.request}\n{query.instruction()}\n\n"
            f"Tree of sub-queries (id, sub-query):\n{tree.render()}\n\n"
            f"We build an outline of {self.size} connected sub-queries that together answer the "
            "request while following its instructions about what to include and leave out.\n"
        )
        if previous:
            listed = "\n".join(f"- {', '.join(o.node_ids)}" for o in previous)
            prompt += f"Outlines already chosen (make this one different):\n{listed}\n"
        if chosen:
            picked = "\n".join(f"- {i} {tree.node(i).text}" for i in chosen)
            prompt += f"Chosen so far:\n{picked}\n"
        prompt += (
            f"Choose node {len(chosen) + 1} of {self.size} from: {', '.join(options)}.\n"
            'Reply with JSON: {"node_id": "..."}'
        )

        def check(value: NodeReply) -> str:
            node_id = value.node_id.strip()
            if node_id not in options:
                raise ValueError(f"{node_id!r} is not one of {options}")
            return node_id

        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            node_reply(tuple(options)),
            task="outline node",
            check=check,
            retries=self.retries,
            params=ChatParams(max_tokens=30),
        )
        node: str = result.value
        return node

    def _one(self, tree: QTree, query: C2Query, previous: list[Outline]) -> Outline:
        prompt = (
            f"Request: {query.request}\n{query.instruction()}\n\n"
            f"Tree of sub-queries (id, sub-query):\n{tree.render()}\n\n"
            f"Choose {self.size} sub-queries for the outline of the answer. They must be "
            "connected or neighbouring in the tree (each one the parent, a child or a sibling "
            "of another chosen one) and together answer the request while following its "
            "instructions about what to include and what to leave out.\n"
        )
        if previous:
            listed = "\n".join(f"- {', '.join(o.node_ids)}" for o in previous)
            prompt += f"These outlines were already chosen; choose a different one:\n{listed}\n"
        prompt += f'Reply with JSON: {{"node_ids": [{self.size} ids such as "1.2"]}}'
        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            outline_reply(tree.ids, self.size),
            task="outline",
            check=lambda v: check_outline(tree, v.node_ids, self.size, previous),
            retries=self.retries,
            params=ChatParams(max_tokens=20 * self.size + 40),
        )
        outline: Outline = result.value
        return outline


def random_outline(tree: QTree, size: int = 4, seed: int = 0, max_moves: int = 10_000) -> Outline:
    """QPlanner's random baseline: a random node grown by random up / neighbour / down moves."""
    if len(tree) < size:
        raise ConfigError(f"the tree has {len(tree)} nodes; an outline needs {size}")
    rng = random.Random(seed)
    chosen = [rng.choice(tree.ids)]
    for _ in range(max_moves):
        if len(chosen) == size:
            break
        current = tree.node(rng.choice(chosen))
        move = rng.choice(("up", "neighbour", "down"))
        options: Sequence[str]
        if move == "up":
            options = [current.parent_id] if current.parent_id else []
        elif move == "neighbour":
            options = tree.siblings(current.id)
        else:
            options = tree.children(current.id)
        fresh = [o for o in options if o not in chosen]
        if fresh:
            chosen.append(rng.choice(fresh))
    if len(chosen) < size:
        raise ConfigError(f"could not grow a connected outline of {size} nodes")
    nodes: list[QTreeNode] = [tree.node(i) for i in chosen]
    return Outline(tuple(n.id for n in nodes), tuple(n.text for n in nodes), source="random")
