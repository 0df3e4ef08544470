"""The run's events reach people: Prefect events from the flow, and the Prefect
automations that ``fraudaug alerts`` sets up to notify on them.

Which events a run emits, and what they carry, is :mod:`pipeline.report.alerts`; here
they are emitted (:func:`emit_run_events`) and turned into automations on the
Prefect server at ``PREFECT_API_URL`` (:func:`set_up`, :func:`automations`,
:func:`remove`), each with a ``SendNotification`` action through a notification
block: a webhook the user names (:func:`webhook_block`) or any Prefect
notification block by its ``TYPE/NAME`` slug (Slack, Microsoft Teams, e-mail …).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

from pipeline.core.errors import PipelineError
from pipeline.report.alerts import (
    NOTIFIABLE,
    RUN_FAILED,
    RUN_FAILED_EVENTS,
    EventKind,
    resource,
    run_events,
)

logger = logging.getLogger("flows.alerts")

PREFIX = "fraudaug: "
"""Every automation ``fraudaug alerts`` owns is named ``fraudaug: <event>``."""

DEFAULT_BLOCK = "fraudaug-alerts"
"""The webhook block's name when ``--webhook`` creates it."""

WEBHOOK_JSON = {"text": "{{subject}}\n{{body}}"}
"""The webhook's JSON body: a Slack (or Mattermost, Teams workflow …) incoming
webhook's message, the subject on its first line."""


class AlertsError(PipelineError):
    """No Prefect server to hold automations, or an unknown block or event."""


def emit_run_events(metrics: dict[str, Any], *, report: str | None) -> list[str]:
    """Emit the events a finished run calls for
    (:func:`pipeline.report.alerts.run_events`) with the run as their resource;
    inside a flow run Prefect relates them to the flow run, its flow and its
    deployment. Returns the events' names. Emitting
    never fails the run (Prefect logs a failed send)."""
    from prefect.events import emit_event

    names = []
    for event in run_events(metrics, report=report):
        emit_event(
            event.name,
            resource=resource(metrics["run_id"]),
            related=event.related or None,
            payload=event.payload,
        )
        names.append(event.name)
    return names


def tell_refused(reason: str, *, data: str) -> bool:
    """Emit ``fraudaug.run.refused`` (:func:`pipeline.report.alerts.refused_event`)
    to the Prefect server at ``PREFECT_API_URL``, where ``fraudaug alerts``
    notifies on it, and wait until it is sent. Never fails the command and never
    speaks: a server that does not answer gets nothing (``False``)."""
    from pipeline.report.alerts import refused_event

    try:
        check_server()
    except Exception:  # the refusal's own line is what the user needs
        return False
    _send(refused_event(reason, data=data, at=_now()), timeout=30)
    return True


def tell_terminated(*, stages: list[str], run_id: str | None, data: str) -> None:
    """Emit ``fraudaug.run.terminated``
    (:func:`pipeline.report.alerts.terminated_event`) from a stopped flow run
    and give it a few seconds to be sent: a stopped command has little time
    (a scheduler's SIGKILL follows its SIGTERM). Never fails and never speaks."""
    from pipeline.core import interrupts
    from pipeline.report.alerts import terminated_event

    event = terminated_event(
        signal=interrupts.how(), stages=stages, run_id=run_id, data=data, at=_now()
    )
    with interrupts.telling(TERMINATED_EVENT):
        try:
            check_server()  # else nothing: Prefect would start a server to send it
            _send(event, timeout=5)
        except Exception:
            interrupts.not_told(TERMINATED_EVENT)


TERMINATED_EVENT = "the Prefect server (no fraudaug.run.terminated event)"
"""What a stopped run's last line says when its event could not be sent."""


def _now() -> str:
    from datetime import UTC, datetime

    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}"


def _send(event, *, timeout: float) -> None:
    """Emit ``event`` with its run as resource; wait up to ``timeout`` seconds
    until it is sent."""
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker

    emit_event(
        event.name,
        resource=resource(event.payload["run_id"]),
        related=event.related or None,
        payload=event.payload,
    )
    # The worker's "Still processing items" progress line is not the user's.
    progress = logging.getLogger(EventsWorker.__name__)
    level = progress.level
    progress.setLevel(logging.ERROR)
    try:
        EventsWorker.drain_all(timeout=timeout)
    finally:
        progress.setLevel(level)


def check_server() -> str:
    """The Prefect server's API address (``PREFECT_API_URL``), answering; else
    one line saying what to do. Automations live on a server: the temporary one
    a lone ``fraudaug run`` starts is gone with it."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        from prefect.settings import PREFECT_API_URL

        url = PREFECT_API_URL.value()
    if not url:
        raise AlertsError(
            "alerts need a Prefect server: start one (prefect server start) and "
            "set PREFECT_API_URL, e.g. http://127.0.0.1:4200/api"
        )
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        failure = client.api_healthcheck()
    if failure is not None:
        raise AlertsError(f"the Prefect server at {url} does not answer: {failure}")
    return url


def webhook_block(url: str, name: str = DEFAULT_BLOCK) -> UUID:
    """A custom-webhook notification block named ``name`` posting
    :data:`WEBHOOK_JSON` to ``url`` (saved over a block of that name); its id."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AlertsError(f"--webhook {url}: not an http(s) address")
    block = CustomWebhookNotificationBlock(
        name=name,
        url=url,
        json_data=WEBHOOK_JSON,
        # The user names this address themselves: a receiver inside their own
        # network is what they mean, not a forged request.
        allow_private_urls=_is_private(parts.hostname),
    )
    return block.save(name, overwrite=True)


