"""The replication model's fast key path (issue 14): fingerprints computed from the encoding's parts, the encoding
built only for new states, invariant verdicts shared by states that differ only in their messages, and the search's
garbage-collector setting. Expected values come from the definitions (the fingerprint of the encoding, the
search keyed by the full encoding, each twin on the state itself), not from a run of the code under test."""

from __future__ import annotations

import gc
import random

import pytest

from kcheck.check import SMALL_EXHAUSTIVE_BOUNDS
from kcheck.invariants.replication import FAST
from kcheck.invariants.replication_model_adapter import (
    ReplicationModel,
    decode_state,
    encode_state,
    encoding_fingerprint,
)
from kcheck.model.replication import VARIANTS, Config, Protocol
from kcheck.model.replication.state import evolve
from kcheck.model.search import exhaust
from model_support import reachable

SPARE = dict(brokers=3, replication_factor=1, min_isr=1, records=1, max_leader_epoch=2, crashes=1, lossy_crashes=0,
             fences=1, elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False)




class FullEncodingKey(ReplicationModel):
    """The same model keyed the old way: a subclass with its own `encode` gets no part fingerprints, so the search
    hashes the whole encoding (and, with symmetry, every image's encoding)."""

    def encode(self, state):
        return encode_state(state)


@pytest.mark.parametrize("metadata", ["kraft", "zookeeper"])
def test_part_fingerprint_is_the_fingerprint_of_the_encoding(metadata):
    cfg = Config(**{**SMALL_EXHAUSTIVE_BOUNDS, "duplicates": True, "metadata": metadata})
    m = ReplicationModel(Protocol.current(), cfg)
    states = reachable(Protocol.current(), cfg, 1500)
    random.Random(7).shuffle(states)  # no help from the previous state's parts: any order must give the same
    fps = [m.fingerprint(s) for s in states]
    assert fps == [encoding_fingerprint(encode_state(s)) for s in states]
    assert len(set(fps)) == len(states)  # distinct states, distinct fingerprints (64 bits, 1,500 states)
    # a state decoded apart (new objects, its parts taken from the bytes) has the same fingerprint
    for s, fp in zip(states[:200], fps[:200], strict=True):
        assert m.fingerprint(decode_state(bytes(encode_state(s)))) == fp
    # as the search runs: decode a state, then key each successor (they share parts with the decoded state)
    for s in states[:300]:
        parent = decode_state(encode_state(s))
        for _, _, t in m.successors(parent):
            assert m.fingerprint(t) == encoding_fingerprint(encode_state(t))


def test_images_fingerprints_are_those_of_their_encodings():
    m = ReplicationModel(Protocol.current(), Config(**SPARE))
    assert m.symmetries()
    for s in reachable(Protocol.current(), Config(**SPARE), 400):
        assert m.fingerprints(s) == [encoding_fingerprint(e) for e in m.encodings(s)]


@pytest.mark.parametrize("bounds,symmetry", [(SMALL_EXHAUSTIVE_BOUNDS, False), (SPARE, True), (SPARE, False)],
                         ids=["small", "spare-symmetry", "spare"])
def test_search_on_part_fingerprints_stores_what_the_full_encoding_key_stores(bounds, symmetry):
    cfg = Config(**bounds)
    fast = exhaust(ReplicationModel(Protocol.current(), cfg), symmetry=symmetry)
    full_model = FullEncodingKey(Protocol.current(), cfg)
    assert getattr(full_model, "fingerprint", None) is None
    full = exhaust(full_model, symmetry=symmetry)
    assert fast.complete and full.complete
    assert (fast.states, fast.transitions, fast.depth) == (full.states, full.transitions, full.depth)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_no_twin_reads_the_messages_in_flight(name):
    """The model shares twin verdicts between states that differ only in their pool: each twin must give the
    same answer with the pool emptied, on the reachable states of each variant's row setting."""
    v = VARIANTS[name]
    cfg = Config(**v.settings)
    pools = 0
    for s in reachable(v.protocol, cfg, 800):
        if s.pool:
            pools += 1
            bare = evolve(s, pool=frozenset())
            for check, twin in FAST.items():
                assert twin(s, cfg) == twin(bare, cfg), (check.__name__, s)
    assert pools


def test_a_rows_violation_is_still_found_with_shared_verdicts():
    """Verdicts shared by pool-only differences do not hide the row's violation from the search."""
    v = VARIANTS["unclean-election"]
    r = exhaust(ReplicationModel(v.protocol, Config(**v.settings), only=set(v.violates)), max_states=150_000)
    assert r.counterexample is not None and r.counterexample.invariant in v.violates


def test_search_restores_the_collector_thresholds():
    before = gc.get_threshold()
    exhaust(ReplicationModel(Protocol.current(), Config(**SMALL_EXHAUSTIVE_BOUNDS)), max_states=200)
    assert gc.get_threshold() == before


_PART_KINDS = (b"registry", b"zombies", b"pool", b"history", b"budget", b"metadata")  # after the replicas


def _xor_of_part_digests(encoding: bytes) -> int:
    """The fingerprint's definition, computed here from the encoding alone: each part's blake2b (8 bytes,
    personalised with its kind), XORed, 0 taken as 1."""
    import marshal
    from hashlib import blake2b

    parts = marshal.loads(encoding)
    n = len(parts) - len(_PART_KINDS)
    out = 0
    for part, kind in zip(parts, (b"replica",) * n + _PART_KINDS, strict=True):
        out ^= int.from_bytes(blake2b(part, digest_size=8, person=kind).digest(), "little")
    return out or 1


@pytest.mark.parametrize("metadata", ["kraft", "zookeeper"])
def test_fingerprint_is_the_xor_of_the_parts_digests(metadata):
    """A successor's fingerprint is its parent's with the replaced parts' digests swapped; whatever the order the
    states come in, it is the definition computed from the state's own encoding."""
    cfg = Config(**{**SMALL_EXHAUSTIVE_BOUNDS, "duplicates": True, "metadata": metadata})
    m = ReplicationModel(Protocol.current(), cfg)
    states = reachable(Protocol.current(), cfg, 600)
    random.Random(3).shuffle(states)
    assert [m.fingerprint(s) for s in states] == [_xor_of_part_digests(encode_state(s)) for s in states]
    for s in states[:200]:
        parent = decode_state(encode_state(s))
        for _, _, t in m.successors(parent):
            assert m.fingerprint(t) == _xor_of_part_digests(encode_state(t))


@pytest.mark.parametrize("name", ["unclean-election", "zombie-controller"])
def test_first_violation_is_what_asking_each_invariant_gives(name):
    """The search's one call per new state (`first_violation`) names the first invariant, in the model's order,
    that the state breaks, as asking each in turn does; on a row's states, some of which break invariants."""
    from kcheck.model.search import _violated

    v = VARIANTS[name]
    m = ReplicationModel(v.protocol, Config(**v.settings))
    assert m.first_violation is not None
    broken = 0
    for s in reachable(v.protocol, Config(**v.settings), 2500):
        expected = _violated(m.invariants(), s)
        assert m.first_violation(s) == expected
        broken += expected is not None
    assert broken
