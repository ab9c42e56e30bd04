"""Bad input to the commands that touch real Kafka processes, jars and cluster folders, as tables for the one
bad-input corpus (tests/test_bad_input_corpus.py imports them; tests/test_live_safety.py runs them too, checking
also that the jar cache and the data files here are untouched).

`LIVE_OPTIONS` has the shape of the corpus's OPTIONS (a label -> a valid base command line and, per option, its
bad values; the error line must name the option) and `LIVE_EXTRA` the shape of its EXTRA ((argv, the place the
error line must name)). Each case runs in an empty working directory holding the corpus's valid files (plan.json,
current.txt, brokers.txt, group.json, trace.json and an empty folder subdir) with XDG_CACHE_HOME pointing at an
empty cache. Every case is refused without starting a JVM, running Maven or waiting on a cluster: a release that
is not known, a cluster folder that is not the one its marker names, a port nothing listens on, a schedule line
past any type.

Files the tables name are under tests/data/live: cluster folders that are not kcheck's to act on (a copy of one,
whose marker names another folder and whose state file names PID 1; one without a marker; corrupt markers) and
chaos schedules whose lines are out of range. Cases that need a process, a FIFO or a symbolic link loop are in
tests/test_live_safety.py.
"""

from __future__ import annotations

from pathlib import Path

LIVE_DATA = Path(__file__).parent / "data" / "live"
LONG = "x" * 100_000
CONTROLS = ("\x1b[31m", "\x00", "\x1b]0;owned\x07", "\u202e")
CLOSED = "127.0.0.1:1"  # nothing listens on port 1 here: refused by the OS at once

# A release that is not one kcheck knows, an empty one, a path, control characters: refused before the jar cache
# or Maven is touched.
RELEASES = ["", " ", "9.9.9", "4.4", "4.4.0.0", "4.4.0-SNAPSHOT", "v4.4.0", "latest", "3.8.1", "0.10.2.2", "..", ".",
            "../../x", "/tmp/x", "4.4.0/../../x", "4.4.0/", "~/x", "4.4.0\n", "\n4.4.0", "\t4.4.0", "4.4.0\x00",
            "\u0664.\u0664.\u0660", "\uff14.4.0", *CONTROLS, LONG]
SHORT_RELEASES = ["", "9.9.9", "../../x", "/tmp/x", "4.4.0\n", "\x1b[31m", LONG]
# Cluster folders kcheck must not act on.
FOLDERS = [str(LIVE_DATA / n) for n in ("copy", "no-marker", "bad-marker", "nested-marker", "wrong-marker",
                                        "marker-is-a-folder")]
NOT_CLUSTERS = ["", "nope", "subdir", ".", "plan.json", "plan.json/c", "/dev/null", "/proc/self/cwd", "/",
                *FOLDERS, *CONTROLS[:2]]
# Folders a new cluster cannot be set up in (absent or empty is fine: those are not here).
NOT_NEW = ["", "plan.json", "plan.json/c", "/dev/null", "/proc/kcheck-cluster", "/proc/self/cwd", ".",
           "/", *FOLDERS[:2], "trace.json/x/y"]
BIG_INTS = ["x", "1.5", "", "2147483648", "9" * 5000, "\u0663", "0x10", "1e3"]
SECONDS = ["0", "-1", "0.5", "nan", "inf", "-inf", "1e309", "x", ""]
PLACE = ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"]
LIVE_VERIFY = ["verify", "--bootstrap-server", CLOSED]
LIVE_VR = ["verify-reassignment", "--bootstrap-server", CLOSED, "plan.json"]
JVM_CLASSES = ["jvm:", "jvm:1abc", "jvm:a..b", "jvm:a b", "jvm:a.", "jvm:.a", "jvm:a/b", "jvm:../x", "jvm:a-b",
               "jvm:com.example.\x1b[31m", "jvm:a\x00b", "jvm:" + LONG]
CLASSPATHS = ["nope.jar", "subdir/nope", "plan.json", "/dev/null", "nope-folder/", "subdir:nope.jar", "\x1b[31m.jar",
              LONG]

