"""The one interface every kcheck model implements, so one set of search engines works on all of them.

A model is a transition system: initial states, the actions enabled in a state (in a deterministic order, so
a trace can be stored as the index of each action taken and rebuilt by re-executing it), a step function,
state invariants, a canonical compact encoding of a state (equal states, equal bytes: the exhaustive search
stores only a 64-bit fingerprint of it), and optionally symmetries (bijections on states that preserve
behaviour and every invariant, e.g. renaming interchangeable brokers). The engines are in
`kcheck.model.search`; the adapters (replication, consumer-group rebalance, log storage) implement this.

The shape follows what explicit-state checkers such as TLC and Stateright ask of a model (Init/Next/
invariants, a fingerprintable state, symmetry sets); nothing here depends on any particular model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

S = TypeVar("S")
A = TypeVar("A")


@dataclass(frozen=True)
class StateInvariant(Generic[S]):
    """A property every reachable state must have.

    `holds(state)` returns None when it holds, else a one-line message saying what is wrong.
    """

    id: str
    title: str
    holds: Callable[[S], str | None]


class Model(Protocol[S, A]):
    """What a search engine needs from a model (see the module docstring)."""

    name: str

    def initial_states(self) -> Iterable[S]:
        """The initial states, in a deterministic order."""
        ...

    def actions(self, state: S) -> Iterable[A]:
        """The actions enabled in `state`, in a deterministic order (traces are stored as indexes into it)."""
        ...

    def step(self, state: S, action: A) -> S | None:
        """The state after `action`; None when the action turned out not to apply."""
        ...

    def invariants(self) -> Sequence[StateInvariant[S]]:
        """The state invariants to check in every reachable state."""
        ...

    def encode(self, state: S) -> bytes:
        """A canonical, compact encoding: equal states give equal bytes, different states different bytes."""
        ...

    def symmetries(self) -> Sequence[Callable[[S], S]]:
        """Behaviour-preserving bijections on states (may be empty). The engine reduces by the group they
        generate only as far as the model lists it: list every non-identity element you want used."""
        ...

    def describe(self, action: A) -> str:
        """One line naming `action`, for a trace table."""
        ...
