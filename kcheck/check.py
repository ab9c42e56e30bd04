"""`kcheck check`: every check that exists, over a built-in set of clusters, in one summary.

The placement invariants over Kafka's placers (AdminUtils with
every fixed start index, KRaft's striped placer with several seeds, with and
without a fenced broker) on small clusters with every rack layout of up to
three racks. A violated invariant that Kafka guarantees for that placer is a
failure (exit 1); any other violation is a finding about Kafka, reported with
the smallest cluster that shows it and the `kcheck place` command to replay it.
Then the guarantees that have a Z3 form are proved: by Z3 within small bounds
(for every size where the encoding allows) and, for the striped placer, over
every random draw within the same bounds. Then the rebalance model runs every
consumer assignor through random group histories at a short budget, checking
each assignor's guarantees after every step, and every assignor runs on every small
group where a member times out and rejoins with its old client state (the group sweep's
rejoin events): a broken guarantee fails; StickyAssignor's stale-claim behaviours
(`invariants/rebalance.py`) are findings, each with the smallest group and the
`kcheck assign` file that replays its failing rebalance. Last, the replication model: today's
protocol must survive random programs and every state within small bounds, and
each historical variant must break the property of its bug's row. Then the request path's model: each historical
rule of `kcheck.model.request` breaks its property and today's rules are clean at the same bounds. Last, the
request path's references (`reference/spot_checks.py`'s families: keys, headers, produce validation, producer
state, fetch, client metadata, the acks=all and fetch purgatories) are compared with Kafka's own classes on a few
thousand random inputs per family and release, on every release of 3.9.1, 4.0.2, 4.1.2 and 4.4.0 whose jars are
cached (a release not cached is reported as skipped, never fetched): any difference fails.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kcheck.invariants import REGISTRY, PlacementSubject, Violation, check_placement, smt
from kcheck.invariants.exhaustive import check_exhaustively
from kcheck.invariants.prover import Bounds, ProofResult, prove
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.reference.java import JavaRandom
from kcheck.reference.placers import BUILTIN_PLACERS, PlacerInfo

if TYPE_CHECKING:  # the spot checks start JVMs: imported when they run, not with every command
    from kcheck.reference.spot_checks import SpotOutcome

PARTITION_COUNTS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24)
MAX_BROKERS = 9
MAX_RF = 4
STRIPED_SEEDS = (0, 1, 2)


def rack_size_layouts(n: int, max_racks: int = 3) -> list[tuple[int, ...]]:
    """Ways to split n brokers into 1..max_racks non-empty racks, as non-increasing rack sizes."""

    def parts(remaining: int, k: int, largest: int) -> Iterator[tuple[int, ...]]:
        if k == 0:
            if remaining == 0:
                yield ()
            return
        for first in range(min(largest, remaining - (k - 1)), 0, -1):
            for rest in parts(remaining - first, k - 1, first):
                yield (first, *rest)

    return [p for k in range(1, min(max_racks, n) + 1) for p in parts(n, k, n)]


def builtin_clusters(max_brokers: int = MAX_BROKERS) -> list[Cluster]:
    """No racks, then every rack layout; brokers 0..n-1, rack names a, b, c by decreasing size."""
    clusters = []
    for n in range(1, max_brokers + 1):
        clusters.append(Cluster.of(range(n)))
        for sizes in rack_size_layouts(n):
            racks = {}
            broker = 0
            for rack, size in zip("abc", sizes, strict=False):
                for _ in range(size):
                    racks[broker] = rack
                    broker += 1
            clusters.append(Cluster.of(range(n), racks))
    return clusters


@dataclass(frozen=True)
class Case:
    """One placement run: a placer on a cluster, with its parameters."""

    placer: str
    cluster: Cluster
    partitions: int
    replication_factor: int
    start_index: int = -1
    seed: int | None = None

    @property
    def size_key(self) -> tuple[int, ...]:
        """Smaller clusters first: brokers, racks, partitions, RF, then start index / seed."""
        return (len(self.cluster), len(self.cluster.racks), self.partitions, self.replication_factor,
                self.start_index, self.seed if self.seed is not None else -1,
                sum(b.fenced for b in self.cluster.brokers))

    def replay(self) -> str:
        """The `kcheck place` command that reproduces this case."""
        c = self.cluster
        placer = self.placer
        if placer.startswith("jvm:"):  # a Java placer: with the --classpath that finds it
            from kcheck.reference.jvm_plugins import replay_name

            placer = replay_name(placer)
        cmd = [f"kcheck place --placer {placer} --brokers {','.join(map(str, c.broker_ids))}"]
        if c.rack_map:
            cmd.append("--racks " + ",".join(f"{b}:{r}" for b, r in c.rack_map.items()))
        fenced = [b.id for b in c.brokers if b.fenced]
        if fenced:
            cmd.append("--fenced " + ",".join(map(str, fenced)))
        cmd.append(f"--partitions {self.partitions} --replication-factor {self.replication_factor}")
        if self.start_index >= 0:
            cmd.append(f"--start-index {self.start_index}")
        if self.seed is not None:
            cmd.append(f"--seed {self.seed}")
        return " ".join(cmd)

    def run(self, placer: PlacerInfo) -> dict[int, list[int]]:
        rnd = JavaRandom(self.seed) if self.seed is not None else None
        return placer.place(list(self.cluster.brokers), self.partitions, self.replication_factor,
                            self.start_index, -1, rnd)


def builtin_cases(clusters: list[Cluster]) -> Iterator[Case]:
    for cluster in clusters:
        n = len(cluster)
        for partitions in PARTITION_COUNTS:
            for rf in range(1, min(MAX_RF, n) + 1):
                for start in range(n):  # a fixed start index also fixes the shift
                    yield Case("adminutils", cluster, partitions, rf, start_index=start)
                for seed in STRIPED_SEEDS:
                    yield Case("striped", cluster, partitions, rf, seed=seed)
                if n >= 2:  # broker 0 fenced: the leader must avoid it
                    fenced = Cluster.of(cluster.broker_ids, cluster.rack_map, fenced=[0])
                    yield Case("striped", fenced, partitions, rf, seed=STRIPED_SEEDS[0])


def subject_cases(clusters: list[Cluster], name: str, info: PlacerInfo) -> Iterator[Case]:
    """A user's placer (`kcheck check --placer`) on the cases of Kafka's: every fixed start index when it has one,
    else the striped placer's seeds and its fenced-broker cases."""
    for case in builtin_cases(clusters):
        if (case.placer == "adminutils") == info.has_start_index:
            yield Case(name, case.cluster, case.partitions, case.replication_factor, case.start_index, case.seed)


