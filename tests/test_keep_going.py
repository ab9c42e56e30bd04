"""The engines going on past a violation (`keep_going`, as TLC's -continue) and the random search stepping only the
action it draws (`lazy`), on the die-hard jugs, whose shortest distances a plain BFS in this file computes."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import pytest

from kcheck.model.interface import StateInvariant
from kcheck.model.search import exhaust, random_search

Jugs = tuple[int, int]
MOVES = ("fill a", "fill b", "empty a", "empty b", "pour a b", "pour b a")


def _move(s: Jugs, a: str) -> Jugs:
    x, y = s
    return {"fill a": (3, y), "fill b": (x, 5), "empty a": (0, y), "empty b": (x, 0),
            "pour a b": (x - min(x, 5 - y), y + min(x, 5 - y)),
            "pour b a": (x + min(y, 3 - x), y - min(y, 3 - x))}[a]


@dataclass
class ManyJugs:
    """The 3- and 5-litre jugs with one invariant per forbidden (jug, litres) pair."""

    bad: tuple[tuple[int, int], ...]  # (jug index, litres)
    name: str = "jugs"

    def initial_states(self) -> list[Jugs]:
        return [(0, 0)]

    def actions(self, s: Jugs) -> list[str]:
        return list(MOVES)

    def step(self, s: Jugs, a: str) -> Jugs | None:
        out = _move(s, a)
        return None if out == s else out

    def invariants(self) -> list[StateInvariant[Jugs]]:
        def never(jug: int, litres: int) -> StateInvariant[Jugs]:
            return StateInvariant(f"jug{jug}-{litres}", f"jug {jug} never holds {litres}",
                                  lambda s: f"jug {jug} holds {litres}" if s[jug] == litres else None)
        return [never(j, v) for j, v in self.bad]

    def encode(self, s: Jugs) -> bytes:
        return bytes(s)

    def decode(self, data: bytes) -> Jugs:
        return (data[0], data[1])

    def symmetries(self) -> tuple[()]:
        return ()

    def describe(self, a: str) -> str:
        return a


def _distances() -> dict[Jugs, int]:
    """Every reachable state's shortest distance from (0, 0), by a plain BFS."""
    dist, todo = {(0, 0): 0}, deque([(0, 0)])
    while todo:
        s = todo.popleft()
        for a in MOVES:
            t = _move(s, a)
            if t not in dist:
                dist[t] = dist[s] + 1
                todo.append(t)
    return dist


def _shortest(jug: int, litres: int) -> int | None:
    return min((d for s, d in _distances().items() if s[jug] == litres), default=None)


def test_exhaust_keeps_going_and_gives_each_broken_invariant_its_shortest_run() -> None:
    bad = ((1, 4), (0, 1), (1, 1), (0, 7))  # jug 0 never holds 7: it holds
    model = ManyJugs(bad)
    r = exhaust(model, keep_going=True)
    assert set(r.counterexamples) == {"jug1-4", "jug0-1", "jug1-1"}
    for inv, cx in r.counterexamples.items():
        jug, litres = next(b for b in bad if f"jug{b[0]}-{b[1]}" == inv)
        assert len(cx.steps) - 1 == _shortest(jug, litres)
        assert cx.steps[-1][1][jug] == litres and cx.invariant == inv
    # it went everywhere: every reachable state stored, yet no proof
    assert r.covered and not r.complete and r.stopped_because == "violation"
    assert r.states == len(_distances())
    assert r.counterexample is next(iter(r.counterexamples.values()))
    # without keep_going the same search stops at the first
    first = exhaust(model)
    assert first.counterexamples == {} and not first.covered and first.states < r.states


def test_exhaust_stops_once_every_invariant_broke() -> None:
    r = exhaust(ManyJugs(((0, 3), (1, 5))), keep_going=True)
    assert set(r.counterexamples) == {"jug0-3", "jug1-5"}
    assert not r.covered and r.stopped_because == "violation" and r.states < len(_distances())


def test_exhaust_keep_going_needs_one_process_breadth_first() -> None:
    for kwargs in ({"workers": 2}, {"order": "dfs"}):
        with pytest.raises(ValueError, match="keep_going"):
            exhaust(ManyJugs(((1, 4),)), keep_going=True, **kwargs)


@pytest.mark.parametrize("lazy", [False, True])
def test_random_search_keeps_going_and_shrinks_each_against_its_own_invariant(lazy: bool) -> None:
    bad = ((1, 4), (0, 1), (0, 7))
    # swarm off: a program that switches pouring off never reaches 4 litres
    r = random_search(ManyJugs(bad), seed=0, programs=300, max_steps=30, swarm=False, choices="random",
                      keep_going=True, lazy=lazy)
    assert set(r.counterexamples) == {"jug1-4", "jug0-1"}
    for inv, cx in r.counterexamples.items():
        jug, litres = next(b for b in bad if f"jug{b[0]}-{b[1]}" == inv)
        assert cx.steps[-1][1][jug] == litres and cx.invariant == inv
        assert len(cx.steps) - 1 >= _shortest(jug, litres)  # a run of the model cannot beat the BFS distance
    assert r.programs == 300 and r.stopped_because == "violation"  # it went on to the last program


def test_lazy_steps_only_the_action_drawn() -> None:
    stepped: list[str] = []

    class Counting(ManyJugs):
        def step(self, s: Jugs, a: str) -> Jugs | None:
            stepped.append(a)
            return super().step(s, a)

    r = random_search(Counting(((1, 99),)), seed=3, programs=20, max_steps=10, swarm=False, lazy=True)
    assert r.counterexample is None and r.transitions > 100
    # one step call per step taken, plus one per drawn action that did not apply (a full jug filled again ...),
    # where computing every successor first would have cost six a step
    assert r.transitions < len(stepped) < 6 * r.transitions


def test_lazy_refuses_what_needs_every_successor() -> None:
    with pytest.raises(ValueError, match="lazy"):
        random_search(ManyJugs(((1, 4),)), follow=0.5, lazy=True)
    with pytest.raises(ValueError, match="lazy"):
        random_search(ManyJugs(((1, 4),)), on_step=lambda *a: None, lazy=True)
