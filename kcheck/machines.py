"""kcheck's models as Hypothesis state machines a user's pytest runs (issue 39).

A machine is a thin adapter over one model of the engine (`kcheck.model.interface.Model`): it holds the model's
current state, has one Hypothesis `@rule` per action kind of the model (the rule draws one of that kind's actions
enabled in the state and takes it with the model's own `step`) and one `@invariant` per state invariant of the model
(for replication, one per registered replication invariant) plus the machine's `extra_invariants`. Nothing is
modelled twice: the states, the actions and the checks are the ones `kcheck explore` and `kcheck exhaust` run.

    from kcheck.machines import ReplicationMachine
    from kcheck.model.replication import Config

    class MyReplication(ReplicationMachine):
        config = Config(brokers=2, min_isr=1, records=2, atomic_fetch=True)
        protocol_rules = {"truncation": my_truncation}  # a Protocol rule replaced

    TestMyReplication = MyReplication.TestCase

`ReplicationMachine` (the replication model, its `Protocol` and `Config`), `RebalanceMachine` (one consumer group
and an assignor), `StorageMachine` (a partition's log storage), `RequestMachine` (the request path) and
`TransactionsMachine` (transactions) are ready to subclass; `ModelMachine` runs any other `Model` (override
`build_model`, and `action_kinds` or `kinds`). A subclass
may add rules of its own that take actions through `take(action)`. A violation fails the test with the run as a
numbered list of steps; a replication machine prints `kcheck replay`'s trace table and, with `trace_dir` (or
KCHECK_TRACE_DIR) set, writes the run as a trace file `kcheck replay` reads. Keep Hypothesis's runs bounded
(`settings(max_examples=..., stateful_step_count=..., deadline=None)`).

A guided machine (`guided = True`) has one rule `step` in place of the per-kind rules: it draws as `kcheck explore`
does (kind weights, follow-ups; see `ModelMachine.guided`), since Hypothesis's uniform choice among rules and its
favoured values rarely line up the long exchanges between a few faults that historical rows need. A machine with
`restarts = True` starts half its examples from a corpus of the states earlier examples reached with a new `novelty`
key, replaying the path to it, as `kcheck explore` restarts its programs. `row_machines()` gives a guided machine
per built-in row (with restarts if asked); `ROWS_PROFILE` is the profile under which they find the rows
(docs/tasks/pytest.md has the figures, bench/bench_machines.py measures them).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from io import StringIO
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from hypothesis import HealthCheck, Phase, settings, target
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kcheck.invariants.rebalance_model_adapter import EVENTS, RebalanceBounds, RebalanceModel
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.invariants.replication_searches import random_runs
from kcheck.invariants.replication_searches.runs import Trace, novelty_key, replay
from kcheck.invariants.request_model import RequestModel
from kcheck.invariants.storage_model import StorageModel
from kcheck.invariants.transactions_model import TransactionsModel
from kcheck.model.interface import Model, StateInvariant
from kcheck.model.replication.actions import KINDS, Config
from kcheck.model.replication.protocol import VARIANTS, Protocol
from kcheck.model.request import VARIANTS as REQUEST_VARIANTS
from kcheck.model.request import Config as RequestConfig
from kcheck.model.request import Rules as RequestRules
from kcheck.model.request.model import REPLICATION_KINDS
from kcheck.model.storage import VARIANTS as STORAGE_VARIANTS
from kcheck.model.storage import Config as StorageConfig
from kcheck.model.storage import Rules as StorageRules
from kcheck.model.transactions import VARIANTS as TRANSACTIONS_VARIANTS
from kcheck.model.transactions import Config as TransactionsConfig
from kcheck.model.transactions import Rules as TransactionsRules
from kcheck.model.visited import fingerprint, successor_fn

__all__ = ["ROWS_PROFILE", "ModelMachine", "ModelViolation", "RebalanceMachine", "ReplicationMachine",
           "RequestMachine", "StorageMachine", "TransactionsMachine", "row_machines", "rows_settings"]

# The documented profile of the historical-rows test (tests/test_machines.py): 20 times Hypothesis's default
# examples (100 runs of up to 50 steps; the rows whose runs are long exchanges between few faults need up to 1,000),
# no deadline (a step may run an assignor), and no explain phase (it re-runs a failing run hundreds of times to say
# which steps matter; the trace table says it).
ROWS_PROFILE = "kcheck-rows"
settings.register_profile(ROWS_PROFILE, max_examples=2000, stateful_step_count=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                          phases=[p for p in Phase if p != Phase.explain])


_M = TypeVar("_M", bound="ModelMachine")


CORPUS_LIMIT = 20_000  # a restarting machine's corpus at most (entries; each a path of actions)


def rows_settings(**overrides: Any) -> settings:
    """The `ROWS_PROFILE` settings with `overrides` (e.g. `max_examples`), for `@rows_settings()` on a machine."""
    return settings(settings.get_profile(ROWS_PROFILE), **overrides)


def _name(text: str) -> str:
    """An attribute name for a kind or invariant id ("add-partitions" -> "add_partitions")."""
    return re.sub(r"\W", "_", text)


class ModelViolation(AssertionError):
    """A state of the run breaks an invariant: `invariant` (its id), `message`, `steps` (the actions taken, in
    order) and `report` (the run as text, built only when the failure is shown: Hypothesis raises this on every
    failing example it tries while shrinking)."""

    def __init__(self, invariant: str, message: str, steps: Sequence[Any], render: Callable[[], str]) -> None:
        super().__init__(invariant, message)
        self.invariant, self.message, self.steps, self._render = invariant, message, tuple(steps), render

    @property
    def report(self) -> str:
        return self._render()

    def __str__(self) -> str:
        return f"{self.invariant}: {self.message} after {len(self.steps)} steps\n{self.report}"


class ModelMachine(RuleBasedStateMachine):
    """A Hypothesis state machine over one `Model` (see the module docstring). Each concrete subclass gets, when
    it is defined, one rule per kind of `kinds()` (named `do_<kind>`) and one invariant per state invariant of
    its model and of `extra_invariants` (named `check_<id>`); a kind or invariant its parent had and it has not is
    switched off."""

    model: ClassVar[Model[Any, Any] | None] = None
    # Checked after every step besides the model's own: StateInvariant(id, title, holds), or a plain function
    # state -> None | message (its name is its id).
    extra_invariants: ClassVar[Sequence[StateInvariant[Any] | Callable[[Any], str | None]]] = ()
    _generated: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def build_model(cls) -> Model[Any, Any] | None:
        """The model this class runs (None: an abstract class, no rules)."""
        return None

    action_kinds: ClassVar[Sequence[str]] = ()  # the model's action kinds, when they do not depend on the settings
    # Guided steps (the guidance of `kcheck explore`, kcheck.model.search.random_search): one rule `step` instead of
    # one per kind, drawing a kind among the enabled ones by `weights` (kind -> relative weight, default 1, 0 off),
    # with probability `follow` among the actions the previous step enabled only, then one of the kind's actions.
    # `choices` "random" (random_search's option of that name): those choices come from a `random.Random` the run
    # seeds with one Hypothesis draw (uniform; Hypothesis favours zeros and repeated values, which found far fewer
    # rows, bench/bench_machines.py); "hypothesis": each is a Hypothesis draw. A guided run also reports its
    # `novelty` to Hypothesis's `target()` (call super().teardown() if you override teardown).
    guided: ClassVar[bool] = False
    weights: ClassVar[Mapping[str, float]] = {}
    follow: ClassVar[float] = 0.0
    choices: ClassVar[str] = "random"
    # Restarts (random_search's `restart` 0.5, as `kcheck explore` runs): half the examples (a Hypothesis boolean)
    # start from a state an earlier example of this class reached with a `novelty` key none had before (the corpus,
    # kept on the class for the process), its path replayed through the model's `step`, so the run and its trace
    # still start at an initial state. The entry is picked uniformly the first time an example's draws are seen and
    # memoised by them, so the same draws give the same run (Hypothesis's shrinking and replay rely on that)
    # however the corpus grows meanwhile.
    restarts: ClassVar[bool] = False
    _corpus: ClassVar[list[tuple[int, tuple[Any, ...]]]] = []  # (initial state's index, the path) per new key
    _corpus_keys: ClassVar[set[Hashable]] = set()
    _starts: ClassVar[dict[tuple[int | None, int], tuple[int, tuple[Any, ...]] | None]] = {}  # draws -> entry
    _picker: ClassVar[random.Random] = random.Random(0)

    @classmethod
    def kinds(cls, model: Model[Any, Any]) -> Sequence[str]:
        """Every action kind the model can take under this class's settings, one rule each (`action_kinds`)."""
        return cls.action_kinds

    @classmethod
    def kind_of(cls, model: Model[Any, Any], action: Any) -> str:
        """An action's kind: the model's `kind`, else the first word of `describe` (as the engine's search has it)."""
        kind = getattr(model, "kind", None)
        return kind(action) if kind is not None else model.describe(action).split(" ", 1)[0]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        model = cls.build_model()
        cls.model = model
        if cls.choices not in ("random", "hypothesis"):
            raise ValueError(f"{cls.__name__}.choices must be random or hypothesis, not {cls.choices!r}")
        cls._corpus, cls._corpus_keys, cls._starts, cls._picker = [], set(), {}, random.Random(0)  # the class's own
        made: dict[str, Any] = {}
        if model is not None:
            made["initial"] = _initial_rule(len(list(model.initial_states())), cls.guided, cls.restarts)
            made["quiescent"] = _quiescent_rule()
            if cls.guided:
                made["step"] = _guided_rule()
            else:
                for kind in cls.kinds(model):
                    made[f"do_{_name(kind)}"] = _kind_rule(kind)
            for inv in cls.machine_invariants(model):
                made[f"check_{_name(inv.id)}"] = _invariant_check(inv)
        for name in cls._generated - made.keys():
            setattr(cls, name, None)  # the parent's rule or invariant this class's model does not have
        for name, fn in made.items():
            setattr(cls, name, fn)
        cls._generated = frozenset(made)

    @classmethod
    def machine_invariants(cls, model: Model[Any, Any]) -> list[StateInvariant[Any]]:
        """The model's invariants and `extra_invariants`, as StateInvariants."""
        out = list(model.invariants())
        for extra in cls.extra_invariants:
            if not isinstance(extra, StateInvariant):
                name = getattr(extra, "__name__", repr(extra))
                extra = StateInvariant(name, (getattr(extra, "__doc__", None) or name).strip(), extra)
            out.append(extra)
        return out

    def __init__(self) -> None:
        super().__init__()
        if type(self).model is None:
            raise TypeError(f"{type(self).__name__} runs no model: subclass ReplicationMachine, RebalanceMachine, "
                            f"StorageMachine, RequestMachine, or override build_model()")
        self.state: Any = None
        self.steps: list[Any] = []  # the actions taken, in order
        self._index = 0
        # (the state, its actions by kind, id(action) -> the state after it, once computed)
        self._listed: tuple[Any, dict[str, list[Any]], dict[int, Any]] | None = None
        self._successors = successor_fn(self.the_model)
        self._all_at_once = getattr(self.the_model, "successors", None) is not None
        self._kinds = list(self.kinds(self.the_model))
        self._keys: set[Hashable] = set()
        self._rng: random.Random | None = None  # the run's source of choices (`choices` "random")
        self._before: set[Any] | None = None  # the actions the state before the last guided step listed (`follow`)

    @property
    def the_model(self) -> Model[Any, Any]:
        model = type(self).model
        assert model is not None
        return model

    # ---- what the generated rules use ----

    def enabled(self, kind: str | None = None) -> list[tuple[Any, Any]]:
        """(action, next state) for each action enabled in the current state (of `kind`, when given), as the
        engine's search has them (`successors`, else `actions` and `step`)."""
        if kind is None:
            return [o for k in self.kinds(self.the_model) for o in self.enabled(k)]
        return [(a, self.next_state(a)) for a in self.listed(kind) if self.next_state(a) is not None]

    def listed(self, kind: str) -> list[Any]:
        """The actions of `kind` the model lists in the current state. A model with `successors` (replication)
        lists only those that apply, computed at once; any other lists candidates, each stepped only when drawn
        (Hypothesis asks every rule's precondition at each step, and a step may be dear: a rebalance runs the
        assignor)."""
        if self._listed is None or self._listed[0] is not self.state:
            by_kind: dict[str, list[Any]] = {}
            after: dict[int, Any] = {}
            if self._all_at_once:
                for _i, a, t in self._successors(self.state):
                    by_kind.setdefault(self.kind_of(self.the_model, a), []).append(a)
                    after[id(a)] = t
            else:
                for a in self.the_model.actions(self.state):
                    by_kind.setdefault(self.kind_of(self.the_model, a), []).append(a)
            self._listed = (self.state, by_kind, after)
        return self._listed[1].get(kind, [])

    def any_listed(self) -> bool:
        """Whether the model lists an action of one of `kinds` in the current state (asked at every step)."""
        self.listed("")
        assert self._listed is not None
        by_kind = self._listed[1]
        return any(by_kind.get(k) for k in self._kinds)

    def next_state(self, action: Any) -> Any:
        """The state after `action` (one of `listed`) from the current state; None if it does not apply."""
        assert self._listed is not None
        after = self._listed[2]
        if id(action) not in after:
            after[id(action)] = self.the_model.step(self.state, action)
        return after[id(action)]

    def take(self, action: Any) -> bool:
        """Take `action` if the model enables it in the current state (the model's own `step`); False if not.
        For a subclass's own rules."""
        if action not in list(self.the_model.actions(self.state)):
            return False
        nxt = self.the_model.step(self.state, action)
        if nxt is None:
            return False
        self.moved(action, nxt)
        return True

    def weight(self, kind: str) -> int:
        """A kind's weight for guided steps, in hundredths (`weights`; 0: never drawn)."""
        return max(0, round(100 * self.weights.get(kind, 1.0)))

    @classmethod
    def guide_kind(cls, model: Model[Any, Any], action: Any) -> str:
        """The kind `weights` name an action by (`kind_of`; replication tells a duplicated delivery apart)."""
        return cls.kind_of(model, action)

    def guided_groups(self, data: st.DataObject) -> dict[str, list[Any]]:
        """The actions a guided step draws from, by `guide_kind`: every listed action of a kind with a weight, or,
        with probability `follow`, only those the previous step's state did not list (when there are any)."""
        model = self.the_model
        groups: dict[str, list[Any]] = {}
        for k in self._kinds:
            for a in self.listed(k):
                g = self.guide_kind(model, a)
                if self.weight(g):
                    groups.setdefault(g, []).append(a)
        if not self.follow:
            return groups
        before, self._before = self._before, {a for k in self._kinds for a in self.listed(k)}
        if before is not None and self.word(data, "follow") % 1000 < 1000 * self.follow:
            new = {g: fresh for g, acts in groups.items() if (fresh := [a for a in acts if a not in before])}
            if new:
                return new
        return groups

    def word(self, data: st.DataObject, label: str) -> int:
        """A guided step's next choice: from the run's `random.Random` (`choices` "random"), else drawn."""
        return self._rng.getrandbits(48) if self._rng is not None else data.draw(_WORD, label=label)

    def moved(self, action: Any, nxt: Any) -> None:
        """The run takes `action` into `nxt`; a state with a key new to the class joins the corpus (`restarts`)."""
        self.state = nxt
        self.steps.append(action)
        key = self.novelty(nxt) if self.guided or self.restarts else None
        if key is None:
            return
        self._keys.add(key)
        cls = type(self)
        if self.restarts and key not in cls._corpus_keys and len(cls._corpus) < CORPUS_LIMIT:
            cls._corpus_keys.add(key)
            cls._corpus.append((self._index, tuple(self.steps)))

    def novelty(self, state: Any) -> Hashable | None:
        """An abstraction of a state (random_search's `novelty`): a guided run reports how many keys its states
        had to Hypothesis's `target()`, so its target phase mutates the runs that reached most, and the corpus
        (`restarts`) keeps a state per key. The model's own `novelty` if it has one, else, with `restarts`, the state
        itself (its fingerprint); None: no key."""
        own = getattr(self.the_model, "novelty", None)
        if own is not None:
            return own(state)
        return fingerprint(self.the_model.encode(state)) if self.restarts else None

    def teardown(self) -> None:
        if self.guided and self._keys:
            target(len(self._keys), label="novel states")

    def start(self, index: int) -> None:
        self.state, self._index = list(self.the_model.initial_states())[index], index

    def restart_from(self, seed: int | None, draw: int) -> bool:
        """Start from the corpus entry the example's draws (`seed`, `draw`) pick: its path replayed from its initial
        state by the model's `step`. Picked uniformly the first time the draws are seen (none while the corpus is
        empty), then memoised. False when they pick none."""
        cls = type(self)
        if (seed, draw) not in cls._starts:
            pick = cls._corpus[cls._picker.randrange(len(cls._corpus))] if cls._corpus else None
            cls._starts[seed, draw] = pick
        entry = cls._starts[seed, draw]
        if entry is None:
            return False
        index, path = entry
        self.start(index)
        for action in path:
            nxt = self.the_model.step(self.state, action)
            if nxt is None:
                raise AssertionError(f"{self.the_model.describe(action)} does not apply on replaying a corpus entry: "
                                     f"the model's step is not deterministic")
            self.state = nxt
            self.steps.append(action)
        return True

    def violated(self, inv: StateInvariant[Any], message: str) -> ModelViolation:
        """The failure for `inv` breaking in the current state (replication overrides it with its trace)."""
        model, steps = self.the_model, list(self.steps)

        def render() -> str:
            lines = [f"{model.name}, from initial state {self._index}:"]
            lines += [f"  {n}. {model.describe(a)}" for n, a in enumerate(steps, 1)]
            return "\n".join(lines)

        return ModelViolation(inv.id, message, steps, render)