@dataclass
class Outcome:
    """Results of one invariant for one placer over all the cases."""

    placer: str
    invariant: str
    guaranteed: bool
    checked: int = 0
    violated: int = 0
    smallest: Case | None = None
    smallest_violations: list[Violation] = field(default_factory=list)
    must_hold: bool = False  # a user's placer and a hard invariant: it fails as in a sweep, guaranteed or not

    @property
    def status(self) -> str:
        if not self.checked:
            return "n/a"
        if not self.violated:
            return "holds"
        return "FAILED" if self.guaranteed or self.must_hold else "finding"


PROOF_BOUNDS = Bounds(max_brokers=4, max_racks=3, max_partitions=6, max_rf=3)
MODEL_EXAMPLES, MODEL_STEPS = 100, 25  # a short budget for the main job; the test suite and README go deeper


@dataclass(frozen=True)
class ModelFinding:
    """A stale-claim finding the rebalance model met (Kafka's behaviour outside its guarantees)."""

    kind: str  # STALE_INVALID or STALE_NPE
    message: str
    steps: int  # group events in its shrunk story
    story: tuple[str, ...]
    replay: dict[str, Any] | None = None  # the failing rebalance's input as a `kcheck assign` group file

    def group_file(self) -> dict[str, Any] | None:
        return self.replay


@dataclass
class ModelOutcome:
    """The rebalance model run for one assignor: every guarantee after every step, or the shrunk story;
    the stale-claim findings it met on the way (each kind's first, shrunk)."""

    assignor: str
    examples: int
    steps: int
    seconds: float
    failure: str | None = None
    findings: list[ModelFinding] = field(default_factory=list)


