"""Issue 36: one `current`. `Protocol.current()` is the newest release's rules, `Protocol.current(VERSION)` a named
release's, and `--protocol current --kafka-version VERSION` (through `ReleaseProfile.protocol`) the same protocol:
the model keeps the table of rules per release, the release profiles' fields (confirmed on each release's jars,
reference/releases.py) must say the same thing."""

from __future__ import annotations

import json

import pytest

from cli_support import run
from kcheck.invariants.replication_searches.runs import Trace
from kcheck.model.replication import protocol as P
from kcheck.model.replication import reassignment as R
from kcheck.model.replication.actions import Action, Config, apply, initial_state
from kcheck.model.replication.protocol import Protocol
from kcheck.reference import releases


def test_current_without_a_release_is_the_default_release_and_the_cli_s_current():
    assert P.DEFAULT_RELEASE == releases.DEFAULT_VERSION
    assert Protocol.current().rules() == Protocol.current(releases.DEFAULT_VERSION).rules()
    assert Protocol.current().rules() == releases.profile().protocol().rules()


@pytest.mark.parametrize("version", releases.RELEASES)
def test_the_model_s_table_agrees_with_each_release_s_profile(version):
    prof, ours = releases.profile(version), Protocol.current(version)
    assert prof.protocol().rules() == ours.rules()
    elr = prof.eligible_leader_replicas
    assert (ours.isr_removal is P.eligible_leader_replicas) == elr
    assert (ours.last_known_leader is P.remember_last_known_leader) == elr
    completion = {"all-targets": R.complete_when_targets_in_sync,
                  "adding-unless-shrinking": R.complete_when_adding_unless_shrinking}[prof.reassignment_completion]
    assert ours.reassignment_completion is completion
    # with ELR turned on (a cluster that enabled it), KAFKA-19522 decides whether a fenced last known leader wins
    on = Protocol.current(version, elr=True)
    fenced_ok = not prof.last_known_leader_must_be_acceptable
    assert on.leader_choice is (P.clean_or_eligible_fenced_last_known if fenced_ok else P.clean_or_eligible)
    assert prof.protocol(True).rules() == on.rules()
    # the rest is Kafka's code, the same in every release
    assert ours.valid_leader is P.in_isr_or_elr_unfenced


def test_a_release_the_model_does_not_know_is_one_clear_error():
    with pytest.raises(ValueError, match="3.9.0 and later, not 3.8.1"):
        Protocol.current("3.8.1")
    with pytest.raises(ValueError, match="not a Kafka release"):
        Protocol.current("4.x")


# Both brokers die uncleanly (power loss) while the ISR is below min.insync.replicas, so both are eligible leader
# replicas until each registers again reporting its unclean shutdown; then ISR and ELR are empty and broker 1, the
# last known leader, is registered but still fenced (it has not caught up with its registration).
FENCED_LAST_KNOWN = [("crash", (2, True)), ("fence", (2,)), ("crash", (1, True)), ("fence", (1,)),
                     ("restart", (1,)), ("restart", (2,))]
ELR_CLUSTER = Config(brokers=2, min_isr=2, records=0, crashes=0, lossy_crashes=2, fences=0, elections=0,
                     isr_shrinks=0, failovers=0, reads=0)


def _play(p: Protocol) -> list:
    s, states = initial_state(ELR_CLUSTER), []
    for kind, args in FENCED_LAST_KNOWN:
        s = apply(s, p, ELR_CLUSTER, Action(kind, args))
        assert s is not None, (kind, args)
        states.append(s)
    return states


def test_4_0_2_elects_a_fenced_last_known_leader_and_4_1_on_do_not():
    old = _play(Protocol.current("4.0.2", elr=True))[-1].registry
    assert (old.leader, old.isr, old.elr, old.fenced) == (1, {1}, set(), {1, 2})
    for v in ("4.1.0", "4.4.0"):
        new = _play(Protocol.current(v, elr=True))[-1].registry
        assert (new.leader, new.isr, new.elr, new.last_known_leader) == (-1, set(), set(), 1), v
    # a new 4.0.2 cluster has ELR off: the ISR keeps its last member and nobody is remembered
    off = _play(Protocol.current("4.0.2"))[-1].registry
    assert off.elr == set() and off.last_known_leader == -1


def test_the_cli_replays_the_fenced_election_under_kafka_version_4_0_2(capsys, tmp_path):
    steps = tuple(Action(k, a) for k, a in FENCED_LAST_KNOWN)
    path = tmp_path / "fenced.json"
    path.write_text(Trace("current+elr@4.0.2", ELR_CLUSTER, steps).to_json())
    code, out, err = run(capsys, "replay", str(path), "--json")
    assert (code, err) == (0, ""), err
    last = json.loads(out)
    assert last["protocol"] == "current+elr@4.0.2"
    code, out, err = run(capsys, "replay", str(path), "--kafka-version", "4.4.0", "--json")
    assert code == 0 and json.loads(out)["protocol"] == "current+elr@4.4.0"
    code, out, err = run(capsys, "replay", str(path), "--kafka-version", "3.8.1")
    assert code == 2 and out == "" and err.startswith("kcheck: error: --kafka-version: ")