def _named(fn: Callable[..., None], name: str) -> Callable[..., None]:
    """`fn` under `name` (Hypothesis prints a rule by the name it had when decorated)."""
    fn.__name__ = fn.__qualname__ = name
    return fn


def _initial_rule(count: int, guided: bool, restarts: bool) -> Any:
    """The run's start: initial state `index`; `seed` (guided) its random.Random; with `restarts`, `restart` (whether
    from the corpus: Hypothesis shrinks it to False, the run from the initial state) and `entry` (which)."""
    draws: dict[str, Any] = {"index": st.integers(0, count - 1)}
    if guided:
        draws["seed"] = _WORD
    if restarts:
        draws.update(restart=st.booleans(), entry=_WORD)

    def initial(self: ModelMachine, index: int, seed: int | None = None, restart: bool = False,
                entry: int = 0) -> None:
        if not (restart and self.restart_from(seed, entry)):
            self.start(index)
        self._rng = random.Random(seed) if seed is not None and self.choices == "random" else None
    return initialize(**draws)(_named(initial, "initial"))


def _quiescent_rule() -> Any:
    """The one rule of a state where the model enables nothing (every budget spent, nothing in flight): the run
    stays there (Hypothesis needs a rule to take)."""
    def quiescent(self: ModelMachine) -> None:
        pass
    return precondition(lambda self: not self.any_listed())(rule()(quiescent))


