"""The Prefect layer on top of the library: the flow and its tasks, deployments,
the events a run emits, and the ``fraudaug`` command line."""
