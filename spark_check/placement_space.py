"""The placement space: every cluster, topic and random draw within bounds, as one indexable sequence.

A configuration is (placer, brokers, rack layout, partitions, replication factor,
draws). Brokers are ids 0..n-1 in that order; a rack layout is none, or a split of
the brokers into k contiguous racks named a, b, ... (`invariants.exhaustive.rack_layouts`,
which says why contiguous splits cover every layout of Kafka's placers). The draws
are AdminUtils' two `nextInt(n)` results, start index and follower shift, every
value of each; a placer without a start index (the striped one) gets
`java.util.Random` seeds 0..seeds-1 instead.

Ids run placer by placer, then by broker count, rack layout (no racks, then
fewer racks first), partitions, replication factor, start index, shift: the
smallest violating id of an invariant is its smallest counterexample, in the
order `kcheck prove` uses. The space holds only its bounds and placer names, so
it pickles small for Spark; lookup tables are built on first use in each process.

`evaluate` runs AdminUtils through its NumPy twin (`spark_check.vector`), the
striped placer through the reference with the invariants vectorised, and a
user's placer through the scalar reference and `check_placement`, one
configuration at a time. `evaluate_scalar` is the plain reference path for any
placer: the twin tests compare the two.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from kcheck.invariants import BalanceSettings, PlacementSubject, Severity, check_placement, invariants_for
from kcheck.invariants.exhaustive import rack_layouts
from kcheck.invariants.prover import RACK_NAMES, seed_for_draws
from kcheck.invariants.registry import Violation, fails_when_violated
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.reference.errors import KafkaError
from kcheck.reference.java import JavaRandom
from kcheck.reference.placement import assign_replicas_to_brokers, rack_alternated_broker_list
from kcheck.reference.placers import BUILTIN_PLACERS, PlacerInfo, resolve_placer, striped_assign
from kcheck.spark_check import vector
from kcheck.spark_check.batch import BatchResult, FirstViolation

PLACER_ERROR = "placement.placer-error"  # a user's placer raised or returned no valid placement
METRICS = ("leader-skew", "replica-skew", "rack-spread", "moved-partitions")
MAX_BROKERS = 63  # broker sets are uint64 bit masks in the vectorised path
TOPIC = "topic"


@dataclass(frozen=True)
class PlacementBounds:
    """Inclusive ranges of each dimension; racks 0 means "no racks" (brokers without `broker.rack`)."""

    brokers: tuple[int, int] = (1, 12)
    racks: tuple[int, int] = (0, 4)
    partitions: tuple[int, int] = (1, 32)
    rf: tuple[int, int] = (1, 4)
    seeds: int = 16  # java.util.Random seeds 0..seeds-1, for placers without a start index

    def __post_init__(self) -> None:
        for name, lo, hi, top in (("brokers", *self.brokers, MAX_BROKERS), ("racks", *self.racks, len(RACK_NAMES)),
                                  ("partitions", *self.partitions, 100_000), ("rf", *self.rf, MAX_BROKERS)):
            low = 0 if name == "racks" else 1
            if not low <= lo <= hi <= top:
                raise ValueError(f"{name}={lo}..{hi} is not a range within {low}..{top}")
        if self.seeds < 1:
            raise ValueError(f"seeds={self.seeds} must be at least 1")

    def text(self) -> str:
        def rng(r: tuple[int, int]) -> str:
            return str(r[0]) if r[0] == r[1] else f"{r[0]}..{r[1]}"

        return (f"brokers={rng(self.brokers)},racks={rng(self.racks)},partitions={rng(self.partitions)},"
                f"rf={rng(self.rf)},seeds={self.seeds}")

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


PLACEMENT_PRESETS: dict[str, PlacementBounds] = {
    "small": PlacementBounds(brokers=(1, 5), racks=(0, 3), partitions=(1, 6), rf=(1, 3), seeds=4),
    "default": PlacementBounds(),
    "large": PlacementBounds(brokers=(1, 16), racks=(0, 5), partitions=(1, 48), rf=(1, 5), seeds=64),
}

_KEYS = {"brokers": "brokers", "racks": "racks", "partitions": "partitions", "rf": "rf",
         "replication-factor": "rf", "seeds": "seeds"}


def parse_placement_bounds(text: str) -> PlacementBounds:
    """`small`, `default`, `large`, or `[preset,]key=lo..hi,...` (keys brokers, racks, partitions, rf, seeds).

    Overrides start from the preset named first, else from `default`. Raises
    ValueError with one line that names the offending part.
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError("empty space (expected small, default, large, or bounds such as brokers=1..6,rf=1..3)")
    base = PLACEMENT_PRESETS["default"]
    if "=" not in parts[0]:
        if parts[0] not in PLACEMENT_PRESETS:
            raise ValueError(f"unknown preset '{parts[0]}' (expected {', '.join(PLACEMENT_PRESETS)}, or bounds "
                             "such as brokers=1..6,racks=0..3,partitions=1..8,rf=1..3,seeds=8)")
        base = PLACEMENT_PRESETS[parts.pop(0)]
    values: dict[str, Any] = {}
    for part in parts:
        key, _, value = part.partition("=")
        field_name = _KEYS.get(key.strip())
        if field_name is None:
            raise ValueError(f"'{part}': unknown bound '{key}' (expected brokers, racks, partitions, rf, seeds)")
        lo, sep, hi = value.partition("..")
        try:
            rng = (int(lo), int(hi) if sep else int(lo))
        except ValueError:
            raise ValueError(f"'{part}': expected {key}=N or {key}=LO..HI with integers") from None
        if field_name == "seeds":
            if sep:
                raise ValueError(f"'{part}': seeds is a count (seeds 0..N-1), not a range")
            values["seeds"] = rng[0]
        else:
            values[field_name] = rng
    return replace(base, **values)