def _kind_rule(kind: str) -> Any:
    def do(self: ModelMachine, data: st.DataObject) -> None:
        options = list(self.listed(kind))
        while options:  # one drawn; one that turns out not to apply is set aside and another drawn
            i = data.draw(st.integers(0, len(options) - 1), label=kind) if len(options) > 1 else 0
            nxt = self.next_state(options[i])
            if nxt is not None:
                self.moved(options[i], nxt)
                data.draw(st.just(self.the_model.describe(options[i])), label="step")  # in Hypothesis's report
                return
            del options[i]
    return precondition(lambda self: bool(self.listed(kind)))(rule(data=st.data())(_named(do, f"do_{_name(kind)}")))


_WORD = st.integers(0, (1 << 48) - 1)  # a guided step's choices, split off one drawn word (as random_search does)


def _guided_rule() -> Any:
    def step(self: ModelMachine, data: st.DataObject) -> None:
        groups = self.guided_groups(data)
        while groups:  # as in _kind_rule, an action that turns out not to apply is set aside and another drawn
            u = self.word(data, "choice")
            kinds = list(groups)
            total = sum(self.weight(k) for k in kinds)
            pick, u = u % total, u // total
            kind = next(k for k in kinds if (pick := pick - self.weight(k)) < 0)
            i = u % len(groups[kind])
            action = groups[kind][i]
            nxt = self.next_state(action)
            if nxt is not None:
                self.moved(action, nxt)
                data.draw(st.just(self.the_model.describe(action)), label="step")  # in Hypothesis's report
                return
            del groups[kind][i]
            if not groups[kind]:
                del groups[kind]
    return precondition(lambda self: self.any_listed())(
        rule(data=st.data())(_named(step, "step")))