def rebalance_model_bounds(steps: int = MODEL_STEPS) -> Any:
    """What `kcheck check` runs the rebalance model on: up to 4 members (in any rack or none) and 3 topics of 1-4
    partitions growing to 6, replicated 1-3 times on brokers with or without racks, up to `steps` events."""
    from kcheck.invariants.rebalance import RACKS
    from kcheck.invariants.rebalance_model_adapter import RebalanceBounds

    return RebalanceBounds(max_members=4, topics=3, initial_partitions=4, max_partitions=6, events=steps,
                           rebalances=steps, racks=(None, *RACKS),
                           clusters=tuple((rf, racks) for racks in (False, True) for rf in (1, 2, 3)))


def run_rebalance_models(examples: int = MODEL_EXAMPLES, steps: int = MODEL_STEPS,
                         assignors: Sequence[str] | None = None) -> list[ModelOutcome]:
    """The rebalance model for each assignor (default: every built-in one): the one engine's random search
    (`kcheck.model.search.random_search`, seed 0) over `RebalanceModel`, `examples` programs of up to `steps`
    steps, going on past each broken invariant so that every guarantee and both stale-claim findings are asked.
    An exception other than the model's verdicts (an assert inside the reference) is a kcheck bug: it propagates."""
    from kcheck.invariants.rebalance import STALE_CLAIM_KINDS
    from kcheck.invariants.rebalance_model_adapter import RebalanceModel
    from kcheck.model.search import random_search
    from kcheck.reference.assignors.registry import ASSIGNORS

    bounds = rebalance_model_bounds(steps)
    outcomes = []
    for name in assignors or ASSIGNORS:
        started = time.perf_counter()
        run = random_search(RebalanceModel(name, bounds), seed=0, programs=examples, max_steps=steps,
                            keep_going=True, lazy=True)
        failures, findings = [], []
        for inv, cx in run.counterexamples.items():
            story = tuple(a for a, _ in cx.steps[1:])
            if inv in STALE_CLAIM_KINDS:
                # the last state is the rebalance that met it: its group keeps that round's Finding
                met = [f for f in cx.steps[-1][1].group.findings if f.kind == inv]
                findings.append(ModelFinding(inv, met[0].message if met else cx.message, len(story), story,
                                             met[0].group_file() if met else None))
            else:
                failures.append(f"{inv}: {cx.message}\ngroup events:\n"
                                + "\n".join(f"  {i}. {a}" for i, a in enumerate(story, 1)))
        outcomes.append(ModelOutcome(name, examples, steps, time.perf_counter() - started,
                                     "\n".join(failures) or None, findings))
    return outcomes


# Every assignor on every group of up to 2 earlier members, 2 topics of up to 2 partitions, where a member
# times out and rejoins with its old client state (alone, or while a new member joins): 872 groups, ~10 s.
REJOIN_SPACE = "max_members=2,max_topics=2,max_partitions=2,racks=none,events=rejoin,rejoin-join"


@dataclass(frozen=True)
class GroupOutcome:
    """One result key of the rejoin sweep that is violated somewhere: a failure, or a stale-claim finding."""

    assignor: str
    invariant: str
    fails: bool  # a guarantee or a hard invariant: the main job fails
    checked: int
    violated: int
    message: str  # the smallest group's violation
    config: dict[str, Any]  # that group, as GroupConfig.describe() tells it
    replay: dict[str, Any] | None  # a `kcheck assign` group file of the failing rebalance (findings)


@dataclass
class RejoinSweep:
    space: str
    groups: int
    seconds: float
    outcomes: list[GroupOutcome]

    @property
    def failures(self) -> list[GroupOutcome]:
        return [o for o in self.outcomes if o.fails]

    @property
    def findings(self) -> list[GroupOutcome]:
        return [o for o in self.outcomes if not o.fails]


def run_rejoin_sweep(space: str = REJOIN_SPACE, assignors: Sequence[str] | None = None) -> RejoinSweep:
    """The group sweep's rejoin events over every assignor (or these); reports each failure and stale-claim
    finding."""
    from kcheck.invariants.rebalance import STALE_CLAIM_KINDS
    from kcheck.spark_check.groups import GroupSpace, parse_group_bounds

    started = time.perf_counter()
    groups = GroupSpace(parse_group_bounds(space), assignors)
    result = groups.evaluate(0, len(groups))
    outcomes = []
    for key in groups.invariant_ids():
        info = groups.invariant_info(key)
        first = result.first.get(key)
        if first is None or not (info.fails or info.invariant in STALE_CLAIM_KINDS):
            continue
        outcomes.append(GroupOutcome(info.assignor, info.invariant, info.fails, result.checked[key],
                                     result.violated[key], first.message, dict(first.config),
                                     first.detail.get("replay")))
    return RejoinSweep(space, groups.group_count, time.perf_counter() - started, outcomes)