class SweepDraws(JavaRandom):
    """A `java.util.Random` whose first two bounded draws are a given start index and shift.

    AdminUtils draws exactly these two (`nextInt(n)` twice, start first); a placer
    that draws more gets the rest from `java.util.Random(0)`.
    """

    def __init__(self, start_index: int, shift: int) -> None:
        super().__init__(0)
        self.forced = [shift, start_index]  # popped from the end

    def next_int(self, bound: int | None = None) -> int:
        if bound is not None and self.forced:
            return self.forced.pop() % bound
        return super().next_int(bound)


def _racks_text(sizes: tuple[int, ...] | None) -> str:
    return "none" if sizes is None else ",".join(f"{RACK_NAMES[r]}={s}" for r, s in enumerate(sizes))


@dataclass(frozen=True)
class PlacementConfig:
    """One configuration: a placer, a cluster, a topic and the placer's random draws."""

    placer: str
    brokers: int
    rack_sizes: tuple[int, ...] | None  # brokers 0.. fill rack a, then b, ...; None: no racks
    partitions: int
    rf: int
    start_index: int = -1  # placers with a start index: AdminUtils' two draws
    shift: int = -1
    seed: int = -1  # placers without one: the java.util.Random seed

    @cached_property
    def rack_map(self) -> dict[int, str]:
        if self.rack_sizes is None:
            return {}
        names = [RACK_NAMES[r] for r, size in enumerate(self.rack_sizes) for _ in range(size)]
        return dict(enumerate(names))

    def cluster(self) -> Cluster:
        return Cluster.of(range(self.brokers), self.rack_map)

    def grown(self) -> PlacementConfig:
        """The same topic and draws on one more broker (id n, in the last rack): what `--generate` re-places."""
        sizes = None if self.rack_sizes is None else (*self.rack_sizes[:-1], self.rack_sizes[-1] + 1)
        return replace(self, brokers=self.brokers + 1, rack_sizes=sizes)

    def random(self) -> JavaRandom:
        return JavaRandom(self.seed) if self.seed >= 0 else SweepDraws(self.start_index, self.shift)

    def place(self, info: PlacerInfo | None = None) -> dict[int, list[int]]:
        info = info or resolve_placer(self.placer)
        return info.place(list(self.cluster().brokers), self.partitions, self.rf, -1, -1, self.random())

    def replay(self) -> str:
        """The `kcheck place` command that makes this placement."""
        placer = self.placer
        if placer.startswith("jvm:"):  # a Java placer: with the --classpath that finds it
            from kcheck.reference.jvm_plugins import replay_name

            placer = replay_name(placer)
        cmd = f"kcheck place --placer {placer} --brokers {','.join(map(str, range(self.brokers)))}"
        if self.rack_map:
            cmd += " --racks " + ",".join(f"{b}:{r}" for b, r in self.rack_map.items())
        cmd += f" --partitions {self.partitions} --replication-factor {self.rf}"
        if self.seed >= 0:
            return cmd + f" --seed {self.seed}"
        if self.start_index == self.shift and self.placer == "adminutils":
            return cmd + f" --start-index {self.start_index}"
        seed = seed_for_draws(self.brokers, self.start_index, self.shift, limit=200_000)
        if seed is not None:
            info = resolve_placer(self.placer)
            brokers = list(self.cluster().brokers)
            try:
                if info.place(brokers, self.partitions, self.rf, -1, -1, JavaRandom(seed)) == self.place(info):
                    return cmd + f" --seed {seed}"
            except Exception as e:  # noqa: BLE001 - a user's placer that raises: the seed replays that
                if self.placer != "adminutils":
                    return cmd + f" --seed {seed}  # raises {type(e).__name__}"
        return cmd + f"  # no java.util.Random seed found that draws start {self.start_index}, shift {self.shift}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"placer": self.placer, "brokers": self.brokers, "racks": _racks_text(self.rack_sizes),
                               "partitions": self.partitions, "replication_factor": self.rf}
        if self.seed >= 0:
            out["seed"] = self.seed
        else:
            out.update(start_index=self.start_index, shift=self.shift)
        out["replay"] = self.replay()
        return out

    def short(self) -> str:
        draws = f"seed {self.seed}" if self.seed >= 0 else f"start {self.start_index} shift {self.shift}"
        return (f"{self.brokers} brokers, racks {_racks_text(self.rack_sizes)}, {self.partitions} partitions, "
                f"RF {self.rf}, {draws}")


