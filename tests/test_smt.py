"""Z3 twins against the concrete reference, Z3 invariant forms against the scalar checks, and the prover."""

import random

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from kcheck.invariants import smt
from kcheck.invariants.exhaustive import check_exhaustively, every_draw
from kcheck.invariants.optimal import metrics, optimal_metrics
from kcheck.invariants.placement import BalanceSettings, PlacementSubject
from kcheck.invariants.prover import Bounds, prove, prove_distinct_brokers_unbounded
from kcheck.invariants.registry import check_all
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.model.smt import rack_aware_twin, rack_unaware_closed_form, rack_unaware_remainders, rack_unaware_twin
from kcheck.model.smt.common import SymbolicPlacement
from kcheck.reference.java import JavaRandom
from kcheck.reference.placement import assign_replicas_to_brokers, rack_alternated_broker_list
from kcheck.reference.placers import BUILTIN_PLACERS


class Draws(JavaRandom):
    """A java.util.Random that returns given nextInt results: AdminUtils draws start index, then shift."""

    def __init__(self, *draws):
        self.draws = list(draws)

    def next_int(self, bound=None):
        return self.draws.pop(0)


def value(e):
    return z3.simplify(e).as_long() if not isinstance(e, int) else e


@given(n=st.integers(1, 8), parts=st.integers(1, 12), rf=st.integers(1, 8), data=st.data())
@settings(max_examples=40)
def test_rack_unaware_twin_matches_reference(n, parts, rf, data):
    rf = min(rf, n)
    start, shift = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    twin = rack_unaware_twin(n, parts, rf, z3.IntVal(start), z3.IntVal(shift))
    ref = assign_replicas_to_brokers(list(Cluster.of(range(n)).brokers), parts, rf, random=Draws(start, shift))
    assert [[value(e) for e in row] for row in twin.replicas] == [ref[p] for p in range(parts)]


@given(n=st.integers(2, 9), rf=st.integers(1, 9), start=st.integers(0, 40), pid0=st.integers(0, 40),
       parts=st.integers(1, 20))
@settings(max_examples=40)
def test_closed_form_over_symbolic_sizes_matches_reference(n, rf, start, pid0, parts):
    # fixed start index: start = shift; adding partitions from pid0
    rf = min(rf, n)
    ref = assign_replicas_to_brokers(list(Cluster.of(range(n)).brokers), parts, rf, start, pid0)
    for pid, replicas in ref.items():
        got = [value(rack_unaware_closed_form(z3.IntVal(n), z3.IntVal(pid0), z3.IntVal(start), z3.IntVal(start),
                                              z3.IntVal(pid), z3.IntVal(r))) for r in range(rf)]
        assert got == replicas
        # the linear form, given the two remainders of this partition
        shift = start + pid // n - (max(pid0, 1) - 1) // n
        lin = [value(rack_unaware_remainders(z3.IntVal(n), z3.IntVal((pid + start) % n),
                                             z3.IntVal(shift % (n - 1)), z3.IntVal(r))[0]) for r in range(rf)]
        assert lin == replicas


@given(n=st.integers(1, 7), parts=st.integers(1, 8), rf=st.integers(1, 7), data=st.data())
@settings(max_examples=30)
def test_rack_aware_twin_matches_reference(n, parts, rf, data):
    rf = min(rf, n)
    k = data.draw(st.integers(1, n))
    racks = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n).filter(lambda r: len(set(r)) == k))
    start, shift = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    rack_map = {b: "abcdefg"[racks[b]] for b in range(n)}
    sizes = [z3.IntVal(racks.count(q)) for q in range(k)]
    twin = rack_aware_twin(n, parts, rf, k, sizes, z3.IntVal(start), z3.IntVal(shift))
    arranged = rack_alternated_broker_list(rack_map)  # the twin names brokers by their place in this list
    ref = assign_replicas_to_brokers(list(Cluster.of(range(n), rack_map).brokers), parts, rf,
                                     random=Draws(start, shift))
    assert [[arranged[value(e)] for e in row] for row in twin.replicas] == [ref[p] for p in range(parts)]
    assert [value(r) for r in twin.rack_of] == ["abcdefg".index(rack_map[b]) for b in arranged]


def test_rack_aware_twin_solved_with_symbolic_sizes():
    # Z3 picks the layout: ask for racks of sizes 2 and 1 and check it reproduces Kafka's placement.
    twin = rack_aware_twin(3, 3, 2, 2)
    solver = z3.Solver()
    solver.add(*twin.constraints, twin.params["rack_size_0"] == 2, twin.params["start"] == 0,
               twin.params["shift"] == 0)
    assert solver.check() == z3.sat
    model = solver.model()
    got = [[model.eval(e).as_long() for e in row] for row in twin.replicas]
    rack_map = {0: "a", 1: "a", 2: "b"}
    arranged = rack_alternated_broker_list(rack_map)  # [0, 2, 1]
    ref = assign_replicas_to_brokers(list(Cluster.of(range(3), rack_map).brokers), 3, 2, 0)
    assert [[arranged[x] for x in row] for row in got] == [ref[p] for p in range(3)]


