"""The private names of Prefect and CPython the Prefect layer uses
(:mod:`flows.compat`) still have the shape it relies on: one of these fails
when an upgrade changes one."""

from flows import compat


def test_prefects_thread_pool_still_holds_its_cancel_events_and_executor():
    from prefect.task_runners import ThreadPoolTaskRunner

    with ThreadPoolTaskRunner(max_workers=1) as runner:
        assert isinstance(runner._cancel_events, dict)
        assert callable(runner._executor.shutdown)
        compat.abandon_task_threads(runner)
        assert runner._executor is None


def test_cpythons_exit_handlers_can_still_be_run_by_hand():
    """(In a process of its own: this one's handlers are pytest's.)"""
    import subprocess
    import sys

    script = (
        "import atexit, os\n"
        "from flows.compat import run_exit_handlers\n"
        "atexit.register(print, 'ran')\n"
        "run_exit_handlers()\n"
        "os._exit(0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert out.stdout == "ran\n"