# --- scalar reference path --------------------------------------------------------------------------------------


def rack_spread(cluster: Cluster, placement: Mapping[int, Sequence[int]]) -> int:
    """Largest gap, within one partition, between its fullest and emptiest rack (0 or 1 is an even split)."""
    racks = cluster.racks
    rack_of = cluster.rack_map
    worst = 0
    for reps in placement.values():
        per = {r: 0 for r in racks}
        for b in reps:
            per[rack_of[b]] += 1
        worst = max(worst, max(per.values()) - min(per.values()))
    return worst


def moved_partitions(before: Mapping[int, Sequence[int]], after: Mapping[int, Sequence[int]]) -> int:
    """Partitions whose replica set differs (leader order aside): the data a reassignment would copy."""
    return sum(sorted(reps) != sorted(after.get(p, ())) for p, reps in before.items())


def skews(cluster: Cluster, placement: Mapping[int, Sequence[int]]) -> tuple[int, int]:
    """(leader skew, replica skew): max - min preferred leaders, and replicas, over the cluster's brokers."""
    from kcheck.invariants.optimal import metrics

    m = metrics(cluster, {p: list(replicas) for p, replicas in placement.items()})
    return m.leader_spread, m.replica_spread


@dataclass
class ScalarOutcome:
    report_checked: tuple[str, ...]
    violations: dict[str, list[Violation]]  # invariant id -> its violations, in the report's order
    metrics: dict[str, int]
    error: str | None = None