def concrete(matrix, n, rack_of=None):
    k = len(set(rack_of)) if rack_of else 0
    return SymbolicPlacement(n, len(matrix), len(matrix[0]), k, [[z3.IntVal(x) for x in row] for row in matrix],
                             [z3.IntVal(r) for r in rack_of] if rack_of else None)


@pytest.mark.parametrize("invariant", sorted(smt.FORMS))
def test_z3_forms_agree_with_scalar_checks(invariant):
    rnd = random.Random(invariant)
    st_ = BalanceSettings()
    checked = 0
    for _ in range(600):
        n = rnd.randint(2, 6)
        rf = rnd.randint(1, n)
        k = rnd.randint(1, n)
        rack_of = [rnd.randrange(k) for _ in range(n)]
        if len(set(rack_of)) != k:
            continue
        parts = rnd.randint(1, 7)
        # mostly valid rows, sometimes with a repeated broker
        matrix = [rnd.sample(range(n), rf) if rnd.random() < 0.8 else [rnd.randrange(n) for _ in range(rf)]
                  for _ in range(parts)]
        if not smt.applies(invariant, n, rf, k):
            continue
        subject = PlacementSubject(Cluster.of(range(n), {b: "abcdef"[r] for b, r in enumerate(rack_of)}),
                                   ReplicaAssignment.from_placement("t", dict(enumerate(matrix))),
                                   replication_factor=rf)
        scalar = bool(check_all(subject, "placement", {invariant}).violations)
        symbolic = z3.is_true(z3.simplify(smt.FORMS[invariant](concrete(matrix, n, rack_of), parts, st_)))
        assert scalar == symbolic, (matrix, rack_of)
        checked += 1
    assert checked > 100


def test_distinct_brokers_is_proved_for_every_cluster_size():
    result = prove_distinct_brokers_unbounded()
    assert (result.status, result.scope) == ("proved", "unbounded")


def test_the_remainder_encoding_can_fail():
    # Sanity: the same query without the RF <= n bound is satisfiable (RF = n + 1 must repeat a broker).
    n, rf, f, s, r1, r2 = z3.Ints("n rf f s r1 r2")
    p1, dom = rack_unaware_remainders(n, f, s, r1)
    p2, _ = rack_unaware_remainders(n, f, s, r2)
    solver = z3.Solver()
    solver.add(n >= 2, rf == n + 1, 0 <= r1, r1 < r2, r2 < rf, *dom, s + r2 - 1 < 2 * (n - 1), p1 == p2)
    assert solver.check() == z3.sat


def test_prover_finds_the_smallest_rack_distribution_counterexample():
    # Hand check: with 4 brokers every layout forces the split (a 1-broker rack cannot take 2 of 4, and
    # 2+2 racks always get 2+2), so the smallest break is 5 brokers in racks of 3 and 2 with RF 4
    # (test_placement.test_rack_aware_uneven_racks_hand_derived shows one).
    result = prove("adminutils-rack-aware", "placement.rack-distribution", BUILTIN_PLACERS["adminutils"],
                   Bounds(5, 2, 2, 4))
    assert result.status == "refuted"
    ce = result.counterexample
    assert (len(ce.cluster), len(ce.cluster.racks), ce.partitions, ce.rf) == (5, 2, 1, 4)
    assert sorted(ce.cluster.brokers_by_rack().values(), key=len) in ([(0, 1), (2, 3, 4)], [(3, 4), (0, 1, 2)])
    assert ce.violations and ce.violations[0].invariant == "placement.rack-distribution"


def test_prover_bounded_proof_of_rack_diversity():
    result = prove("adminutils-rack-aware", "placement.rack-diversity", BUILTIN_PLACERS["adminutils"],
                   Bounds(4, 3, 4, 3))
    assert (result.status, result.scope) == ("proved", "bounded")


def test_every_draw_enumerates_all_outcomes():
    def run(rnd):
        return rnd.next_int(2), rnd.next_int(3) if rnd.next_int(2) else None
    outcomes = [draws for draws, _ in every_draw(run)]
    # first draw 0/1; second draw 0/1 decides whether a third draw in [0,3) happens
    assert outcomes == [[0, 0], [0, 1, 0], [0, 1, 1], [0, 1, 2], [1, 0], [1, 1, 0], [1, 1, 1], [1, 1, 2]]