def run_proofs(bounds: Bounds = PROOF_BOUNDS) -> list[ProofResult]:
    """Each guarantee of Kafka's placers that has a Z3 form: proved (by Z3, or for the striped placer over
    every random draw) within small bounds, or for every size where the encoding allows."""
    results: list[ProofResult] = []
    adminutils, striped = BUILTIN_PLACERS["adminutils"], BUILTIN_PLACERS["striped"]
    for algorithm in ("adminutils", "adminutils-rack-aware"):
        for inv in smt.FORMS:
            if inv in adminutils.guarantees:
                results.append(prove(algorithm, inv, adminutils, bounds))
    guaranteed = [inv for inv in smt.FORMS if inv in striped.guarantees]
    results += check_exhaustively(striped, guaranteed, bounds).values()
    return [r for r in results if r.status != "not applicable"]


# The replication model in the main job: today's protocol at these budgets, each variant at its row's setting.
REPLICATION_EXAMPLES, REPLICATION_STEPS = 100, 50
# Small enough to finish (3,332 states): a record, a crash and a restart on two brokers, no duplicates.
SMALL_EXHAUSTIVE_BOUNDS: dict[str, Any] = {
    "brokers": 2, "min_isr": 1, "records": 1, "max_leader_epoch": 2, "crashes": 1, "lossy_crashes": 0, "fences": 0,
    "elections": 0, "isr_shrinks": 0, "failovers": 0, "reads": 0, "duplicates": False}
VARIANT_MAX_STATES = 150_000
# Row 4's counterexamples are 19 steps or more on three brokers (26 in the row's own sequence), beyond breadth-first
# search: `kcheck check --deep` finds one with the exact search in novelty order over atomic fetches (about 190,000
# states, about 10 s with change coverage, so not by default) and replays it in the split model.
DEEP_SEARCH = frozenset({"no-epoch-in-fetch"})
DEEP_MAX_STATES = 2_000_000


@dataclass(frozen=True)
class ReplicationOutcome:
    """One run of the replication model: today's protocol must hold; a variant must break its row's property."""

    protocol: str
    engine: str  # "explore" (Hypothesis), "exhaust" (every state within bounds) or "row N sequence"
    expect_violation: bool
    size: str  # programs x steps, or states and transitions
    seconds: float
    violated: tuple[str, ...] = ()  # invariants of the first violating state
    trace_steps: int = 0
    detail: str = ""  # the violation's explanation, or why a variant was not found

    @property
    def ok(self) -> bool:
        return bool(self.violated) == self.expect_violation


def run_replication_models(deep: bool = False) -> list[ReplicationOutcome]:
    from kcheck.invariants.replication_rows import ROW_SCRIPTS, play_row
    from kcheck.invariants.replication_searches.exhaustive import run_exhaust
    from kcheck.invariants.replication_searches.random_runs import explore
    from kcheck.model.replication import VARIANTS, Config, Protocol

    out = []
    current = Protocol.current()
    r = explore(current, Config(), examples=REPLICATION_EXAMPLES, steps=REPLICATION_STEPS, seed_value=0)
    out.append(_outcome("current", "explore", False, f"{r.examples} x {REPLICATION_STEPS}", r.seconds, r.trace))
    e = run_exhaust(current, Config(**SMALL_EXHAUSTIVE_BOUNDS))
    out.append(_outcome("current", "exhaust", False, f"{e.states:,} states, {e.transitions:,} transitions",
                        e.seconds, e.trace, "" if e.complete else "incomplete"))
    for v in VARIANTS.values():
        expected = ROW_SCRIPTS[v.name][1]
        started = time.perf_counter()
        (old_n, old_violated), (now_n, now_violated), length = play_row(v.name)
        seconds = time.perf_counter() - started
        row_ok = old_n == length and expected in old_violated
        out.append(ReplicationOutcome(v.name, f"row {v.row} sequence", True, f"{length} steps", seconds,
                                      tuple(old_violated) if row_ok else (), old_n,
                                      "" if row_ok else f"the row's sequence stopped after step {old_n} of {length}"))
        out.append(ReplicationOutcome("current", f"row {v.row} sequence", False,
                                      f"{now_n} of {length} steps allowed", 0.0, tuple(now_violated), now_n,
                                      "today's rules let the row break its property" if now_violated else ""))
        if v.name in DEEP_SEARCH:
            if deep:
                out.append(hunt_variant(v.name))
            continue
        e = run_exhaust(v.protocol, Config(**v.settings), max_states=VARIANT_MAX_STATES, only=set(v.violates))
        missing = "" if e.trace else f"not found in {e.states:,} states (row {v.row} needs {v.minimal_steps} steps)"
        out.append(_outcome(v.name, "exhaust", True, f"{e.states:,} states", e.seconds, e.trace, missing))
    return out