def _invariant_check(inv: StateInvariant[Any]) -> Any:
    def check(self: ModelMachine) -> None:
        message = inv.holds(self.state)
        if message is not None:
            raise self.violated(inv, message)
    return invariant()(_named(check, f"check_{_name(inv.id)}"))


class ReplicationMachine(ModelMachine):
    """The replication model (`kcheck.model.replication`) as a state machine: `protocol` (default today's rules)
    with `protocol_rules` replaced (Protocol field -> function), `config` its bounds (default: a small cluster with
    atomic fetches, so runs reach further per step), `invariant_ids` the registered replication invariants checked
    (None: every one; a user's registered with `applies_to="replication"` included) and `extra_invariants`. A failure
    shows `kcheck replay`'s trace table; `trace_dir` (or the KCHECK_TRACE_DIR variable) is where the run is written
    as `<class name>.json`, a trace `kcheck replay` reads (the protocol it names: `trace_protocol`)."""

    protocol: ClassVar[Protocol] = Protocol.current()
    protocol_rules: ClassVar[Mapping[str, Callable[..., Any]]] = {}
    config: ClassVar[Config] = Config(brokers=2, min_isr=1, records=2, atomic_fetch=True)
    invariant_ids: ClassVar[Iterable[str] | None] = None
    protocol_label: ClassVar[str | None] = None
    trace_dir: ClassVar[str | None] = None
    # kcheck explore's guidance (invariants/replication_searches/random_runs.py): faults rarer than the traffic
    # between them, and exchanges chained; a duplicated delivery is a kind of its own
    weights = random_runs.weights()
    follow = random_runs.FOLLOW

    def novelty(self, state: Any) -> Hashable | None:
        return novelty_key(state)

    @classmethod
    def guide_kind(cls, model: Model[Any, Any], action: Any) -> str:
        return random_runs.kind(action)

    @classmethod
    def effective_protocol(cls) -> Protocol:
        rules: dict[str, Any] = dict(cls.protocol_rules)
        return replace(cls.protocol, **rules) if rules else cls.protocol

    @classmethod
    def build_model(cls) -> ReplicationModel:
        only = None if cls.invariant_ids is None else set(cls.invariant_ids)
        return ReplicationModel(cls.effective_protocol(), cls.config, only=only, symmetry=False)

    @classmethod
    def kinds(cls, model: Model[Any, Any]) -> Sequence[str]:
        return [k for k, spec in KINDS.items() if spec.possible(cls.config)]

    @classmethod
    def for_variant(cls, name: str, **config: Any) -> type[ReplicationMachine]:
        """A machine running historical row `name` (`kcheck variants`): its rules, its row's settings (with
        `config` overrides), checking the invariants its row breaks."""
        v = VARIANTS[name]
        attrs = {"protocol": v.protocol, "config": Config(**{**v.settings, **config}),
                 "invariant_ids": tuple(v.violates), "protocol_label": name, "__module__": cls.__module__}
        return type(f"{_name(name).title().replace('_', '')}Machine", (cls,), attrs)

    @classmethod
    def trace_protocol(cls) -> str:
        """What a trace of this machine names as its protocol: `protocol_label` if set; else "current" or the
        variant's name for a built-in protocol; else this class's `effective_protocol` as module:object, which
        `kcheck replay TRACE --protocol module:object` loads (the module must be importable)."""
        if cls.protocol_label:
            return cls.protocol_label
        if not cls.protocol_rules:
            if cls.protocol == Protocol.current():
                return "current"
            for name, v in VARIANTS.items():
                if v.protocol == cls.protocol:
                    return name
        return f"{cls.__module__}:{cls.__qualname__}.effective_protocol"

    def trace(self) -> Trace:
        """The run so far as a trace (`kcheck replay` reads its JSON: `trace().to_json()`)."""
        label = self.trace_protocol()
        only = None if self.invariant_ids is None else tuple(sorted(self.invariant_ids))
        return Trace(label, self.config, tuple(self.steps), invariants=only)

    def violated(self, inv: StateInvariant[Any], message: str) -> ModelViolation:
        trace, protocol = self.trace(), self.effective_protocol()
        only = None if trace.invariants is None else set(trace.invariants)
        written = self._write(trace, protocol, only)

        def render() -> str:
            from rich.console import Console

            from kcheck.report import trace_table  # kcheck replay's table

            out = Console(file=StringIO(), width=200, soft_wrap=False, highlight=False, color_system=None)
            out.print(trace_table(replay(trace, protocol, only), f"{type(self).__name__} under protocol "
                                                                 f"{trace.protocol}"))
            if written is not None:
                out.print(f"trace file: {written} (kcheck replay {written})")
            return out.file.getvalue()  # type: ignore[attr-defined]

        return ModelViolation(inv.id, message, trace.steps, render)

    def _write(self, trace: Trace, protocol: Protocol, only: set[str] | None) -> Path | None:
        """The trace file with the violations replay finds, when a trace folder is set; the last failing example
        Hypothesis runs (its shrunk one) is the one left."""
        folder = self.trace_dir or os.environ.get("KCHECK_TRACE_DIR")
        if not folder:
            return None
        steps = replay(trace, protocol, only)
        data = json.loads(replace(trace, violations=steps[-1].violations).to_json())
        path = Path(folder) / f"{type(self).__name__}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path