CONTROLLERS = ["0", "-1", "2", "4", "6", "7", *BIG_INTS]  # 1, 3 or 5 only
LIVE_OPTIONS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "cluster up": (["cluster", "up", "--dir", "newcluster"], {
        "--kafka-version": RELEASES,
        "--brokers": ["0", "-1", "65", "1000", *BIG_INTS],
        "--controllers": CONTROLLERS,
        "--racks": ["", ",", "a,,b", "a b", "a,\x1b[31m", "r\x00", "\u202e", "x" * 300, LONG],
        "--timeout": [*SECONDS, "3601", "1e10"],
        "--dir": NOT_NEW,
    }),
    "cluster down": (["cluster", "down"], {"--dir": NOT_CLUSTERS}),
    "cluster status": (["cluster", "status"], {"--dir": NOT_CLUSTERS}),
    "cluster status --json": (["cluster", "status", "--json"], {"--dir": FOLDERS[:2]}),
    "chaos": (["chaos"], {
        "--kafka-version": RELEASES,
        "--brokers": ["0", "-1", "65", *BIG_INTS],
        "--controllers": CONTROLLERS,
        "--partitions": ["0", "-1", "1001", *BIG_INTS],
        "--replication-factor": ["0", "-1", "4", "65", "x", "9" * 5000],
        "--min-insync-replicas": ["0", "-1", "4", "x"],
        "--duration": [*SECONDS, "86401", "1e12"],
        "--seed": ["x", "1.5", "", "9223372036854775808", "-9223372036854775809", "9" * 5000, "\u0661"],
        "--faults": ["", ",", "nope", "start", "resume", "kill,nope", "Kill", "\x1b[31m", LONG],
        "--rate": ["0", "-1", "0.05", "10001", "nan", "inf", "x"],
        "--client": ["", "nope", "JAVA", "java", "kafka-python", "\x1b[31m", LONG],
        "--topic": ["", ".", "..", "a b", "t\u00f6pic", "top/ic", "x" * 250, "__consumer_offsets",
                    "__transaction_state", "__share_group_state", "__cluster_metadata", *CONTROLS, LONG],
        "--heal-timeout": [*SECONDS, "3601"],
        "--max-concurrent": ["0", "-1", "17", "\u0661", *BIG_INTS],
        "--json": ["plan.json", "trace.json", "subdir", "nodir/out.json", "plan.json/x.json", "/proc/kcheck.json",
                   "/dev/null", "", "/"],
        "--dir": NOT_CLUSTERS,
    }),
    "replay --on-cluster": (["replay", "trace.json", "--on-cluster"], {
        "--kafka-version": RELEASES,
        "--dir": [*NOT_NEW, *FOLDERS],
    }),
    "kafka-classpath": (["kafka-classpath"], {"--kafka-version": RELEASES}),
    "verify --bootstrap-server": (LIVE_VERIFY, {
        "--bootstrap-server": ["", ",", "localhost", "host:port", "h:0", "h:70000", "a b:1", "\x1b[31m:1",
                               "x" * 300 + ":1", "h:\u0661", "127.0.0.1:+1", LONG, CLOSED,
                               f"{CLOSED},127.0.0.1:2", "no-such-host.invalid:9092"],
        "--threshold": ["0.5", "nan", "x"],
        "--max-replicas-per-broker": ["0", "-1", "x"],
        "--min-insync-replicas": ["0", "-1", "2147483648", "x"],
        "--controller": ["", "x", "ZooKeeper", "\x1b[31m"],
        "--block": ["", "x"],
        "--kafka-version": SHORT_RELEASES,
        "--fail-on": ["", "x"],
        "--junit-xml": ["nodir/x.xml", "subdir"],
        "--decommission": ["x", "-1", ""],
    }),
    "verify-reassignment --bootstrap-server": (LIVE_VR, {
        "--bootstrap-server": ["", "localhost", "h:0", "\x1b[31m:1", CLOSED],
        "--threshold": ["0.5", "nan"],
        "--max-replicas-per-broker": ["0", "x"],
        "--min-insync-replicas": ["0", "2147483648"],
        "--controller": ["", "x"],
        "--kafka-version": SHORT_RELEASES,
        "--junit-xml": ["nodir/x.xml"],
    }),
    "place (releases)": (PLACE, {"--against-kafka": RELEASES, "--kafka-version": RELEASES}),
    "assign (releases)": (["assign", "group.json"], {"--against-kafka": SHORT_RELEASES,
                                                     "--kafka-version": SHORT_RELEASES}),
    "verify (releases)": (["verify", "plan.json"], {"--kafka-version": SHORT_RELEASES}),
    "verify-reassignment (releases)": (["verify-reassignment", "current.txt", "plan.json"],
                                       {"--kafka-version": SHORT_RELEASES}),
    "prove (releases)": (["prove"], {"--kafka-version": SHORT_RELEASES}),
    "reassign (releases)": (["reassign", "--from", "1,2,3", "--to", "4,5,6"], {"--kafka-version": SHORT_RELEASES}),
    "explore (releases)": (["explore", "--examples", "1", "--steps", "1"], {"--kafka-version": SHORT_RELEASES}),
    "exhaust (releases)": (["exhaust", "--max-states", "1"], {"--kafka-version": SHORT_RELEASES}),
    "replay (releases)": (["replay", "trace.json"], {"--kafka-version": SHORT_RELEASES}),
    "liveness (releases)": (["liveness"], {"--kafka-version": SHORT_RELEASES}),
    "rules (releases)": (["rules"], {"--kafka-version": SHORT_RELEASES}),
    "sweep (releases)": (["sweep", "placement"], {"--against-kafka": SHORT_RELEASES,
                                                  "--kafka-version": SHORT_RELEASES}),
    "place (jvm plug-ins)": (PLACE, {"--placer": JVM_CLASSES, "--classpath": CLASSPATHS}),
    "assign (jvm plug-ins)": (["assign", "group.json"], {"--assignor": JVM_CLASSES[:6], "--classpath": CLASSPATHS[:4]}),
    "optimize (jvm plug-ins)": (["optimize", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"],
                                {"--placer": JVM_CLASSES[:4], "--classpath": CLASSPATHS[:3]}),
    "prove (jvm plug-ins)": (["prove", "--max-brokers", "3"], {"--placer": JVM_CLASSES[:4],
                                                                "--classpath": CLASSPATHS[:3]}),
}

