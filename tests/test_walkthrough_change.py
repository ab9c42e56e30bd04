"""The README's walk-through of checking a proposed change, run as written: a user's rule module, a user's invariant
module, `kcheck exhaust` with change coverage, `kcheck replay` of the differing run, the same search under bounds
that never reach the change (exit 3), and the change made on both sides of KIP-903 (a counterexample). The files
and commands here are the README's, character for character (the README section is pasted from this file's
strings)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

PROPOSED_ISR = '''\
"""Proposed: a follower joins the ISR once it has fetched up to the high watermark and the start of the
leader's epoch, without KIP-903's broker-epoch comparison."""
from dataclasses import replace

from kcheck.model.replication.protocol import Protocol, added_replicas_unfenced, record_every_fetch


def join_without_broker_epoch(leader, follower, registry):
    leo = leader.view_of(follower)
    return (leo is not None and leo >= leader.hw and leo >= leader.epoch_start
            and follower not in registry.fenced)


proposed = replace(Protocol.current(), name="no-broker-epoch-check",
                   description="ISR join without KIP-903's broker-epoch check",
                   isr_join=join_without_broker_epoch)

# ... and the rest of KIP-903 dropped too: the controller's comparison, and the leader's refusal of a fetch
# that a follower's previous incarnation sent
both_sides = replace(proposed, name="no-broker-epoch-checks", alter_partition_validation=added_replicas_unfenced,
                     fetch_state_update=record_every_fetch)
'''

MY_INVARIANTS = '''\
"""My property: every live ISR member holds the leader's records below the high watermark."""
from kcheck.invariants.registry import Severity, Violation, register


@register("user.isr-holds-committed", "Every live ISR member holds the leader's records below its high watermark",
          Severity.HARD, "our design review", "replication")
def isr_holds_committed(s):
    reg = s.state.registry
    if reg.leader < 1:
        return []
    leader = s.state.replica(reg.leader)
    return [Violation("user.isr-holds-committed", Severity.HARD, f"broker {b}",
                      f"broker {b} is in the ISR but lacks the leader's records below offset {leader.hw}")
            for b in sorted(reg.isr)
            if b != leader.id and s.state.replica(b).alive
            and s.state.replica(b).log[:leader.hw] != leader.log[:leader.hw]]
'''

BOUNDS = ("--brokers 2 --min-isr 2 --records 1 --fences 0 --elections 0 --isr-shrinks 1 --failovers 0 --reads 0 "
          "--max-leader-epoch 1 --no-duplicates")
COMMANDS = [
    "kcheck exhaust --protocol proposed_isr:proposed --invariants my_invariants --crashes 1 --lossy-crashes 0 "
    f"{BOUNDS} --atomic-fetch --coverage-dir coverage",
    "kcheck replay coverage/isr_join.json --protocol proposed_isr:proposed",
    "kcheck exhaust --protocol proposed_isr:proposed --invariants my_invariants --crashes 0 --lossy-crashes 0 "
    f"{BOUNDS} --atomic-fetch",
    "kcheck exhaust --protocol proposed_isr:both_sides --invariants my_invariants --crashes 0 --lossy-crashes 1 "
    f"{BOUNDS}",
]


def kcheck(command: str, cwd) -> subprocess.CompletedProcess[str]:
    """`command` as the README runs it, with PYTHONPATH=. (export PYTHONPATH=. in the walk-through)."""
    args = shlex.split(command)
    assert args[0] == "kcheck"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(cwd), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "kcheck", *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_readme_walkthrough_runs_as_written(tmp_path):
    (tmp_path / "proposed_isr.py").write_text(PROPOSED_ISR)
    (tmp_path / "my_invariants.py").write_text(MY_INVARIANTS)

    search = kcheck(COMMANDS[0], tmp_path)
    assert (search.returncode, search.stderr) == (0, ""), search.stdout + search.stderr
    out = " ".join(search.stdout.split())
    assert "search complete: every reachable state within the bounds was visited (a proof within them" in out
    assert "user.isr-holds-committed" in out.split("invariants checked in every state")[1].split("NOT checked")[0]
    assert "isr_join (join_without_broker_epoch, today caught_up_in_leader_epoch): asked in" in out
    assert "fetch_round follower=2: today's rule (caught_up_in_leader_epoch) answered False" in out
    assert "OK: no invariant violated in any reachable state." in out
    trace = json.loads((tmp_path / "coverage" / "isr_join.json").read_text())
    assert trace["protocol"] == "proposed_isr:proposed" and trace["steps"][-1]["action"] == "fetch_round"

    replayed = kcheck(COMMANDS[1], tmp_path)
    assert (replayed.returncode, replayed.stderr) == (0, "")
    out = " ".join(replayed.stdout.split())
    assert (f"step {len(trace['steps'])}: rule isr_join answered differently from today's" in out
            and "today's rule answered False, this protocol's True" in out)

    unreached = kcheck(COMMANDS[2], tmp_path)
    assert unreached.returncode == 3, unreached.stdout + unreached.stderr
    out = " ".join(unreached.stdout.split())
    assert "UNEXERCISED: no invariant violated, but the changed rule(s) isr_join never answered differently" in out

    broken = kcheck(COMMANDS[3], tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    out = " ".join(broken.stdout.split())
    assert "Shortest counterexample (14 steps)" in out
    assert "replication.electable-has-committed at broker 2" in out and "user.isr-holds-committed at broker 2" in out
    assert "alter_partition_validation (added_replicas_unfenced, today isr_members_eligible)" in out
    assert "fetch_state_update (record_every_fetch, today fence_stale_fetch_state)" in out


def test_the_readme_shows_these_files_and_commands():
    """The README's walk-through is this test's: both modules and every command appear there verbatim."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "tasks" / "protocol-change.md").read_text()
    section = readme.split("## Checking a proposed change, start to finish")[1].split("\n## ")[0]
    for text in (PROPOSED_ISR.rstrip(), MY_INVARIANTS.rstrip(), *COMMANDS):
        assert text in section, text[:80]