class RebalanceMachine(ModelMachine):
    """One consumer group under `assignor` (a built-in name, or module:object) as a state machine: members join,
    leave, change subscriptions, time out and rejoin, topics grow, and the group rebalances, within `bounds`; the
    invariants are the assignor's guarantees, exclusive ownership, settling, and (`findings`) the StickyAssignor's
    stale-claim findings."""

    assignor: ClassVar[str] = "range"
    bounds: ClassVar[RebalanceBounds] = RebalanceBounds()
    findings: ClassVar[bool] = False

    @classmethod
    def build_model(cls) -> RebalanceModel:
        return RebalanceModel(cls.assignor, cls.bounds, findings=cls.findings)

    @classmethod
    def kinds(cls, model: Model[Any, Any]) -> Sequence[str]:
        return ["rebalance", *(k for k in EVENTS if k in cls.bounds.kinds)]


class StorageMachine(ModelMachine):
    """A partition's log storage (`kcheck.model.storage`: produce, roll, clean, retain, fetch, consume, crash)
    under `storage_rules` (default today's) within `storage_config`."""

    storage_rules: ClassVar[StorageRules] = StorageRules.current()
    storage_config: ClassVar[StorageConfig] = StorageConfig()
    action_kinds = ("produce", "roll", "tick", "clean", "retain", "fetch", "isr-shrink", "consume-start", "consume",
                    "commit", "crash")

    @classmethod
    def build_model(cls) -> StorageModel:
        return StorageModel(cls.storage_config, cls.storage_rules)

    @classmethod
    def for_variant(cls, name: str, **config: Any) -> type[StorageMachine]:
        """A machine running the storage model's variant `name` (kcheck.model.storage.VARIANTS): its rules within
        its settings (with `config` overrides)."""
        v = STORAGE_VARIANTS[name]
        return _variant_machine(cls, name, "Storage", storage_rules=v.rules,
                                storage_config=StorageConfig(**{**dict(v.settings), **config}))


