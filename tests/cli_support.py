"""What the CLI tests share: run kcheck in-process, hold an error to one line, write a user's module."""

from __future__ import annotations

import os
import signal
import time
import uuid

from kcheck.cli import main


def run(capsys, *args):
    """`kcheck ARGS` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, *fragments: str) -> None:
    assert err.count("\n") == 1 and err.startswith("kcheck: error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, (f, err)


def write_module(tmp_path, monkeypatch, body: str) -> str:
    """A fresh module (unique name: modules stay imported between tests) on sys.path; returns its name."""
    name = "plug_" + uuid.uuid4().hex[:10]
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def wait_group_gone(group: int, what: str) -> None:
    """Waits up to 20 s until no process of the process group is left (a killed search's workers or JVM end on their
    own); else kills the group and fails, saying `what` was still running."""
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            os.killpg(group, 0)
            time.sleep(0.05)
    except ProcessLookupError:
        return
    os.killpg(group, signal.SIGKILL)
    raise AssertionError(f"{what} still running 20 s later")
