"""SIGTERM and Ctrl-C unwind a command even when the signal lands inside C code."""

import signal

import pytest

from flows import cli
from flows.commands import generate
from pipeline.core import interrupts


@pytest.mark.parametrize(
    "handler, signum, raised, lost, code, word",
    [
        # TensorFlow's training step turned the handler's exception into a
        # SystemError (seen once in the suite: exit 1 and a FAILED MLflow run).
        (
            interrupts.on_sigterm,
            signal.SIGTERM,
            interrupts.Terminated,
            SystemError("bad argument to internal function"),
            143,
            "terminated",
        ),
        # Ctrl-C during TensorFlow's tracing of a function came out as a
        # TypeError from autograph (seen in the suite: exit 1 and a traceback).
        (
            interrupts.on_sigint,
            signal.SIGINT,
            KeyboardInterrupt,
            TypeError("in user code: Expected float32 passed to 'y'"),
            130,
            "interrupted",
        ),
    ],
    ids=["sigterm", "ctrl-c"],
)
def test_a_stop_lost_inside_c_code_still_ends_the_command_as_stopped(
    monkeypatch, capsys, handler, signum, raised, lost, code, word
):
    """The request was recorded, so the command still says which stop it was
    and exits with its code (and the flow marks its run KILLED)."""

    def command(args):
        try:
            handler(signum, None)
        except raised:
            raise lost from None

    monkeypatch.setattr(generate, "main", command)
    argv = ["generate", "--run", "r", "-n", "1", "--out", "o.csv"]
    # (What the test process had: the default, or ignored when started in the
    # background by a shell without job control.)
    before = signal.getsignal(signal.SIGINT)
    assert cli.main(argv) == code
    assert capsys.readouterr().err.strip() == f"fraudaug: {word}; nothing was written"
    # The request is forgotten once the command is over: an error is a bug again.
    assert not interrupts.stopped_by(type(lost)("x"))
    assert signal.getsignal(signal.SIGINT) is before  # the command's are gone


def test_an_error_without_a_request_is_a_failure(monkeypatch):
    def broken(args):
        raise ValueError("a bug")

    monkeypatch.setattr(generate, "main", broken)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["generate", "--run", "r", "-n", "1", "--out", "o.csv"])
    assert interrupts.stopped_by(KeyboardInterrupt())
    assert not interrupts.stopped_by(ValueError())


def test_a_flow_run_by_the_command_unwinds_through_its_handler(harness):
    """A Prefect flow run puts its own SIGTERM handler in place, which records
    nothing (a SIGTERM that TensorFlow then turned into a TypeError was exit 1
    and a traceback). Under the command's handlers the flow's body runs with
    the command's handler again, and the flow run's one afterwards; without
    them (a deployment's run) the body keeps Prefect's."""
    from prefect import flow

    @flow
    def body_handler() -> tuple[bool, bool]:
        with interrupts.handled_here() as handled:
            return handled, signal.getsignal(signal.SIGTERM) is interrupts.on_sigterm

    assert body_handler() == (False, False)
    previous = interrupts.install()
    try:
        assert body_handler() == (True, True)
        assert signal.getsignal(signal.SIGTERM) is interrupts.on_sigterm
    finally:
        interrupts.restore(previous)
    assert not interrupts.handling()
    assert signal.getsignal(signal.SIGTERM) is previous[0]


def test_a_signal_ignored_when_the_command_started_stays_ignored():
    """A shell starts a background job with SIGINT ignored (Ctrl-C at the
    terminal is not for it): the command leaves it so, and takes SIGTERM."""
    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        previous = interrupts.install()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is interrupts.on_sigterm
        interrupts.restore(previous)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])


def test_a_stop_swallowed_in_a_callback_is_asked_for_again_and_says_nothing(capsys):
    """SIGTERM landing in a weakref's callback (seen in a run: the GAN went on
    training for minutes) is swallowed by CPython: it prints nothing, and the
    main thread's loops raise it again (:func:`interrupts.check`)."""
    import gc
    import weakref

    class Held:
        pass

    previous = interrupts.install()
    try:
        interrupts.check()  # nothing asked for: nothing raised
        held = Held()
        ref = weakref.ref(held, lambda _: interrupts.on_sigterm(signal.SIGTERM, None))
        del held
        gc.collect()
        assert ref() is None
        assert capsys.readouterr().err == ""
        with pytest.raises(interrupts.Terminated):
            interrupts.check()
    finally:
        interrupts.restore(previous)
    interrupts.check()  # forgotten with the command's handlers


DEADLINE_SCRIPT = """
import sys, time
from flows import cli
from flows.commands import run
from pipeline.core import interrupts
from pipeline.registry.tracking import MLFLOW_RUN_END

interrupts.GRACE_S = 1.0

def stuck(args):
    try:
        print("running", flush=True)
        time.sleep(60)
    except interrupts.Terminated:
        with interrupts.telling(MLFLOW_RUN_END):  # a store that never answers
            time.sleep(60)

run.main = stuck
sys.argv = ["fraudaug", "run", "--data", "t.csv"]
cli.entry()
"""


def test_a_stop_held_up_by_a_service_ends_at_its_deadline_saying_what_it_could_not_tell(
    tmp_path,
):
    """A SIGTERM'd run whose MLflow store does not answer: at the deadline the
    process ends with 143 and one line naming what was left untold (its
    MLflow run is not claimed KILLED)."""
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-c", DEADLINE_SCRIPT],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "running"
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert time.monotonic() - sent < 10
    assert err.strip().splitlines() == [
        "fraudaug: terminated; the run stopped (the same command resumes it); "
        "not told: the MLflow store (its run still shows RUNNING)"
    ]
