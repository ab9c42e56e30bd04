"""The replication model's broker side against Kafka's own `kafka.cluster.Partition` (kafka_2.13,
core/src/main/scala/kafka/cluster/Partition.scala), step by step.

Request word PART, answered on the broker-side bridge (`KafkaBridge(server=True)`) by
`reference/harness/KcheckPartition.java`: one real Partition on broker 1 with a real UnifiedLog in a temporary
folder, set up as Kafka's AbstractPartitionTest does, stepped through a script of ops (grammar in the handler):
become leader or follower, appends, a follower's fetch, maybeShrinkIsr, the AlterPartition answer, the KRaft image
of broker epochs, fencing and controlled shutdown. After every op both sides report the leader and partition
epochs, the committed and maximal ISR, whether a proposal is pending, the high watermark, the log end, each
follower's state as the leader holds it (fetch offset, broker epoch), the AlterPartition sent, whether the broker's
AlterPartitionManager holds one, and the op's error.

Our side is the model's own steps (`model/replication/actions.py`) on a `State` whose broker 1 is the partition's
broker, under `Protocol.current(version)` (whose `partition_epoch_not_older` applies a metadata record with the
partition epoch the leader already holds, as Kafka does): `apply_metadata` for a partition or image record (a new
metadata batch each), `produce`, `handle_fetch` (which records the fetch and
proposes the follower for the ISR), `shrink_isr`,
`handle_alter_partition_response`, and `advance_hw` at the moments Kafka calls maybeIncrementLeaderHW. Where the
model abstracts, the translation says so next to it (docs/models/replication.md, "The broker side against Kafka's
Partition"):
- time: Kafka's clock moves 31 s (replica.lag.time.max.ms + 1 s) before every op, so a follower is caught up for
  maybeShrinkIsr (and for the high watermark's wait for a replica about to join) only at the leader's log end; the
  model has no clock and its shrink is a free choice, so the translation takes Kafka's choice: every ISR follower
  whose fetch offset is not the leader's log end, all at once (the model's `shrink_isr` drops one; several go
  through its own proposal step `_propose`);
- record batches: the model's record is a batch of one, so an append of n records is n appends of one record;
- the fetch response: the model answers with its log from the fetch offset; only the fetch's effect on the leader
  and its error are compared, and fetches carry no last fetched epoch (the model truncates in a step of its own);
- a follower's ISR: Kafka's makeFollower clears it; the model keeps the record's ISR as a belief, not compared;
- a proposal's broker epoch for a member the leader saw no fetch from: Kafka sends -1, the model leaves it out
  (rendered -1).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kcheck.model.replication.actions import (
    Config,
    _propose,
    advance_hw,
    apply_metadata,
    handle_alter_partition_response,
    handle_fetch,
    produce,
    shrink_isr,
)
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import (
    AlterPartition,
    AlterPartitionResponse,
    FetchRequest,
    FetchResponse,
    MetadataRecord,
    Registry,
    Replica,
    State,
    evolve,
)
from kcheck.reference.kafka_bridge import KafkaBridge, compare_drawn, ok_fields, step_answers

LOCAL = 1  # the harness's broker
LOCAL_EPOCH = 10  # its broker epoch (the Partition's localBrokerEpochSupplier)
BROKERS = 4
# Errors codes the AlterPartition answer may carry (none that AlterPartitionManager's caller retries: the model has
# no retry) and the model's names for them.
ALTER_ERRORS = {55: "OPERATION_NOT_ATTEMPTED", 107: "INELIGIBLE_REPLICA", 74: "FENCED_LEADER_EPOCH",
                95: "INVALID_UPDATE_VERSION", 42: "INVALID_REQUEST", 108: "NEW_LEADER_ELECTED",
                3: "UNKNOWN_TOPIC_OR_PARTITION"}
_FETCH_EXCEPTIONS = {"NOT_LEADER_OR_FOLLOWER": "NotLeaderOrFollowerException",
                     "FENCED_LEADER_EPOCH": "FencedLeaderEpochException",
                     "UNKNOWN_LEADER_EPOCH": "UnknownLeaderEpochException",
                     "OFFSET_OUT_OF_RANGE": "OffsetOutOfRangeException"}


@dataclass(frozen=True)
class PartitionCase:
    min_isr: int
    ops: tuple[str, ...]  # the handler's op tokens


def encode_case(case: PartitionCase) -> str:
    return " ".join(["PART", str(case.min_isr), *case.ops])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


def kafka_answers(bridge: KafkaBridge, cases: Sequence[PartitionCase]) -> list[list[str]]:
    return step_answers(bridge, "PART", "Partition", encode_case, cases)


# ---------------------------------------------------------------- our side: the model's steps


def _ints(token: str) -> tuple[int, ...]:
    return () if token == "~" else tuple(int(x) for x in token.split(","))


def _ids(xs: Iterable[int]) -> str:
    return ",".join(map(str, sorted(xs))) or "~"


class _Model:
    """One case on the model: broker 1's replica and the metadata log it applies."""

    def __init__(self, version: str, min_isr: int) -> None:
        self.p = Protocol.current(version)
        big = 10**6
        self.cfg = Config(brokers=BROKERS, min_isr=min_isr, acks=("all", "1"), records=big, isr_shrinks=big,
                          max_leader_epoch=big)
        reg = Registry(broker_epochs=(LOCAL_EPOCH,) * BROKERS)
        reps = tuple(Replica(b, known=False, broker_epoch=LOCAL_EPOCH) for b in range(1, BROKERS + 1))
        self.s = State(replicas=reps, registry=reg, metadata=(MetadataRecord("", reg),))

    @property
    def r(self) -> Replica:
        return self.s.replica(LOCAL)

    def publish(self, reg: Registry) -> None:
        """A new metadata batch, applied by broker 1 through the model's `apply_metadata`."""
        s = evolve(self.s, registry=reg, metadata=self.s.metadata + (MetadataRecord("", reg),))
        self.s = apply_metadata(s, self.p, self.cfg, LOCAL) or s

    def advance(self) -> None:
        """`Partition.maybeIncrementLeaderHW`: Kafka runs it inside makeLeader, an append, a fetch that moved the
        follower's offset and a committed AlterPartition answer; the model's `advance_hw` is a step of its own."""
        self.s = advance_hw(self.s, self.p, self.cfg, LOCAL) or self.s

    def partition(self, fields: list[str], leader: int | None) -> None:
        le, pe = int(fields[0]), int(fields[1])
        if leader is None:  # makeLeader
            isr, replicas = frozenset(_ints(fields[2])), _ints(fields[3])
            leader = LOCAL
        else:  # makeFollower: the harness writes the replicas as the ISR
            replicas = _ints(fields[3])
            isr = frozenset(replicas)
        reg = evolve(self.s.registry, leader=leader, leader_epoch=le, partition_epoch=pe, isr=isr, replicas=replicas)
        self.publish(reg)
        if leader == LOCAL:
            self.advance()

    def image(self, fields: list[str]) -> None:
        epochs = dict(enumerate(self.s.registry.broker_epochs, 1))
        for kv in ("" if fields[0] == "~" else fields[0]).split(","):
            if kv:
                b, e = kv.split("=")
                epochs[int(b)] = int(e)
        reg = evolve(self.s.registry, broker_epochs=tuple(epochs[b] for b in range(1, BROKERS + 1)),
                     fenced=frozenset(_ints(fields[1])), shutting_down=frozenset(_ints(fields[2])))
        self.publish(reg)

    def append(self, fields: list[str]) -> str:
        acks = "all" if fields[1] == "-1" else "1"
        for _ in range(int(fields[0])):  # a model record is a batch of one
            after = produce(self.s, self.p, self.cfg, LOCAL, acks)
            if after is None:
                return "NotLeaderOrFollowerException" if not self.r.is_leader else "NotEnoughReplicasException"
            self.s = after
            self.advance()
        return "-"

    def fetch(self, fields: list[str]) -> str:
        follower, epoch, offset = int(fields[0]), int(fields[1]), int(fields[2])
        current = -1 if fields[3] == "-" else int(fields[3])
        # the fetching process is the incarnation the fetch names, so its answer has a connection to go back on
        self.s = self.s.with_replica(evolve(self.s.replica(follower), broker_epoch=epoch))
        before = self.r.view_of(follower)
        m = FetchRequest(frm=follower, to=LOCAL, offset=offset, current_epoch=current, broker_epoch=epoch)
        after = handle_fetch(evolve(self.s, pool=frozenset({m})), self.p, self.cfg, m)
        assert after is not None  # broker 1 is alive
        (response,) = [x for x in after.pool if isinstance(x, FetchResponse)]
        self.s = after
        if not response.error and self.r.view_of(follower) != before:
            self.advance()
        return _FETCH_EXCEPTIONS[response.error] if response.error else "-"

    def shrink(self) -> None:
        """Kafka's choice (see the module's doc on time): the ISR followers not at the leader's log end."""
        r = self.r
        if not r.is_leader or r.pending_isr is not None or r.in_flight is not None:
            return
        out = [f for f in sorted(r.isr) if f != LOCAL and r.view_of(f) != r.leo]
        if len(out) == 1:
            self.s = shrink_isr(self.s, self.p, self.cfg, LOCAL, out[0]) or self.s
        elif out:
            self.s = _propose(self.s, r, r.isr - frozenset(out))

    def answer(self, op: str) -> None:
        held = self.r.in_flight
        if held is None:
            return
        le, pe, isr, _ = held
        if op[0] == "E":
            m = AlterPartitionResponse(LOCAL, le, pe, isr, ALTER_ERRORS[int(op[1:])], held)
        else:
            dle, dpe, new = op[1:].split(":")
            m = AlterPartitionResponse(LOCAL, le + int(dle), pe + int(dpe), isr if new == "=" else _ints(new), "",
                                       held)
        pending = self.r.pending_isr is not None
        self.s = handle_alter_partition_response(self.s, self.p, self.cfg, m) or self.s
        if pending and self.r.pending_isr is None and not m.error:
            self.advance()  # handleAlterPartitionUpdate committed the ISR

    def step(self, op: str) -> str:
        self.s = evolve(self.s, pool=frozenset())
        kind, fields = op[0], op[1:].split(":")
        error = "-"
        if kind == "L":
            self.partition(fields, None)
        elif kind == "W":
            self.partition(fields, int(fields[2]))
        elif kind == "A":
            error = self.append(fields)
        elif kind == "F":
            error = self.fetch(fields)
        elif kind == "S":
            self.shrink()
        elif kind in "RE":
            self.answer(op)
        elif kind == "I":
            self.image(fields)
        return self.observe(error)

    def observe(self, error: str) -> str:
        r = self.r
        sent = [m for m in self.s.pool if isinstance(m, AlterPartition)]
        text = "~"
        if sent:
            epochs = dict(sent[0].broker_epochs)
            text = f"{sent[0].leader_epoch}/{sent[0].partition_epoch}/" + ";".join(
                f"{b}={epochs.get(b, -1)}" for b in sent[0].isr)
        followers = "~"
        if r.is_leader:
            epochs = dict(r.follower_broker_epoch)
            followers = ",".join(f"{b}={_or_dash(r.view_of(b))}/{_or_dash(epochs.get(b))}"
                                 for b in sorted(r.replicas) if b != LOCAL) or "~"
        isr = r.isr if r.is_leader else frozenset()
        maximal = isr | (r.pending_isr or frozenset()) if r.is_leader else frozenset()
        le, pe = (r.leader_epoch, r.partition_epoch) if r.replicas else (-1, 0)  # no partition state yet
        return (f"{le}:{pe}:{_ids(isr)}:{_ids(maximal)}:{int(r.pending_isr is not None)}:{r.hw}:{r.leo}:"
                f"{followers}:{text}:{int(r.in_flight is not None)}:{error}")