SCHEDULES = LIVE_DATA / "schedules"


def _schedule(name: str, line: int | None = 1) -> tuple[list[str], str]:
    path = str(SCHEDULES / name)
    return ["chaos", "--schedule", path], path if line is None else f"{path}:{line}"


LIVE_EXTRA: list[tuple[list[str], str]] = [
    # chaos schedules: numbers past any type, non-ASCII digits, times past a day, targets that are no broker
    *[_schedule(name) for name in ("digits.txt", "overflow.txt", "arabic-seconds.txt", "arabic-target.txt",
                                   "huge-target.txt", "target-digits.txt", "past-a-day.txt", "negative.txt",
                                   "exponent.txt", "nan.txt", "infinity.txt", "kind-control.txt",
                                   "unknown-broker.txt", "start-leader.txt", "reassign-target.txt",
                                   "too-many-words.txt", "seven-decimals.txt", "active-controller-alone.txt",
                                   "lossy-kill-controller.txt", "coordinator-ordinary.txt")],
    # --producers transactional: a schedule that deletes records (line 3), options that do not apply, another kind
    ([*_schedule("delete-records-transactional.txt", 3)[0], "--producers", "transactional"],
     _schedule("delete-records-transactional.txt", 3)[1]),
    (["chaos", "--producers", "transactional", "--rate", "5"], "--rate"),
    (["chaos", "--producers", "transactional,plain"], "--producers"),
    (["chaos", "--producers", "plain,transactional"], "--producers"),
    (["chaos", "--producers", "transactional", "--faults", "kill,delete-records"], "--faults"),
    (["chaos", "--producers", "transactional", "--client", "python"], "--client"),
    _schedule("backwards.txt", 2), _schedule("comments-only.txt", None),
    (["chaos", "--schedule", "nope.txt"], "nope.txt"), (["chaos", "--schedule", "subdir"], "subdir"),
    (["chaos", "--schedule", "plan.json"], "plan.json:1"), (["chaos", "--schedule", "/dev/zero"], "/dev/zero"),
    (["chaos", "--schedule", "/dev/null"], "/dev/null"), (["chaos", "--schedule", ""], "--schedule"),
    (["chaos", "--schedule", str(SCHEDULES / "digits.txt"), "--faults", "kill"], "--faults"),
    (["chaos", "--schedule", str(SCHEDULES / "digits.txt"), "--max-concurrent", "2"], "--max-concurrent"),
    (["chaos", "--schedule", str(SCHEDULES / "unknown-broker.txt"), "--json", str(SCHEDULES / "unknown-broker.txt")],
     "--json"),
    (["chaos", "--dir", "subdir", "--brokers", "3"], "--brokers"),
    (["chaos", "--dir", "subdir", "--controllers", "3"], "--controllers"),
    (["chaos", "--dir", str(LIVE_DATA / "copy"), "--kafka-version", "4.4.0"], "--dir"),
    (["chaos", "--replication-factor", "3", "--brokers", "2"], "--replication-factor"),
    (["chaos", "--unclean-leader-election=1"], "--unclean-leader-election"),
    # the cluster commands
    (["cluster", "nosuch"], "nosuch"), (["cluster", "up", "--nope"], "--nope"),
    (["cluster", "down", "extra"], "extra"), (["cluster", "status", "--json=1"], "--json"),
    (["cluster", "up", "--dir", "subdir", "--brokers", "0"], "--brokers"),
    # replay --on-cluster
    (["replay", "trace.json", "--dir", "subdir"], "--dir"),
    (["replay", "trace.json", "--on-cluster", "--dir", str(LIVE_DATA / "copy"), "--kafka-version", "4.4.0"], "--dir"),
    (["replay", "trace.json", "--on-cluster", "--json=x"], "--json"),
    # verify --bootstrap-server: every file is checked before the cluster is asked, and named
    ([*LIVE_VERIFY, "--command-config", "nope.properties"], "nope.properties"),
    ([*LIVE_VERIFY, "--command-config", "subdir"], "subdir"),
    ([*LIVE_VERIFY, "--command-config", "plan.json"], "plan.json"),
    ([*LIVE_VERIFY, "--command-config", "/dev/zero"], "/dev/zero"),
    ([*LIVE_VERIFY, "--brokers-file", "nope.txt"], "nope.txt"), ([*LIVE_VERIFY, "--brokers-file", "plan.json"],
                                                                  "plan.json"),
    ([*LIVE_VERIFY, "--baseline", "nope.json"], "nope.json"), ([*LIVE_VERIFY, "--allowlist", "nope.txt"], "nope.txt"),
    ([*LIVE_VERIFY, "plan.json"], "plan"), (["verify", "plan.json", "--command-config", "brokers.txt"],
                                            "--command-config"),
    ([*LIVE_VR, "--brokers-file", "nope.txt"], "nope.txt"),
    (["verify-reassignment", "--bootstrap-server", CLOSED, "current.txt"], "current.txt"),
    (["verify-reassignment", "--bootstrap-server", CLOSED, "nope.json"], "nope.json"),
    (["verify-reassignment", "--bootstrap-server", CLOSED], "proposed"),
    ([*LIVE_VR, "--command-config", "nope.properties"], "nope.properties"),
    (["verify-reassignment", "current.txt", "plan.json", "--command-config", "brokers.txt"], "--command-config"),
    # --against-kafka and --kafka-version naming two releases
    ([*PLACE, "--against-kafka", "4.4.0", "--kafka-version", "4.0.2"], "--against-kafka"),
    (["kafka-classpath", "extra"], "extra"),
]