def named_block(slug: str) -> UUID:
    """The id of an existing notification block, ``TYPE/NAME`` (as ``prefect
    block ls`` shows it, e.g. ``slack-webhook/fraud-team``)."""
    from prefect.blocks.core import Block
    from prefect.blocks.notifications import NotificationBlock

    if slug.count("/") != 1:
        raise AlertsError(f"--block {slug}: expected TYPE/NAME, e.g. slack-webhook/ops")
    try:
        block = Block.load(slug)
    except (ValueError, KeyError) as exc:
        raise AlertsError(f"--block {slug}: no such block ({exc})") from None
    if not isinstance(block, NotificationBlock):
        raise AlertsError(f"--block {slug}: not a notification block")
    from prefect.client.orchestration import get_client

    block_type, name = slug.split("/")
    with get_client(sync_client=True) as client:
        return client.read_block_document_by_name(name, block_type).id


def kinds(names: list[str] | None) -> list[EventKind]:
    """The events to notify on: ``names`` (event names, or ``failed`` for a failed
    run), else every event that is an alert (:attr:`EventKind.alert`)."""
    if not names:
        return [k for k in NOTIFIABLE if k.alert]
    by_name = {k.name: k for k in NOTIFIABLE} | {"failed": RUN_FAILED}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise AlertsError(
            f"unknown event {', '.join(unknown)}; expected one of " + ", ".join(by_name)
        )
    return list(dict.fromkeys(by_name[n] for n in names))


def automation_for(kind: EventKind, block_id: UUID, flow_name: str):
    """The automation that notifies on ``kind`` through the block ``block_id``:
    each event, as it arrives (a reactive trigger, one notification per event)."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import (
        AutomationCore,
        EventTrigger,
        Posture,
    )

    if kind is RUN_FAILED:
        trigger = EventTrigger(
            expect=set(RUN_FAILED_EVENTS),
            match={"prefect.resource.id": "prefect.flow-run.*"},
            match_related={
                "prefect.resource.role": "flow",
                "prefect.resource.name": flow_name,
            },
            posture=Posture.Reactive,
            threshold=1,
            within=0,
        )
    else:
        trigger = EventTrigger(
            expect={kind.name},
            match={"prefect.resource.id": "fraudaug.run.*"},
            posture=Posture.Reactive,
            threshold=1,
            within=0,
        )
    return AutomationCore(
        name=PREFIX + ("run failed" if kind is RUN_FAILED else kind.name),
        description=f"fraudaug alerts: {kind.when}",
        trigger=trigger,
        actions=[
            SendNotification(
                block_document_id=block_id, subject=kind.subject, body=kind.body
            )
        ],
    )


def set_up(block_id: UUID, chosen: list[EventKind], flow_name: str) -> list[str]:
    """Create or update (by name) the automation of each of ``chosen``; remove
    fraudaug's automations for events no longer chosen. Running it again
    changes nothing. Returns a line per automation."""
    from prefect.client.orchestration import get_client

    made = (automation_for(k, block_id, flow_name) for k in chosen)
    wanted = {a.name: a for a in made}
    lines = []
    with get_client(sync_client=True) as client:
        existing = _owned(client)
        for name, automation in wanted.items():
            same = [a for a in existing if a.name == name]
            if same:
                client.update_automation(same[0].id, automation)
                for extra in same[1:]:  # made by hand or by an older version
                    client.delete_automation(extra.id)
                lines.append(f"updated {name}")
            else:
                client.create_automation(automation)
                lines.append(f"created {name}")
        for automation in existing:
            if automation.name not in wanted:
                client.delete_automation(automation.id)
                lines.append(f"removed {automation.name}")
    return lines


def automations() -> list[Any]:
    """fraudaug's automations on the server, by name."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return sorted(_owned(client), key=lambda a: a.name)


def remove() -> list[str]:
    """Delete every fraudaug automation; their names."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        owned = _owned(client)
        for automation in owned:
            client.delete_automation(automation.id)
    return sorted(a.name for a in owned)


def describe(automation: Any) -> str:
    """One line: name, enabled, the events it expects, the block it notifies."""
    trigger = automation.trigger
    expects = ", ".join(sorted(getattr(trigger, "expect", None) or [])) or "-"
    blocks = ", ".join(
        str(getattr(action, "block_document_id", "")) for action in automation.actions
    )
    state = "enabled" if automation.enabled else "disabled"
    return f"{automation.name}  [{state}]  on {expects}  -> block {blocks}"


def _owned(client) -> list[Any]:
    return [a for a in client.read_automations() if a.name.startswith(PREFIX)]


def _is_private(host: str) -> bool:
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return any(
        ipaddress.ip_address(a.split("%")[0]).is_private
        or ipaddress.ip_address(a.split("%")[0]).is_loopback
        for a in addresses
    )