class RequestMachine(ModelMachine):
    """The request path (`kcheck.model.request`: a producer's batches from send() to the broker's answer, over the
    replication model) under `request_rules` (default today's) within `request_config`; `findings` adds the model's
    findings as invariants. Its replication steps are rules `do_rep_<kind>`."""

    request_rules: ClassVar[RequestRules] = RequestRules.current()
    request_config: ClassVar[RequestConfig] = RequestConfig()
    findings: ClassVar[bool] = False
    action_kinds = (*(f"rep:{k}" for k in REPLICATION_KINDS), "send", "drain", "deliver", "serve", "resolve", "refresh",
                    "bump", "drop", "tick", "expire-batch", "expire-in-flight", "expire-producer", "delete-records")

    @classmethod
    def build_model(cls) -> RequestModel:
        return RequestModel(cls.request_config, cls.request_rules, findings=cls.findings)

    @classmethod
    def for_variant(cls, name: str, **config: Any) -> type[RequestMachine]:
        """A machine running the request model's variant `name` (kcheck.model.request.VARIANTS): its rules within
        its settings (with `config` overrides)."""
        v = REQUEST_VARIANTS[name]
        return _variant_machine(cls, name, "Request", request_rules=v.rules,
                                request_config=RequestConfig(**{**dict(v.settings), **config}))


