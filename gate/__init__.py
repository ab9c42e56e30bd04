"""Judging what a user hands in: the CI gate's policy (baseline, allowlist, --fail-on), the planner that finds the
fewest moves, reassignment plans, `kafka-topics --describe` text and consumer groups judged by the invariants."""
