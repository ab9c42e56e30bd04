"""NumPy twins of AdminUtils and of the placement invariants, over a batch of configurations at once.

Twins, not approximations: `adminutils_replicas` gives the replica lists that
`reference.placement.assign_replicas_to_brokers` gives, and `check_placements`
flags a configuration for an invariant exactly when the registry's scalar check
(`invariants.placement`) reports a violation of it. `tests/test_sweep_vector.py`
compares them on random batches. Balance limits come from the scalar
`balance_limits` / `topic_balance_limits` where they depend on the partition count
only, and otherwise repeat its float operations in the same order (IEEE
float64 on both sides), so limits agree to the last bit.

Array layout: replicas are (L, D, P, R) broker positions: rack layout, draw,
partition, replica. A configuration with P partitions is the prefix 0..P-1 of a
placement of the most partitions (AdminUtils' partition p does not depend on the
partition count), so every count is a cumulative sum over the partition axis and
one array holds the answers for every partition count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kcheck.invariants.placement import BalanceSettings, balance_limits, topic_balance_limits

LANES = 1 << 19  # cells per array that a chunk of configurations aims at (keeps a task within ~1 GiB)

_POPCOUNT = np.array([bin(i).count("1") for i in range(1 << 10)], dtype=np.int64)  # racks <= 10


def adminutils_replicas(arranged: np.ndarray, rack_of: np.ndarray, racks: int, starts: np.ndarray,
                        shifts: np.ndarray, partitions: int, replicas: int) -> np.ndarray:
    """`AdminUtils.assignReplicasToBrokers` for many layouts and (start index, shift) draws at once.

    Mirrors `server-common/src/main/java/org/apache/kafka/admin/AdminUtils.java`:
    rack-unaware when `racks` is 0 (brokers are positions 0..n-1, in list order),
    else rack-aware over each layout's rack-alternated list `arranged` (L, n), with
    `rack_of` (L, n) the rack index of each broker id. Partitions 0..partitions-1,
    start partition 0. Returns (L, D, P, replicas) broker ids.
    """
    n_layouts, n = arranged.shape
    d = len(starts)
    pid = np.arange(partitions, dtype=np.int64)
    first = (pid[None, :] + starts[:, None]) % n  # (D, P): the leader's position
    shift = shifts[:, None] + pid[None, :] // n  # grows at each multiple of n of the partition id
    if racks == 0:
        positions = np.empty((d, partitions, replicas), dtype=np.int64)
        positions[..., 0] = first
        for j in range(replicas - 1):  # replicaIndex: 1 + (shift + j) mod (n-1) past the leader
            positions[..., j + 1] = (first + 1 + (shift + j) % (n - 1)) % n
        return arranged[:, positions]  # (L, D, P, R): the broker at each position of the list
    out = np.empty((n_layouts, d, partitions, replicas), dtype=np.int64)
    _rack_aware(arranged, rack_of, racks, first, shift * racks, out)
    return out


def _rack_aware(arranged: np.ndarray, rack_of: np.ndarray, racks: int, first: np.ndarray, shift: np.ndarray,
                out: np.ndarray) -> None:
    """The rack-aware follower walk, all lanes in step; a lane leaves once it has all its replicas.

    One counter k per partition walks the rack-alternated list from the leader
    (never reset between followers); a candidate is skipped while its rack already
    holds a replica and some rack holds none, or while it holds one itself.
    """
    n_layouts, n = arranged.shape
    _, d, p, replicas = out.shape
    lay = np.repeat(np.arange(n_layouts), d * p)
    f = np.tile(first.ravel(), n_layouts)
    s = np.tile(shift.ravel(), n_layouts)
    flat_arranged = arranged.ravel()
    flat_rack = rack_of.ravel()
    leader = flat_arranged[lay * n + f]
    flat_out = out.reshape(-1, replicas)
    flat_out[:, 0] = leader
    lane = np.arange(len(lay)) if replicas > 1 else np.arange(0)
    racks_used = np.left_shift(1, flat_rack[lay * n + leader])
    brokers_used = np.left_shift(np.uint64(1), leader.astype(np.uint64))
    brokers_count = np.ones(len(lay), dtype=np.int64)
    filled = np.ones(len(lay), dtype=np.int64)
    k = np.zeros(len(lay), dtype=np.int64)
    while len(lane):
        cand = flat_arranged[lay * n + (f + 1 + (s + k) % (n - 1)) % n]
        rack = flat_rack[lay * n + cand]
        k += 1
        rack_ok = ((racks_used >> rack) & 1 == 0) | (_POPCOUNT[racks_used] == racks)
        cand_bit = np.left_shift(np.uint64(1), cand.astype(np.uint64))
        broker_ok = ((brokers_used & cand_bit) == 0) | (brokers_count == n)
        ok = rack_ok & broker_ok
        flat_out[lane[ok], filled[ok]] = cand[ok]
        new_broker = ok & ((brokers_used & cand_bit) == 0)
        brokers_count += new_broker
        brokers_used |= np.where(ok, cand_bit, np.uint64(0))
        racks_used |= np.where(ok, np.left_shift(1, rack), 0)
        filled += ok
        keep = filled < replicas
        if not keep.all():
            lane, lay, f, s, k = lane[keep], lay[keep], f[keep], s[keep], k[keep]
            racks_used, brokers_used, brokers_count, filled = (racks_used[keep], brokers_used[keep],
                                                               brokers_count[keep], filled[keep])


@dataclass
class Checks:
    """Per invariant: (applies to these configurations, violated (L, D, P)); per metric: values (L, D, P)."""

    invariants: dict[str, tuple[bool, np.ndarray]]
    metrics: dict[str, np.ndarray]


def _counts(values: np.ndarray, bins: int) -> np.ndarray:
    """(C, P, R) ints in 0..bins-1 -> (bins, C, P): how often each value occurs in each row.

    Value-major, so that reductions over brokers or racks run elementwise across
    contiguous (C, P) planes instead of along a short last axis.
    """
    c, p, r = values.shape
    rows = np.arange(c * p, dtype=np.int64).repeat(r)
    return np.bincount(values.ravel() * (c * p) + rows, minlength=bins * c * p).reshape(bins, c, p)


def _limits(avg: np.ndarray, threshold: float, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """`balance_limits` over an array: the same float64 operations, in the same order."""
    p = (threshold - 1.0) * margin
    return np.floor(avg * max(0.0, 1.0 - p)), np.ceil(avg * (1.0 + p))


def _by_prefix(averages: np.ndarray, limits) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) per partition count, from the scalar limit function itself."""
    lows, highs = zip(*(limits(float(a)) for a in averages), strict=True)
    return np.array(lows), np.array(highs)


