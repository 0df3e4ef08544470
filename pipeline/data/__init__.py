"""The table: its schema (built in or detected), reading and validating it
(one file, partitions or a stream), demo tables and replays.

Stands on :mod:`pipeline.core`."""