class TransactionsMachine(ModelMachine):
    """Transactions (`kcheck.model.transactions`: producer instances of one transactional id, the coordinator, two
    partitions, produce requests and markers in flight) under `transactions_rules` (default today's) within
    `transactions_config`."""

    transactions_rules: ClassVar[TransactionsRules] = TransactionsRules.current()
    transactions_config: ClassVar[TransactionsConfig] = TransactionsConfig()
    action_kinds = ("init", "write", "timeout", "commit", "abort", "deliver", "deliver-lost", "duplicate",
                    "txn-timeout", "failover", "append", "append-fail")

    @classmethod
    def build_model(cls) -> TransactionsModel:
        return TransactionsModel(cls.transactions_config, cls.transactions_rules)

    @classmethod
    def for_variant(cls, name: str, **config: Any) -> type[TransactionsMachine]:
        """A machine running the transactions model's variant `name` (kcheck.model.transactions.VARIANTS): its
        rules within its settings (with `config` overrides)."""
        v = TRANSACTIONS_VARIANTS[name]
        return _variant_machine(cls, name, "Transactions", transactions_rules=v.rules,
                                transactions_config=TransactionsConfig(**{**dict(v.settings), **config}))


def _variant_machine(cls: type[_M], variant: str, model: str, **attrs: Any) -> type[_M]:
    """A subclass of `cls` with `attrs`, named after the variant and the model ("CleanAboveHwStorageMachine")."""
    return type(f"{_name(variant).title().replace('_', '')}{model}Machine", (cls,),
                {**attrs, "__module__": cls.__module__})


def row_machines(model: str = "replication", restarts: bool = False) -> dict[str, type[ModelMachine]]:
    """A guided machine per built-in row of `model` ("replication": the rows of `kcheck variants`, with atomic
    fetches as `kcheck explore` runs them; "storage", "request": those models' variants that break an invariant),
    by row name, with `restarts` as given: what the `kcheck-rows` profile is measured on (tests/test_machines.py,
    bench/bench_machines.py)."""
    made: dict[str, type[ModelMachine]]
    if model == "replication":
        made = {name: ReplicationMachine.for_variant(name, atomic_fetch=True) for name in VARIANTS}
    elif model == "storage":
        made = {name: StorageMachine.for_variant(name) for name, v in STORAGE_VARIANTS.items() if v.violates}
    else:
        made = {name: RequestMachine.for_variant(name) for name, v in REQUEST_VARIANTS.items() if v.violates}
    return {name: type(m.__name__, (m,), {"guided": True, "restarts": restarts, "__module__": m.__module__})
            for name, m in made.items()}