def scalar_outcome(cfg: PlacementConfig, info: PlacerInfo, settings: BalanceSettings) -> ScalarOutcome:
    """Place and check one configuration through the reference and the registry's scalar checks."""
    cluster = cfg.cluster()
    # Kafka's placers raise only Kafka's exceptions on purpose (anything else is a bug in the reference and
    # propagates); a user's placer may raise anything, which is that placer's error.
    expected = KafkaError if BUILTIN_PLACERS.get(cfg.placer) is info else Exception
    try:
        placement = cfg.place(info)
        assignment = ReplicaAssignment.from_placement(TOPIC, placement)
    except expected as e:
        return ScalarOutcome((), {}, {}, f"{type(e).__name__}: {e}")
    report = check_placement(PlacementSubject(cluster, assignment, settings, replication_factor=cfg.rf))
    by_id: dict[str, list[Violation]] = {}
    for v in report.violations:
        by_id.setdefault(v.invariant, []).append(v)
    leader, replica = skews(cluster, placement)
    metrics = {"leader-skew": leader, "replica-skew": replica}
    if cluster.rack_layout == "full":
        metrics["rack-spread"] = rack_spread(cluster, placement)
    grown = cfg.grown()
    try:
        again = grown.place(info)
    except expected:  # the placer refuses the grown cluster (one broker more): no moved-partitions metric
        again = None
    if again is not None:
        metrics["moved-partitions"] = moved_partitions(placement, again)
    return ScalarOutcome(report.checked, by_id, metrics)


@dataclass(frozen=True)
class PlacementInvariant:
    """What a result key `"<placer>/<invariant>"` stands for."""

    key: str
    placer: str
    invariant: str
    severity: str  # the registry's ("hard" or "soft"); a placer error is hard
    guaranteed: bool  # Kafka documents or tests it for this placer (PlacerInfo.guarantees)
    kafkas_own: bool = False  # one of Kafka's placers (not a user's)

    @property
    def fails(self) -> bool:
        """Whether a violation fails the sweep: `registry.fails_when_violated`, the rule `kcheck check` uses too;
        any other violation is a finding about the placer."""
        return fails_when_violated(self.severity, self.guaranteed, self.kafkas_own)


# --- the space ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Block:
    """The ids of one (placer, broker count): layouts x partitions x RFs x draws, in that order."""

    placer_index: int
    n: int
    base: int
    layouts: tuple[tuple[int, ...] | None, ...]
    rfs: tuple[int, ...]
    draws: int  # n*n (start index, shift) or the seed count
    partition_count: int

    @property
    def per_layout(self) -> int:
        return self.partition_count * len(self.rfs) * self.draws

    @property
    def size(self) -> int:
        return len(self.layouts) * self.per_layout


def layouts_for(n: int, racks: tuple[int, int]) -> list[tuple[int, ...] | None]:
    """Rack layouts of n brokers with racks[0]..racks[1] racks (0: none), in `rack_layouts` order, as rack sizes."""
    out: list[tuple[int, ...] | None] = []
    for layout in rack_layouts(n, racks[1], labelled=False):
        if layout is None:
            if racks[0] == 0:
                out.append(None)
            continue
        sizes = tuple(list(layout.values()).count(name) for name in sorted(set(layout.values())))
        if len(sizes) >= max(1, racks[0]):
            out.append(sizes)
    return out


