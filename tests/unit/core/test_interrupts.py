"""SIGTERM unwinds a command even when the signal lands inside C code."""

import signal

import pytest

from flows import cli
from pipeline.core import interrupts


def test_a_termination_lost_inside_c_code_still_exits_143(monkeypatch, capsys):
    """TensorFlow's training step can turn the handler's exception into a
    SystemError (seen once in the suite: exit 1 and a FAILED MLflow run). The
    request was recorded, so the command still says terminated, exits 143 and
    the flow marks its run KILLED."""

    def lost(args):
        try:
            interrupts.on_sigterm(signal.SIGTERM, None)
        except interrupts.Terminated:
            raise SystemError("bad argument to internal function") from None

    monkeypatch.setattr(cli, "cmd_generate", lost)
    argv = ["generate", "--run", "r", "-n", "1", "--out", "o.csv"]
    assert cli.main(argv) == 143
    assert capsys.readouterr().err.strip() == (
        "fraudaug: terminated; nothing was written"
    )
    # The request is forgotten once the command is over: an error is a bug again.
    assert not interrupts.stopped_by(SystemError("x"))


def test_an_error_without_a_request_is_a_failure(monkeypatch):
    def broken(args):
        raise ValueError("a bug")

    monkeypatch.setattr(cli, "cmd_generate", broken)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["generate", "--run", "r", "-n", "1", "--out", "o.csv"])
    assert interrupts.stopped_by(KeyboardInterrupt())
    assert not interrupts.stopped_by(ValueError())