def _any(planes: np.ndarray) -> np.ndarray:
    return np.logical_or.reduce(planes, axis=0)


def check_placements(reps: np.ndarray, n: int, rack_of: np.ndarray, sizes: np.ndarray,
                     settings: BalanceSettings, grown: np.ndarray | None = None) -> Checks:
    """Every placement invariant of `invariants.placement`, for every configuration and partition count.

    `reps` (L, D, P, RF) broker ids of one cluster size and rack count: layout l
    has racks `sizes[l]` (none when `sizes` has no columns) and `rack_of[l]`.
    No broker is fenced. `grown` (same shape) is the placement on one more broker,
    for the moved-partitions metric. Configuration (l, d, P) is the first P partitions.
    """
    n_layouts, d, p_max, rf = reps.shape
    k = sizes.shape[1]
    c = n_layouts * d
    flat = reps.reshape(c, p_max, rf)
    st = settings
    partitions = np.arange(1, p_max + 1)
    count_type = np.int32 if p_max * rf < 2**31 else np.int64
    inv: dict[str, tuple[bool, np.ndarray]] = {}

    def shaped(x: np.ndarray) -> np.ndarray:
        return x.reshape(n_layouts, d, p_max)

    def ever(x: np.ndarray) -> np.ndarray:  # a partition's violation stays in every longer prefix
        return shaped(np.logical_or.accumulate(x, axis=1))

    # (n, C, P): replicas and preferred leaders per broker among the first P partitions
    replicas = np.cumsum(_counts(flat, n), axis=2, dtype=count_type)
    leaders = np.cumsum(_counts(flat[..., :1], n), axis=2, dtype=count_type)
    most, fewest = replicas.max(axis=0), replicas.min(axis=0)
    most_led, fewest_led = leaders.max(axis=0), leaders.min(axis=0)

    # distinct brokers and replication factor: one partition at a time
    ordered = np.sort(flat, axis=2)
    duplicate = np.zeros((c, p_max), dtype=bool)
    for j in range(rf - 1):
        duplicate |= ordered[..., j] == ordered[..., j + 1]
    inv["placement.distinct-brokers"] = (True, ever(duplicate))
    # a topic with more replicas than brokers violates it as a whole; a short replica list, per partition
    inv["placement.replication-factor"] = (True, ever(((flat >= 0).sum(axis=2) != rf) | (rf > n)))

    # Cruise Control's limits around averages that depend on P only (no broker is fenced): a broker is
    # out of limits exactly when the fullest is above the upper one or the emptiest below the lower one.
    lo, hi = _by_prefix(partitions * rf / n, lambda a: balance_limits(a, st.replica_threshold, st.margin))
    inv["placement.replica-spread"] = (True, shaped((most > hi) | (fewest < lo)))
    lo, hi = _by_prefix(partitions / n, lambda a: balance_limits(a, st.leader_threshold, st.margin))
    inv["placement.leader-spread"] = (True, shaped((most_led > hi) | (fewest_led < lo)))
    lo, hi = _by_prefix(partitions * rf / n, lambda a: topic_balance_limits(a, st))
    inv["placement.topic-replica-spread"] = (True, shaped((most > hi) | (fewest < lo)))
    inv["placement.max-replicas-per-broker"] = (True, shaped(most > st.max_replicas_per_broker))
    inv["placement.leader-unfenced"] = (False, np.zeros((n_layouts, d, p_max), dtype=bool))  # nothing is fenced

    metrics = {"leader-skew": shaped(most_led - fewest_led), "replica-skew": shaped(most - fewest)}

    if k:
        layout_of = np.repeat(np.arange(n_layouts), d)  # (C,)
        racks = rack_of[layout_of[:, None, None], flat]  # (C, P, RF) rack of each replica
        per_rack = _counts(racks, k)  # (k, C, P) replicas of each partition on each rack
        spanned = (per_rack > 0).sum(axis=0)
        inv["placement.rack-diversity"] = (True, ever(spanned < min(rf, k)))
        fullest, emptiest = per_rack.max(axis=0), per_rack.min(axis=0)
        size = np.repeat(sizes.T, d, axis=1)[:, :, None]  # (k, C, 1) brokers per rack
        movable = _any((per_rack <= fullest - 2) & (per_rack < size))
        inv["placement.rack-distribution"] = (rf > k, ever(movable))
        metrics["rack-spread"] = shaped(np.maximum.accumulate(fullest - emptiest, axis=1))
        rack_leaders = np.cumsum(_counts(racks[..., :1], k), axis=2, dtype=count_type)  # (k, C, P)
        expected = (partitions[None, None, :] * sizes.T[:, :, None]) / n  # total * size[r] / len(eligible)
        lo_r, hi_r = _limits(expected, st.leader_threshold, st.margin)  # (k, L, P)
        lo_r, hi_r = np.repeat(lo_r, d, axis=1), np.repeat(hi_r, d, axis=1)
        inv["placement.leader-spread-rack"] = (True, shaped(_any((rack_leaders < lo_r) | (rack_leaders > hi_r))))
    else:
        none = np.zeros((n_layouts, d, p_max), dtype=bool)
        for name in ("placement.rack-diversity", "placement.rack-distribution", "placement.leader-spread-rack"):
            inv[name] = (False, none)

    inv["placement.follower-spread"] = (n >= 2, shaped(_follower_spread(flat, n, st)) if n >= 2 else
                                        np.zeros((n_layouts, d, p_max), dtype=bool))
    if grown is not None:
        regrown = np.sort(grown.reshape(c, p_max, rf), axis=2)
        changed = np.zeros((c, p_max), dtype=bool)
        for j in range(rf):
            changed |= regrown[..., j] != ordered[..., j]
        metrics["moved-partitions"] = shaped(np.cumsum(changed, axis=1, dtype=count_type))
    return Checks(inv, metrics)