def _or_dash(x: int | None) -> str:
    return "-" if x is None else str(x)


def reference_answers(case: PartitionCase, version: str = "4.4.0") -> list[str]:
    """The model's observation after each op of `case`, in the handler's tokens."""
    model = _Model(version, case.min_isr)
    return [model.step(op) for op in case.ops]


# ---------------------------------------------------------------- random inputs


class _Drawer:
    """Op scripts a real controller and followers could produce: partition epochs that grow with every record, leader
    epochs with every new leader, followers fetching at offsets the leader has written (or one past). After a
    committed AlterPartition answer the next record may be the one that committed it, arriving late with the partition
    epoch the answer already taught the leader."""

    def __init__(self, rng: random.Random, min_isr: int) -> None:
        self.rng = rng
        self.min_isr = min_isr
        self.leading = True
        self.le, self.pe = 1, 1
        self.leo = 0
        self.replicas: tuple[int, ...] = (1, 2, 3, 4)[:max(3, min_isr)]
        self.epochs = {b: LOCAL_EPOCH for b in range(1, BROKERS + 1)}
        self.answered = False  # the last answer committed a partition epoch no record has carried yet

    def image(self) -> str:
        rng = self.rng
        for b in range(2, BROKERS + 1):
            if rng.random() < 0.2:
                self.epochs[b] += 1  # a restart: a new registration
        fenced = [b for b in range(2, BROKERS + 1) if rng.random() < 0.1]
        shutting = [b for b in range(2, BROKERS + 1) if rng.random() < 0.08]
        epochs = ",".join(f"{b}={e}" for b, e in sorted(self.epochs.items()))
        return f"I{epochs}:{_ids(fenced)}:{_ids(shutting)}"

    def partition(self) -> str:
        rng = self.rng
        late, self.answered = self.answered and rng.random() < 0.4, False
        if late and self.leading:  # the record of the answered change: same epochs, the leader still leads
            isr = sorted({1, *(b for b in self.replicas if rng.random() < 0.6)})
            return f"L{self.le}:{self.pe}:{_ids(isr)}:{_ids(self.replicas)}"
        leading = rng.random() >= 0.12
        if rng.random() < 0.25 or not (leading and self.leading):  # KRaft bumps the leader epoch on a new leader
            self.le += 1
        self.pe += 1
        if rng.random() < 0.2:  # fewer replicas than min.insync.replicas included (the leader caps it)
            n = rng.randint(0, BROKERS - 1)
            self.replicas = tuple(sorted({1, *rng.sample(range(2, BROKERS + 1), n)}))
        self.leading = leading
        if not leading:
            leader = rng.choice([b for b in range(2, BROKERS + 1)])
            return f"W{self.le}:{self.pe}:{leader}:{_ids(self.replicas)}"
        isr = sorted({1, *(b for b in self.replicas if rng.random() < 0.6)})
        return f"L{self.le}:{self.pe}:{_ids(isr)}:{_ids(self.replicas)}"

    def fetch(self) -> str:
        rng = self.rng
        follower = rng.choice(self.replicas[1:] or (2,)) if rng.random() < 0.9 else rng.randint(2, BROKERS)
        epoch = self.epochs[follower] + (0 if rng.random() < 0.85 else rng.choice((-1, 1)))
        offset = min(self.leo, rng.choice((self.leo, self.leo, rng.randint(0, self.leo), self.leo + 1)))
        if rng.random() < 0.04:
            offset = self.leo + 1
        current = rng.choice((str(self.le),) * 8 + (str(self.le - 1), str(self.le + 1), "-"))
        return f"F{follower}:{epoch}:{offset}:{current}"

    def answer(self) -> str:
        rng = self.rng
        if rng.random() < 0.3:
            return f"E{rng.choice(list(ALTER_ERRORS))}"
        r = rng.random()
        if r < 0.75:
            self.pe += 1
            self.answered = True
            return "R0:1:="
        return rng.choice(("R0:0:=", "R1:1:=", "R0:-1:=", "R-1:1:="))

    def op(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return self.fetch()
        if r < 0.5:
            n = rng.randint(1, 3)
            self.leo += n  # an upper bound: a refused append writes nothing
            return f"A{n}:{rng.choice((-1, -1, 1))}"
        if r < 0.65:
            return self.answer()
        if r < 0.75:
            return "S"
        if r < 0.9:
            return self.partition()
        return self.image()


def random_case(rng: random.Random, max_ops: int = 16) -> PartitionCase:
    min_isr = rng.choice((1, 2, 2, 3))
    d = _Drawer(rng, min_isr)
    ops = [d.image(), d.partition()]
    ops += [d.op() for _ in range(rng.randint(1, max_ops))]
    return PartitionCase(min_isr, tuple(ops))


def compare_random(bridge: KafkaBridge, rng: random.Random, steps: int) -> tuple[int, int, str]:
    """Random scripts of about `steps` ops through Kafka's Partition and the model (a broker-side bridge):
    (ops compared, ops that differ, the smallest differing script with its first differing op's answers)."""
    version = bridge.version
    return compare_drawn(lambda: random_case(rng), steps, lambda cases: kafka_answers(bridge, cases),
                         lambda case: reference_answers(case, version), encode_case, "op")