def test_striped_leader_skew_is_the_smallest_leader_spread_break():
    # Two single-broker racks, RF 1: after two partitions the rack list is reshuffled and its epoch
    # returns to 0, but the broker list of the rack that led partition 0 still holds epoch 0 with its
    # index used up, so it answers -1 and every later leader lands on the other rack: 1 vs 4 by p4.
    res = check_exhaustively(BUILTIN_PLACERS["striped"], ["placement.leader-spread"], Bounds(2, 2, 5, 1))
    ce = res["placement.leader-spread"].counterexample
    assert (len(ce.cluster), len(ce.cluster.racks), ce.partitions) == (2, 2, 5)
    assert sorted(sum((r for r in ce.placement.values()), []).count(b) for b in (0, 1)) == [1, 4]


def test_optimal_metrics_hand_derived():
    # 3 brokers, 2 partitions RF 2: 4 replicas over 3 brokers cannot be even (spread 1); 2 leaders: spread 1.
    best, _ = optimal_metrics(Cluster.of(range(3)), 2, 2)
    assert (best.leader_spread, best.replica_spread) == (1, 1)
    # 6 brokers, 10 partitions RF 3: 30 replicas can be 5 each. AdminUtils with start 0: p0..p5 are
    # [i, i+1, i+2] (3 each); pid 6 bumps the shift, so p6..p9 = [0,2,3] [1,3,4] [2,4,5] [3,5,0]:
    # totals 5,4,5,6,5,5, a spread of 2.
    cluster = Cluster.of(range(6))
    best, _ = optimal_metrics(cluster, 10, 3)
    kafka = metrics(cluster, assign_replicas_to_brokers(list(cluster.brokers), 10, 3, 0))
    assert (best.replica_spread, kafka.replica_spread) == (0, 2)
    racked = Cluster.of(range(3), {0: "a", 1: "a", 2: "b"})
    assert optimal_metrics(racked, 2, 2)[0].min_racks_spanned == 2


class Recording(JavaRandom):
    """java.util.Random that logs every nextInt(bound) result, to feed the same draws to the twin."""

    def __init__(self, seed):
        super().__init__(seed)
        self.log = []

    def next_int(self, bound=None):
        v = super().next_int(bound)
        self.log.append((bound, v))
        return v


def test_striped_twin_matches_reference_including_reshuffles():
    from kcheck.model.smt.striped import striped_twin
    from kcheck.reference.placers import striped_assign

    rnd = random.Random(11)
    for _ in range(40):
        n, parts = rnd.randint(1, 6), rnd.randint(1, 9)  # often more partitions than brokers: reshuffles
        k, rf = rnd.randint(1, min(3, n)), rnd.randint(1, n)
        cuts = [0, *sorted(rnd.sample(range(1, n), k - 1)), n]
        sizes = [cuts[q + 1] - cuts[q] for q in range(k)]
        racks = {b: "abc"[q] for q in range(k) for b in range(cuts[q], cuts[q + 1])}
        rec = Recording(rnd.randrange(10**6))
        ref = striped_assign(list(Cluster.of(range(n), racks).brokers), parts, rf, random=rec)
        twin = striped_twin(n, parts, rf, k)
        subs = [(twin.params[f"rack_size_{q}"], z3.IntVal(s)) for q, s in enumerate(sizes)]
        draws = iter(rec.log)
        for _, var, bound, used in twin.draw_order:  # the twin's draws, in Java's call order
            if z3.is_true(z3.simplify(z3.substitute(used, *subs))):
                b, v = next(draws)
                assert b == value(z3.substitute(bound, *subs) if not isinstance(bound, int) else bound)
                subs.append((var, z3.IntVal(v)))
            else:
                subs.append((var, z3.IntVal(0)))
        assert next(draws, None) is None
        assert z3.is_true(z3.simplify(z3.substitute(twin.complete, *subs)))
        got = [[value(z3.substitute(e, *subs)) for e in row] for row in twin.replicas]
        assert got == [ref[p] for p in range(parts)]


def test_rack_hash_order_of_single_letter_racks():
    from kcheck.invariants.prover import rack_hash_order

    # "a", "b", "c" hash to 97, 98, 99: buckets 1, 2, 3 of a 16-bucket HashMap, so name order.
    assert rack_hash_order(3) == [0, 1, 2]


def test_z3_and_exhaustive_agree_on_the_striped_leader_skew():
    z3_result = prove("striped", "placement.leader-spread", BUILTIN_PLACERS["striped"], Bounds(2, 2, 5, 1))
    ce = z3_result.counterexample
    assert z3_result.status == "refuted" and (len(ce.cluster), len(ce.cluster.racks), ce.partitions) == (2, 2, 5)
    assert ce.violations  # confirmed by the concrete placer fed the model's draws


def test_striped_distinct_brokers_proved_with_a_complete_unrolling():
    result = prove("striped", "placement.distinct-brokers", BUILTIN_PLACERS["striped"], Bounds(3, 2, 4, 3))
    assert (result.status, result.scope) == ("proved", "bounded")
