"""Symbolic twin of KRaft's StripedReplicaPlacer (`reference/striped.py`), unrolled for bounded sizes.

Inputs are symbolic: the sizes of `racks` non-empty racks (all brokers unfenced),
and every random draw the placer makes, in Java's order: one nextInt(size) per
rack when its broker list is initialised, nextInt(#racks) for the rack offset,
and at each reshuffle the Fisher-Yates draws of Collections.shuffle (rack names,
then each rack's brokers). Epoch numbers are concrete: they depend only on the
partition index and the broker count. A model of the draws can be replayed
through the concrete placer with a scripted java.util.Random.

Brokers are named by (rack, rank): broker ids 0.. fill rack 0 first, then rack
1, ...; the placer only compares ids inside a rack, so this covers every layout
up to renaming, which no placement invariant can see. Racks are indexed in name
order; `hash_order` gives their HashMap iteration order (the order of the
random draws), computed by the caller from the names.

The leader search is unrolled for #racks steps and each follower's search for
#racks + 1 steps; `complete` is true when every search ended within them,
which the prover checks before trusting a proof.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from kcheck.model.smt.common import SymbolicPlacement, select


@dataclass
class _BrokerList:
    ranks: list[z3.ArithRef]  # the list order, as ranks within the rack (0 .. size-1)
    offset: z3.ArithRef
    index: z3.ArithRef
    epoch: z3.ArithRef


def _wrap(x: z3.ArithRef, size: z3.ArithRef) -> z3.ArithRef:
    """x mod size for 0 <= x < 2*size."""
    return z3.If(x >= size, x - size, x)


def striped_twin(
    n: int, partitions: int, rf: int, racks: int, hash_order: list[int] | None = None,
    sizes: list[z3.ArithRef] | None = None,
) -> SymbolicPlacement:
    twin = _Twin(n, racks, hash_order if hash_order is not None else list(range(racks)), sizes)
    replicas = [twin.partition(p, rf) for p in range(partitions)]
    rack_of = [z3.IntVal(0)] * n  # rack of each broker id: ids fill rack 0 first
    for b in range(n):
        rack_of[b] = z3.Sum([z3.If(b >= twin.prefix[k] + twin.sizes[k], 1, 0) for k in range(racks)])
    sp = SymbolicPlacement(n, partitions, rf, racks, replicas, rack_of, twin.params, twin.constraints)
    sp.complete = z3.And(twin.found_all) if twin.found_all else z3.BoolVal(True)
    sp.draw_order = twin.draw_order
    return sp


class _Twin:
    """The placer's state while `striped_twin` unrolls it: the racks' broker lists, the rack names' order, the offset
    and epoch, with every draw and constraint made so far."""

    def __init__(self, n: int, racks: int, hash_order: list[int], sizes: list[z3.ArithRef] | None) -> None:
        self.n, self.racks, self.hash_order = n, racks, hash_order
        self.constraints: list[z3.BoolRef] = []
        self.params: dict[str, z3.ArithRef] = {}
        self.draw_order: list[tuple[str, z3.ArithRef, int | z3.ArithRef, z3.BoolRef]] = []
        self.found_all: list[z3.BoolRef] = []  # per replica placed: its search ended within the unrolled steps
        self.sizes = sizes if sizes is not None else [z3.Int(f"rack_size_{k}") for k in range(racks)]
        for k, size in enumerate(self.sizes):
            self.params[f"rack_size_{k}"] = size
        self.constraints += [sz >= 1 for sz in self.sizes] + [z3.Sum(self.sizes) == n]
        self.prefix = [z3.Sum(self.sizes[:k]) if k else z3.IntVal(0) for k in range(racks)]
        # RackList constructor: each rack's unfenced list is sorted and given a random offset, in HashMap order.
        self.lists: dict[int, _BrokerList] = {}
        for k in hash_order:
            self.lists[k] = _BrokerList([z3.IntVal(i) for i in range(n)], self.draw(f"init_{k}", self.sizes[k]),
                                        z3.IntVal(0), z3.IntVal(0))
        self.names = [z3.IntVal(k) for k in range(racks)]  # rack names sorted; entries are rack indices
        self.offset: z3.ArithRef = self.draw("offset", racks)
        self.epoch = 0

    def draw(self, name: str, bound: int | z3.ArithRef, used: z3.BoolRef | None = None) -> z3.ArithRef:
        """A nextInt(bound) result; `used` says whether Java makes this call (sizes are symbolic)."""
        used = z3.BoolVal(True) if used is None else used
        v = z3.Int(name)
        self.constraints.append(z3.Implies(used, z3.And(v >= 0, v < bound)))
        self.constraints.append(z3.Implies(z3.Not(used), v == 0))
        self.params[name] = v
        self.draw_order.append((name, v, bound, used))
        return v

    def shuffle(self, items: list[z3.ArithRef], size: int | z3.ArithRef, tag: str) -> list[z3.ArithRef]:
        """Collections.shuffle: for i = size .. 2, swap(i-1, nextInt(i)), over a list padded to n."""
        items = list(items)
        top = size if isinstance(size, int) else self.n
        for i in range(top, 1, -1):
            used = z3.BoolVal(True) if isinstance(size, int) else z3.IntVal(i) <= size
            j = self.draw(f"{tag}_{i}", i, used)
            a, b = items[i - 1], select(items, j)
            items = [z3.If(used, z3.If(x == i - 1, b, z3.If(j == x, a, items[x])), items[x])
                     for x in range(len(items))]
        return items

    def next_broker(self, k: int, call: z3.BoolRef) -> tuple[z3.ArithRef, _BrokerList]:
        """BrokerList.next(epoch) on rack k, if `call`; returns (broker or -1, the list's new state)."""
        bl, size, epoch = self.lists[k], self.sizes[k], self.epoch
        reset = bl.epoch != epoch  # a list rotates only when first touched in a new epoch
        off = z3.If(reset, z3.If(bl.offset + 1 >= size, 0, bl.offset + 1), bl.offset)
        idx = z3.If(reset, 0, bl.index)
        avail = idx < size
        rank = select(bl.ranks, _wrap(idx + off, size))
        broker = z3.If(avail, self.prefix[k] + rank, -1)
        new = _BrokerList(bl.ranks, z3.If(call, off, bl.offset), z3.If(call, z3.If(avail, idx + 1, idx), bl.index),
                          z3.If(call, z3.IntVal(epoch), bl.epoch))
        return z3.If(call, broker, -1), new

    def visit(self, rack_position: z3.ArithRef, active: z3.BoolRef) -> z3.ArithRef:
        """Call next() on the rack at rack_position of the names list, when active; update its state. With no
        fenced brokers next() is nextUnfenced()."""
        rack = select(self.names, rack_position)
        result: z3.ArithRef = z3.IntVal(-1)
        for k in range(self.racks):
            call = z3.And(active, rack == k)
            b, new = self.next_broker(k, call)
            self.lists[k] = new
            result = z3.If(call, b, result)
        return result

    def partition(self, p: int, rf: int) -> list[z3.ArithRef]:
        """Partition p's replicas: the leader, then the followers."""
        n, racks = self.n, self.racks
        if self.epoch == n and n > 1:  # every numUnfenced partitions: reshuffle racks and brokers, epoch back to 0
            self.names = self.shuffle(self.names, racks, f"shuffle{p}_racks")
            for k in self.hash_order:
                self.lists[k].ranks = self.shuffle(self.lists[k].ranks, self.sizes[k], f"shuffle{p}_rack{k}")
            self.epoch = 0
        self.offset = z3.If(self.offset == racks, 0, self.offset)
        leader, first_rack = self.leader()
        out = [leader]
        # followers: round robin from `offset`, skipping the leader's rack exactly once
        rack_index: z3.ArithRef = self.offset
        for _ in range(1, rf):
            follower, rack_index, first_rack = self.follower(rack_index, first_rack)
            out.append(follower)
        self.epoch += 1
        self.offset = self.offset + 1
        return out

    def leader(self) -> tuple[z3.ArithRef, z3.ArithRef]:
        """(the leader: the first rack from `offset` that yields an unfenced broker, that rack's position)."""
        first_rack: z3.ArithRef = self.offset
        leader: z3.ArithRef = z3.IntVal(-1)
        found: z3.BoolRef = z3.BoolVal(False)
        for _ in range(self.racks):
            b = self.visit(first_rack, z3.Not(found))
            hit = z3.And(z3.Not(found), b >= 0)
            leader = z3.If(hit, b, leader)
            first_rack = z3.If(z3.Or(found, hit), first_rack, _wrap(first_rack + 1, z3.IntVal(self.racks)))
            found = z3.Or(found, hit)
        self.found_all.append(found)
        return leader, first_rack

    def follower(self, rack_index: z3.ArithRef, first_rack: z3.ArithRef
                 ) -> tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef]:
        """(the next follower, the rack position the search goes on from, the leader's rack position or -1 once it
        was skipped)."""
        result: z3.ArithRef = z3.IntVal(-1)
        got: z3.BoolRef = z3.BoolVal(False)
        for _ in range(self.racks + 1):
            skip = z3.And(z3.Not(got), rack_index == first_rack)
            b = self.visit(rack_index, z3.And(z3.Not(got), z3.Not(skip)))
            first_rack = z3.If(skip, -1, first_rack)
            hit = z3.And(z3.Not(got), z3.Not(skip), b >= 0)
            result = z3.If(hit, b, result)
            rack_index = z3.If(got, rack_index, _wrap(rack_index + 1, z3.IntVal(self.racks)))
            got = z3.Or(got, hit)
        self.found_all.append(got)
        return result, rack_index, first_rack
