"""Benchmarks: scripts that print JSON and keep their results in ``results/``.

Speed, memory and quality targets live here, never as assertions in the tests.
"""
