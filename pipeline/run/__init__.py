"""A run from end to end, without Prefect: its stages (each a function a
Prefect task calls, reading its inputs from files, writing its outputs
atomically and returning a small JSON-able dict, so that tasks pass paths and
summaries, never frames) — :mod:`prepare`, :mod:`train`, :mod:`fit`,
:mod:`conclude` — with run folders and their index (:mod:`folders`), the stage
cache (:mod:`cache`) and retention. The order a run takes them in is the flow's
(:mod:`flows.fraud_flow`)."""