def _follower_spread(flat: np.ndarray, n: int, st: BalanceSettings) -> np.ndarray:
    """`placement.follower-spread` for every prefix: some leader's followers lie outside the limits.

    A leader's row of follower counts changes only at the partitions it leads, so
    partitions are grouped by leader (stable sort), counted within each group, and
    each partition records whether its leader's row is out of limits once it is
    added. The number of leaders out of limits after P partitions is the running
    sum of the changes; the prefix violates when it is positive.
    """
    c, p_max, rf = flat.shape
    lead = flat[..., 0]
    followers = _counts(flat[..., 1:], n) if rf > 1 else np.zeros((n, c, p_max), dtype=np.int64)  # (n, C, P)
    order = np.argsort(lead * p_max + np.arange(p_max), axis=1, kind="stable")
    base = np.arange(c)[:, None] * p_max
    lead_s = lead.ravel()[(base + order).ravel()].reshape(c, p_max)
    fol_s = followers.reshape(n, -1)[:, (base + order).ravel()]  # (n, C*P), partitions grouped by leader
    running = np.cumsum(fol_s.reshape(n, c, p_max), axis=2, dtype=np.int32)
    group_start = np.ones((c, p_max), dtype=bool)
    group_start[:, 1:] = lead_s[:, 1:] != lead_s[:, :-1]
    start_at = np.maximum.accumulate(np.where(group_start, np.arange(p_max), 0), axis=1)
    exclusive = running - fol_s.reshape(n, c, p_max)
    before = exclusive.reshape(n, -1)[:, (base + start_at).ravel()].reshape(n, c, p_max)
    row = running - before  # (n, C, P): followers on each broker of this partition's leader, up to this partition
    avg = row.sum(axis=0) / (n - 1)  # sum(counts.values()) / len(others)
    lo, hi = _limits(avg, st.follower_threshold, st.margin)
    outside = (row < lo) | (row > hi)
    outside &= np.arange(n)[:, None, None] != lead_s  # the leader itself is not among "others"
    state = _any(outside).astype(np.int64)
    previous = np.zeros_like(state)
    previous[:, 1:] = state[:, :-1]
    previous[group_start] = 0
    change = np.empty_like(state)
    np.put_along_axis(change, order, state - previous, axis=1)
    return np.cumsum(change, axis=1) > 0
