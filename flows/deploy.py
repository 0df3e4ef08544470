"""Serve the flow as two deployments: ``fraud-augmentation/nightly`` (cron) and
``fraud-augmentation/on-demand``. Started by ``fraudaug serve`` / ``make serve``.

Serving runs flows in this long-lived process's subprocesses; point it at a server
with ``PREFECT_API_URL`` (``make server`` starts one on 127.0.0.1:4200).
"""

from __future__ import annotations

from typing import Any

NIGHTLY = "nightly"
ON_DEMAND = "on-demand"


def build_deployments(
    *,
    cron: str = "0 3 * * *",
    timezone: str = "UTC",
    parameters: dict[str, Any] | None = None,
    task_runner: str = "threads",
    dask_address: str | None = None,
):
    """The two ``RunnerDeployment`` objects (not yet served).

    ``parameters`` are the defaults both deployments start from (``data_path``,
    ``profile``, ``seed``, ``reports_dir``); a run can override any of them
    (``prefect deployment run ... -p profile=smoke``). Each deployment runs one flow
    at a time (concurrency limit 1); the run folder lock and the MLflow store's lock
    around registry decisions also protect a second deployment running at the same
    time.
    """
    from prefect.schedules import Cron

    from flows.fraud_flow import with_task_runner

    flow = with_task_runner(task_runner, dask_address)
    parameters = dict(parameters or {})
    nightly = flow.to_deployment(
        name=NIGHTLY,
        schedules=[Cron(cron, timezone=timezone)],
        parameters=parameters,
        concurrency_limit=1,
        description="Nightly retraining and evaluation on the configured data.",
        tags=["fraudaug", "nightly"],
    )
    on_demand = flow.to_deployment(
        name=ON_DEMAND,
        parameters=parameters,
        concurrency_limit=1,
        description="Run the pipeline now: prefect deployment run "
        "'fraud-augmentation/on-demand' --watch -p profile=smoke",
        tags=["fraudaug", "on-demand"],
    )
    return nightly, on_demand


def serve_deployments(**kwargs: Any) -> None:
    """Serve both deployments until interrupted (Ctrl-C pauses their schedules)."""
    from prefect import serve

    serve(*build_deployments(**kwargs))


def run_and_wait(name: str, timeout: float | None = None) -> str:
    """Run deployment ``name`` (``FLOW/DEPLOYMENT``) now with its own parameters and
    wait until it ends; its flow run's id. The Prefect server is the one
    ``PREFECT_API_URL`` names.

    Raises
    ------
    PipelineError
        The run did not complete (failed, crashed, cancelled, or still running
        after ``timeout`` seconds).
    """
    from prefect.deployments import run_deployment

    from pipeline.core.errors import PipelineError

    flow_run = run_deployment(name=name, timeout=timeout)
    state = flow_run.state
    if state is None or not state.is_completed():
        raise PipelineError(
            f"deployment {name}: flow run {flow_run.name} ({flow_run.id}) ended "
            f"{state.name if state else 'without a state'}, not Completed"
        )
    return str(flow_run.id)
