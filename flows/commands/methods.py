"""``fraudaug methods``: list the methods a run can compare: the built-in ones and the
installed plugins'."""

from __future__ import annotations

import argparse
import json

from pipeline.resampling import registry

NAME = "methods"
HELP = (
    "list the methods a run can compare: the built-in ones and the installed plugins'"
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the list as JSON")


def main(args: argparse.Namespace) -> int:
    """Every method: name, family, what its amount is, its level of complexity (a
    more complex method must earn its place as challenger), where it comes from
    (built in, or a plugin's distribution and version) and its one line; a
    plugin that cannot be imported says why. Default config: every built-in
    method."""
    methods = registry.all_methods()
    default = set(registry.built_in_names())
    if args.json:
        print(
            json.dumps(
                [{**m.describe(), "default": m.name in default} for m in methods],
                indent=2,
            )
        )
        return 0
    header = ("method", "family", "amount", "complexity", "source")
    rows = [
        (
            m.name,
            m.family,
            m.amount,
            f"{int(m.complexity)} {m.complexity.words}",
            m.source,
        )
        for m in methods
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for method, row in zip(methods, rows, strict=True):
        cells = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        print(f"{cells}  {method.summary}")
    plugins = [m for m in methods if not m.built_in]
    example = json.dumps([registry.roles()["reference"], registry.interpolation()])
    print(
        f"\n{len(methods) - len(plugins)} built-in, {len(plugins)} from plugins "
        "(entry points fraudaug.samplers, fraudaug.generators). Choose with "
        f"--set 'evaluation.methods={example[:-1]}, ...]'; the default is every "
        "built-in method. The challenger a run registers is the simplest method "
        "unless a more complex one is shown better than every simpler one on "
        "validation rows by more than the ROPE."
    )
    return 0