def hunt_variant(name: str) -> ReplicationOutcome:
    """The exact search in novelty order (best first: states with beliefs no earlier state had go first; every
    state is stored, nothing merged) with atomic fetches at the variant's setting; the trace it finds is then
    split into three steps per fetch and replayed, so what is reported is a run of the split model."""
    from kcheck.invariants.replication_searches.exhaustive import run_exhaust
    from kcheck.invariants.replication_searches.runs import split_run
    from kcheck.model.replication import VARIANTS, Config

    v = VARIANTS[name]
    e = run_exhaust(v.protocol, Config(**{**v.settings, "atomic_fetch": True}), max_states=DEEP_MAX_STATES,
                    only=set(v.violates), order="novelty")
    engine, size = "exhaust --order novelty", f"{e.states:,} states"
    if e.trace is None:
        return _outcome(name, engine, True, size, e.seconds, None,
                        f"not found in {e.states:,} states (row {v.row} needs {v.minimal_steps} steps)")
    split = split_run(e.trace, v.protocol, set(v.violates))
    return _outcome(name, engine, True, f"{size}, {len(e.trace.steps)} atomic steps", e.seconds,
                    split, "" if split else "the split replay broke nothing")


def _outcome(name: str, engine: str, expect: bool, size: str, seconds: float, trace: object,
             note: str = "") -> ReplicationOutcome:
    if trace is None:
        return ReplicationOutcome(name, engine, expect, size, seconds, detail=note)
    violations = trace.violations  # type: ignore[attr-defined]
    return ReplicationOutcome(name, engine, expect, size, seconds, tuple(sorted({x.invariant for x in violations})),
                              len(trace.steps), violations[0].message)  # type: ignore[attr-defined]


@dataclass
class CheckResult:
    cases: int
    clusters: int
    outcomes: list[Outcome]
    proofs: list[ProofResult] = field(default_factory=list)
    models: list[ModelOutcome] = field(default_factory=list)
    replication: list[ReplicationOutcome] = field(default_factory=list)
    rejoins: RejoinSweep | None = None
    spots: list[SpotOutcome] = field(default_factory=list)  # the request path's references against Kafka's jars
    request: list[Any] = field(default_factory=list)  # invariants.request_rows.RequestRow: the request path's rows
    transactions: list[Any] = field(default_factory=list)  # the transactions model's rows (RequestRow too)

    @property
    def failed_spots(self) -> list[SpotOutcome]:
        return [o for o in self.spots if not o.ok]

    @property
    def failed_replication(self) -> list[ReplicationOutcome]:
        return [r for r in self.replication if not r.ok]

    @property
    def failed_request(self) -> list[Any]:
        return [r for r in self.request if not r.ok]

    @property
    def failed_transactions(self) -> list[Any]:
        return [r for r in self.transactions if not r.ok]

    @property
    def failed_proofs(self) -> list[ProofResult]:
        return [r for r in self.proofs if r.status != "proved"]

    @property
    def failed_models(self) -> list[ModelOutcome]:
        return [m for m in self.models if m.failure]

    @property
    def failed_rejoins(self) -> list[GroupOutcome]:
        return self.rejoins.failures if self.rejoins else []

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "FAILED"]

    @property
    def findings(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "finding"]


def failed_any(result: CheckResult) -> bool:
    return bool(result.failures or result.failed_proofs or result.failed_models or result.failed_replication
                or result.failed_rejoins or result.failed_spots or result.failed_request
                or result.failed_transactions)


