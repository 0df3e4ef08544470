"""``fraudaug serve-model``: serve a registered version over HTTP (``mlflow models
serve``), checked file by file first."""

from __future__ import annotations

import argparse

from flows.commands.shared import (
    registry_uri,
    tracking_arg,
)
from pipeline.core.errors import ConfigError, PipelineError
from pipeline.registry.store import DEFAULT_MODEL_URI  # (stdlib only at import)

NAME = "serve-model"
HELP = (
    "serve a registered version over HTTP (mlflow models serve): "
    "transactions in the table's own columns in, score, alert and reasons out"
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-uri",
        default=DEFAULT_MODEL_URI,
        help=f"the version to serve (default: {DEFAULT_MODEL_URI})",
    )
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    p.add_argument("--port", type=int, default=5001, help="default 5001")
    p.add_argument(
        "--workers", type=int, default=1, help="server processes (default 1)"
    )
    tracking_arg(p)


def main(args: argparse.Namespace) -> int:
    """``mlflow models serve`` on a registered version, fetched and checked file by
    file first (the sha256 of every file against the registry's tags), on the
    local environment; stops with Ctrl-C or SIGTERM."""
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port}: expected 1 to 65535")
    if args.workers < 1:
        raise ConfigError(f"--workers {args.workers}: expected 1 or more")
    tracking_uri = registry_uri(args)
    import signal
    import subprocess
    import tempfile

    from pipeline.registry.serving import mlflow_serve, served_layout
    from pipeline.registry.store import fetch_version, missing_model, parse_model_uri

    name, alias, version = parse_model_uri(args.model_uri)
    with tempfile.TemporaryDirectory(prefix="fraudaug-serve-") as tmp:
        found = fetch_version(tracking_uri, name, alias=alias, version=version, dst=tmp)
        if found is None:
            raise missing_model(args.model_uri, alias, f"not in {tracking_uri}")
        if not served_layout(found["path"]):
            raise PipelineError(
                f"{found['model_uri']} was registered before versions were served "
                "(the xgboost flavor on model features): `fraudaug score` scores "
                "with it; the next run registers a version that serves"
            )
        url = f"http://{args.host}:{args.port}/invocations"
        print(
            f"serving {found['model_uri']} ({', '.join(found['aliases']) or 'no alias'}"
            f"; {found['method']} from run {found['run_id']}, threshold "
            f"{found['threshold']:.4f}) at {url}; Ctrl-C stops it",
            flush=True,
        )
        command, env = mlflow_serve(
            found["path"],
            host=args.host,
            port=args.port,
            workers=args.workers,
            tracking_uri=tracking_uri,
        )
        server = subprocess.Popen(command, env=env)
        previous = signal.signal(signal.SIGTERM, lambda *_: server.terminate())
        try:
            code = server.wait()
        except KeyboardInterrupt:  # the server got it too (same terminal)
            code = server.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
    return 0 if code in (0, -signal.SIGINT, -signal.SIGTERM) else code
