"""``fraudaug alerts``: set up, list or remove the Prefect automations that notify on a
run's events."""

from __future__ import annotations

import argparse

from flows.commands import set_prefect_env
from pipeline.core.errors import ConfigError

NAME = "alerts"
HELP = (
    "set up, list or remove the Prefect automations that notify on a "
    "run's events (degraded champion, drift, no new data, a failed run …)"
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["setup", "list", "remove", "events"],
        help="setup: create or update the automations (again: no change); list; "
        "remove; events: the events a run emits",
    )
    p.add_argument("--webhook", help="setup: post notifications to this URL")
    p.add_argument(
        "--block",
        metavar="TYPE/NAME",
        help="setup: notify through this Prefect notification block instead "
        "(e.g. slack-webhook/fraud-team)",
    )
    p.add_argument(
        "--block-name",
        default="fraudaug-alerts",
        help="setup: the name of the block --webhook saves (default fraudaug-alerts)",
    )
    p.add_argument(
        "--on",
        action="append",
        metavar="EVENT",
        help="setup: an event to notify on (repeatable; `fraudaug alerts events` "
        "lists them; 'failed' for a failed run); default: every alert",
    )


def main(args: argparse.Namespace) -> int:
    from pipeline.report.alerts import NOTIFIABLE

    if args.action == "events":
        for kind in NOTIFIABLE:
            default = "alert" if kind.alert else "on request"
            print(f"{kind.name:30}  {default:10}  {kind.when}")
        return 0
    if args.action == "setup" and bool(args.webhook) == bool(args.block):
        raise ConfigError("alerts setup: give --webhook URL or --block TYPE/NAME")
    set_prefect_env()
    from flows import alerts
    from flows.fraud_flow import FLOW_NAME

    chosen = alerts.kinds(args.on) if args.action == "setup" else []
    url = alerts.check_server()
    if args.action == "list":
        found = alerts.automations()
        for automation in found:
            print(alerts.describe(automation))
        if not found:
            print(f"no fraudaug automations on {url}")
        return 0
    if args.action == "remove":
        removed = alerts.remove()
        print(f"removed {len(removed)} automation(s) from {url}")
        for name in removed:
            print(f"  {name}")
        return 0
    block_id = (
        alerts.webhook_block(args.webhook, args.block_name)
        if args.webhook
        else alerts.named_block(args.block)
    )
    for line in alerts.set_up(block_id, chosen, FLOW_NAME):
        print(line)
    print(f"{len(chosen)} automation(s) on {url} notify through block {block_id}")
    return 0