def run_check(max_brokers: int = MAX_BROKERS, proofs: bool = True, deep: bool = False,
              placers: Sequence[str] | None = None, assignors: Sequence[str] | None = None,
              user_invariants: Sequence[str] = ()) -> CheckResult:
    """The placement cases, then (unless `proofs` is False) the proofs and the rebalance and replication
    models; `deep` adds the exact search in novelty order for the variants breadth-first search cannot reach.

    `placers` / `assignors` (a user's `module:object` or `jvm:<class>`, or built-in names) check those instead:
    the placers on Kafka's placement cases, the assignors in the rebalance model and the rejoin sweep; a
    user's plug-in fails a hard invariant as a sweep does (it has no guarantees of Kafka's to break).

    `user_invariants` (ids a user's `--invariants` module registered) are checked wherever their kind is: a
    hard one that breaks fails the job (a placement one on any placer; a replication one in today's protocol's
    runs), since the user asked for it to hold."""
    from kcheck.invariants.registry import fails_when_violated
    from kcheck.reference.placers import resolve_placer

    subjects = bool(placers or assignors)
    clusters = builtin_clusters(max_brokers)
    chosen = {name: resolve_placer(name) for name in placers or ()} if subjects else dict(BUILTIN_PLACERS)
    outcomes: dict[tuple[str, str], Outcome] = {}
    for name, info in chosen.items():
        users = BUILTIN_PLACERS.get(name) is not info
        for inv in REGISTRY.values():
            if inv.applies_to == "placement":
                # the one rule (registry.fails_when_violated, the sweeps' too): a hard property Kafka's own placer
                # breaks without promising it is a finding about Kafka; a user's placer or invariant must hold
                outcomes[(name, inv.id)] = Outcome(name, inv.id, inv.id in info.guarantees,
                                                   must_hold=fails_when_violated(
                                                       inv.severity, False,
                                                       kafkas_own=not (users or inv.id in user_invariants)))
    cases: Iterator[Case] = (builtin_cases(clusters) if not subjects else
                             (c for name, info in chosen.items() for c in subject_cases(clusters, name, info)))
    n_cases = 0
    for case in cases:
        n_cases += 1
        placement = case.run(chosen[case.placer])
        subject = PlacementSubject(case.cluster, ReplicaAssignment.from_placement("topic", placement),
                                   replication_factor=case.replication_factor)
        report = check_placement(subject)
        by_invariant: dict[str, list[Violation]] = {}
        for v in report.violations:
            by_invariant.setdefault(v.invariant, []).append(v)
        for inv_id in report.checked:
            out = outcomes[(case.placer, inv_id)]
            out.checked += 1
            found = by_invariant.get(inv_id)
            if found:
                out.violated += 1
                if out.smallest is None or case.size_key < out.smallest.size_key:
                    out.smallest, out.smallest_violations = case, found
    if subjects:
        return CheckResult(n_cases, len(clusters), list(outcomes.values()), [],
                           run_rebalance_models(assignors=assignors) if assignors and proofs else [], [],
                           run_rejoin_sweep(assignors=assignors) if assignors and proofs else None)
    return CheckResult(n_cases, len(clusters), list(outcomes.values()), run_proofs() if proofs else [],
                       run_rebalance_models() if proofs else [], run_replication_models(deep) if proofs else [],
                       run_rejoin_sweep() if proofs else None, _spot_checks() if proofs else [],
                       run_request_models() if proofs else [], run_transactions_models() if proofs else [])



def _spot_checks() -> list[SpotOutcome]:
    from kcheck.reference.spot_checks import run_spot_checks

    return run_spot_checks()


def run_request_models() -> list[Any]:
    """The request path's model (`invariants/request_rows.py`): each historical rule breaks its property in an
    exhaustive search, today's rules are clean at the same bounds, and the findings are reached."""
    from kcheck.invariants.request_rows import run_request_rows

    return run_request_rows()


def run_transactions_models() -> list[Any]:
    """The transactions model (`invariants/transactions_rows.py`): each historical rule breaks its property in an
    exhaustive search, today's rules are complete and clean at the same bounds."""
    from kcheck.invariants.transactions_rows import run_transactions_rows

    return run_transactions_rows()