class PlacementSpace:
    """Every placement configuration within `bounds`, for each placer (AdminUtils by default)."""

    name = "placement"

    def __init__(self, bounds: PlacementBounds | None = None, placers: Sequence[str] | None = None,
                 settings: BalanceSettings | None = None) -> None:
        self.bounds = bounds or PLACEMENT_PRESETS["default"]
        self.placers = tuple(placers or ("adminutils",))
        if len(set(self.placers)) != len(self.placers):
            raise ValueError(f"placer listed twice in {', '.join(self.placers)}")
        self.settings = settings or BalanceSettings()
        for name in self.placers:
            resolve_placer(name)  # fail early, on the driver, with one line

    # Pickle only the bounds and names: Spark ships the space to every task.
    def __getstate__(self) -> dict[str, Any]:
        from kcheck.reference.jvm_plugins import travel  # jvm:<class> placers: the classpath goes along

        return {"bounds": self.bounds, "placers": self.placers, "settings": self.settings, **travel(self.placers)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "jvm" in state:  # on a Spark worker: its own bridge, with the driver's classpath and release
            from kcheck.reference.jvm_plugins import arrive

            arrive(state)
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"PlacementSpace({self.bounds.text()}, placers={','.join(self.placers)})"

    @cached_property
    def _infos(self) -> tuple[PlacerInfo, ...]:
        return tuple(resolve_placer(p) for p in self.placers)

    @cached_property
    def _blocks(self) -> list[_Block]:
        b = self.bounds
        blocks: list[_Block] = []
        base = 0
        for pi, info in enumerate(self._infos):
            for n in range(b.brokers[0], b.brokers[1] + 1):
                rfs = tuple(range(b.rf[0], min(b.rf[1], n) + 1))
                layouts = tuple(layouts_for(n, b.racks))
                block = _Block(pi, n, base, layouts, rfs, n * n if info.has_start_index else b.seeds,
                               b.partitions[1] - b.partitions[0] + 1)
                if block.size:
                    blocks.append(block)
                    base += block.size
        return blocks

    @cached_property
    def _bases(self) -> list[int]:
        return [blk.base for blk in self._blocks]

    @cached_property
    def _size(self) -> int:
        return sum(blk.size for blk in self._blocks)

    def __len__(self) -> int:
        return self._size

    def invariant_ids(self) -> list[str]:
        ids = [inv.id for inv in invariants_for("placement")]
        return [f"{name}/{i}" for name in self.placers for i in [PLACER_ERROR, *ids]]

    def metric_names(self) -> list[str]:
        return [f"{p}/{m}" for p in self.placers for m in METRICS]

    def invariant_info(self, key: str) -> PlacementInvariant:
        """What a result key `"<placer>/<invariant>"` stands for, and whether its violation fails the sweep."""
        from kcheck.invariants import REGISTRY

        placer, _, inv = key.partition("/")
        if placer not in self.placers or (inv not in REGISTRY and inv != PLACER_ERROR):
            raise KeyError(f"unknown placement-space invariant key '{key}'")
        severity = REGISTRY[inv].severity if inv in REGISTRY else Severity.HARD
        guaranteed = inv in self._infos[self.placers.index(placer)].guarantees or inv == PLACER_ERROR
        return PlacementInvariant(key, placer, inv, str(severity), guaranteed, placer in BUILTIN_PLACERS)

    def _locate(self, config_id: int) -> tuple[_Block, int, int, int, int]:
        """(block, layout index, partitions, rf, draw) of an id."""
        if not 0 <= config_id < len(self):
            raise IndexError(f"configuration {config_id} is outside 0..{len(self) - 1}")
        blk = self._blocks[bisect.bisect_right(self._bases, config_id) - 1]
        rest = config_id - blk.base
        layout, rest = divmod(rest, blk.per_layout)
        p, rest = divmod(rest, len(blk.rfs) * blk.draws)
        rf, d = divmod(rest, blk.draws)
        return blk, layout, self.bounds.partitions[0] + p, blk.rfs[rf], d

    def __getitem__(self, config_id: int) -> PlacementConfig:
        blk, layout, partitions, rf, d = self._locate(config_id)
        placer = self.placers[blk.placer_index]
        sizes = blk.layouts[layout]
        if self._infos[blk.placer_index].has_start_index:
            return PlacementConfig(placer, blk.n, sizes, partitions, rf, start_index=d // blk.n, shift=d % blk.n)
        return PlacementConfig(placer, blk.n, sizes, partitions, rf, seed=d)

    def index(self, cfg: PlacementConfig) -> int:
        """The id of a configuration (the inverse of `space[i]`); ValueError when it is not in the space."""
        for blk in self._blocks:
            if self.placers[blk.placer_index] != cfg.placer or blk.n != cfg.brokers:
                continue
            has_start = self._infos[blk.placer_index].has_start_index
            draw = cfg.start_index * blk.n + cfg.shift if has_start else cfg.seed
            p = cfg.partitions - self.bounds.partitions[0]
            if (cfg.rack_sizes in blk.layouts and cfg.rf in blk.rfs and 0 <= p < blk.partition_count
                    and 0 <= draw < blk.draws and (not has_start or 0 <= cfg.shift < blk.n)):
                return (blk.base + blk.layouts.index(cfg.rack_sizes) * blk.per_layout
                        + (p * len(blk.rfs) + blk.rfs.index(cfg.rf)) * blk.draws + draw)
        raise ValueError(f"{cfg.short()} ({cfg.placer}) is not in the space {self.bounds.text()}")

    def __iter__(self) -> Iterator[PlacementConfig]:
        return (self[i] for i in range(len(self)))

    # --- evaluation -----------------------------------------------------------------------------------------

    def scalar(self, config_id: int) -> ScalarOutcome:
        """One configuration through the reference placer and `check_placement`: the row-at-a-time path."""
        cfg = self[config_id]
        return scalar_outcome(cfg, self._infos[self.placers.index(cfg.placer)], self.settings)

    def _first(self, config_id: int, invariant: str, outcome: ScalarOutcome | None = None) -> FirstViolation:
        cfg = self[config_id]
        outcome = outcome or self.scalar(config_id)
        if invariant == PLACER_ERROR:
            return FirstViolation(config_id, cfg.describe(), f"placer {cfg.placer}", outcome.error or "", {})
        found = outcome.violations.get(invariant)
        if not found:  # the vectorised twin disagrees with the reference: never report a violation we cannot show
            raise AssertionError(f"vectorised and scalar paths disagree on {invariant} at configuration {config_id} "
                                 f"({cfg.short()})")
        v = found[0]
        return FirstViolation(config_id, cfg.describe(), v.where, v.message, dict(v.detail))

    def _add_scalar(self, out: BatchResult, config_id: int, cfg: PlacementConfig, outcome: ScalarOutcome) -> None:
        key = f"{cfg.placer}/{PLACER_ERROR}"
        out.checked[key] += 1  # applies to every configuration: the per-placer count of configurations
        if outcome.error is not None:
            if key not in out.first or config_id < out.first[key].config_id:
                out.add_violation(key, self._first(config_id, PLACER_ERROR, outcome))
            else:
                out.violated[key] += 1
            return
        for inv in outcome.report_checked:
            out.checked[f"{cfg.placer}/{inv}"] += 1
        for inv in outcome.violations:
            key = f"{cfg.placer}/{inv}"
            if key not in out.first or config_id < out.first[key].config_id:
                out.add_violation(key, self._first(config_id, inv, outcome))
            else:
                out.violated[key] += 1
        for name, value in outcome.metrics.items():
            out.add_metric(f"{cfg.placer}/{name}", value)

    def _complete(self, out: BatchResult) -> BatchResult:
        """Every invariant of every placer the range touches gets a counter, zero when it never applied."""
        for blk in self._blocks:
            if blk.base < out.stop and out.start < blk.base + blk.size:
                placer = self.placers[blk.placer_index]
                for key in self.invariant_ids():
                    if key.startswith(placer + "/"):
                        out.checked[key] += 0
        return out

    def evaluate_scalar(self, start: int, stop: int) -> BatchResult:
        """Every configuration of [start, stop) through the reference placer and `check_placement`, one by one."""
        out = BatchResult(start, stop)
        for i in range(start, stop):
            cfg = self[i]
            info = self._infos[self.placers.index(cfg.placer)]
            self._add_scalar(out, i, cfg, scalar_outcome(cfg, info, self.settings))
        return self._complete(out)

    def evaluate(self, start: int, stop: int) -> BatchResult:
        """Every configuration of [start, stop), by the fastest exact path for each placer."""
        start, stop = max(0, start), min(stop, len(self))
        out = BatchResult(start, stop)
        firsts: dict[str, int] = {}
        for blk in self._blocks:
            lo, hi = max(start, blk.base), min(stop, blk.base + blk.size)
            if lo >= hi:
                continue
            info = self._infos[blk.placer_index]
            if _path(info) == "scalar":
                for i in range(lo, hi):
                    cfg = self[i]
                    self._add_scalar(out, i, cfg, scalar_outcome(cfg, info, self.settings))
            else:
                self._evaluate_vector(out, firsts, blk, info, lo, hi)
        for key, config_id in firsts.items():
            inv = key.split("/", 1)[1]
            out.first[key] = self._first(config_id, inv)
        return self._complete(out)

    def _evaluate_vector(self, out: BatchResult, firsts: dict[str, int], blk: _Block, info: PlacerInfo,
                         lo: int, hi: int) -> None:
        b = self.bounds
        placer = self.placers[blk.placer_index]
        p_lo, p_hi = b.partitions
        first_layout = (lo - blk.base) // blk.per_layout
        last_layout = (hi - 1 - blk.base) // blk.per_layout
        # Layouts with the same rack count share array shapes; chunks keep arrays near a few million cells.
        chunk = max(1, vector.LANES // (blk.draws * p_hi * max(blk.n, 2)))
        li = first_layout
        while li <= last_layout:
            k = _rack_count(blk.layouts[li])
            lj = li
            while lj + 1 <= last_layout and lj + 1 - li < chunk and _rack_count(blk.layouts[lj + 1]) == k:
                lj += 1
            layouts = blk.layouts[li:lj + 1]
            batch = _Layouts.of(blk.n, layouts)
            grown = _Layouts.of(blk.n + 1, [None if s is None else (*s[:-1], s[-1] + 1) for s in layouts])
            placements = _Placements(info, blk, batch, grown, p_hi)
            for rf_index, rf in enumerate(blk.rfs):
                reps, grown_reps = placements.replicas(rf)
                checks = vector.check_placements(reps, blk.n, batch.rack_of, batch.sizes, self.settings, grown_reps)
                # ids of (layout, draw, partitions) for this rf: the arrays' axis order
                ids = (blk.base + (li + np.arange(len(layouts)))[:, None, None] * blk.per_layout
                       + (np.arange(p_hi)[None, None, :] - (p_lo - 1)) * (len(blk.rfs) * blk.draws)
                       + rf_index * blk.draws + np.arange(blk.draws)[None, :, None])
                mask = (ids >= lo) & (ids < hi)
                mask[:, :, :p_lo - 1] = False
                in_range = int(mask.sum())
                if not in_range:
                    continue
                out.checked[f"{placer}/{PLACER_ERROR}"] += in_range  # Kafka's placers cannot fail in the space
                for inv, (applies, violated) in checks.invariants.items():
                    key = f"{placer}/{inv}"
                    if not applies:
                        continue
                    out.checked[key] += in_range
                    hit = violated & mask
                    count = int(hit.sum())
                    if count:
                        out.violated[key] += count
                        smallest = int(ids[hit].min())
                        if key not in firsts or smallest < firsts[key]:
                            firsts[key] = smallest
                for name, values in checks.metrics.items():
                    hist = np.bincount(values[mask].ravel())
                    for value in np.nonzero(hist)[0]:
                        out.add_metric(f"{placer}/{name}", int(value), int(hist[value]))
            li = lj + 1


def _rack_count(sizes: tuple[int, ...] | None) -> int:
    return 0 if sizes is None else len(sizes)


def _path(info: PlacerInfo) -> str:
    if info.place is assign_replicas_to_brokers:
        return "vector"
    if info.place is striped_assign:
        return "hybrid"
    return "scalar"


@dataclass(frozen=True)
class _Layouts:
    """Rack layouts of one broker count with one rack count, as arrays."""

    n: int
    k: int
    rack_of: np.ndarray  # (L, n) rack index of each broker; zeros without racks
    sizes: np.ndarray  # (L, k) brokers per rack
    arranged: np.ndarray  # (L, n) AdminUtils' rack-alternated broker list (brokers in order without racks)
    layouts: tuple[tuple[int, ...] | None, ...] = field(default=())

    @classmethod
    def of(cls, n: int, layouts: Sequence[tuple[int, ...] | None]) -> _Layouts:
        k = _rack_count(layouts[0])
        rack_of = np.zeros((len(layouts), n), dtype=np.int64)
        sizes = np.zeros((len(layouts), k), dtype=np.int64)
        arranged = np.tile(np.arange(n, dtype=np.int64), (len(layouts), 1))
        for i, layout in enumerate(layouts):
            if layout is None:
                continue
            rack_of[i] = np.repeat(np.arange(k), layout)
            sizes[i] = layout
            arranged[i] = rack_alternated_broker_list({b: RACK_NAMES[r] for b, r in enumerate(rack_of[i])})
        return cls(n, k, rack_of, sizes, arranged, tuple(layouts))


class _Placements:
    """Replica arrays (layout, draw, partition, replica) of a chunk of layouts, for each replication factor."""

    def __init__(self, info: PlacerInfo, blk: _Block, batch: _Layouts, grown: _Layouts, partitions: int) -> None:
        self.info, self.blk, self.batch, self.grown, self.partitions = info, blk, batch, grown, partitions
        self._adminutils: tuple[np.ndarray, np.ndarray] | None = None

    def replicas(self, rf: int) -> tuple[np.ndarray, np.ndarray]:
        if _path(self.info) == "vector":
            # AdminUtils places each replica without looking at later ones: RF r is the first r of RF max.
            if self._adminutils is None:
                n, top = self.blk.n, self.blk.rfs[-1]
                d = np.arange(n * n)
                starts, shifts = d // n, d % n
                self._adminutils = (
                    vector.adminutils_replicas(self.batch.arranged, self.batch.rack_of, self.batch.k, starts, shifts,
                                               self.partitions, top),
                    vector.adminutils_replicas(self.grown.arranged, self.grown.rack_of, self.grown.k, starts, shifts,
                                               self.partitions, top),
                )
            reps, grown = self._adminutils
            return reps[..., :rf], grown[..., :rf]
        return self._reference(self.batch, rf), self._reference(self.grown, rf)

    def _reference(self, layouts: _Layouts, rf: int) -> np.ndarray:
        """The placer itself, once per (layout, seed) with the most partitions: its placements are prefix-stable."""
        out = np.empty((len(layouts.layouts), self.blk.draws, self.partitions, rf), dtype=np.int64)
        for i, sizes in enumerate(layouts.layouts):
            brokers = list(PlacementConfig("", layouts.n, sizes, 1, rf).cluster().brokers)
            for seed in range(self.blk.draws):
                placed = self.info.place(brokers, self.partitions, rf, -1, -1, JavaRandom(seed))
                out[i, seed] = [placed[p] for p in range(self.partitions)]
        return out


def space_size_table(bounds: PlacementBounds, placers: Sequence[str] = ("adminutils",)) -> dict[str, int]:
    """Configurations per placer (for the README and `kcheck sweep`)."""
    return {p: len(PlacementSpace(bounds, [p])) for p in placers}
