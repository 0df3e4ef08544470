"""CTGAN as a peer in the mixed-table benchmark, run by a separate Python that has
``ctgan`` (and PyTorch) installed: not a dependency of fraudaug.

    PEER_PYTHON benchmarks/ctgan_peer.py IN.parquet OUT.parquet ARGS.json

``ARGS.json``: ``{"discrete": [...], "epochs": 300, "n": 5000, "seed": 0}``. Fits
CTGAN on the rows of ``IN.parquet`` (table units), samples ``n`` rows, writes them
to ``OUT.parquet`` and prints the seconds it took as JSON.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    import numpy as np
    import pandas as pd
    import torch
    from ctgan import CTGAN

    source, out, args_path = sys.argv[1:4]
    args = json.loads(open(args_path).read())
    # CTGAN seeds through global state (its own API offers nothing else).
    np.random.seed(args["seed"])
    torch.manual_seed(args["seed"])
    torch.set_num_threads(2)
    frame = pd.read_parquet(source)
    start = time.perf_counter()
    model = CTGAN(epochs=args["epochs"], verbose=False)
    model.fit(frame, discrete_columns=args["discrete"])
    fitted = time.perf_counter() - start
    model.sample(args["n"]).to_parquet(out, index=False)
    print(json.dumps({"fit_seconds": round(fitted, 1)}))


if __name__ == "__main__":
    main()
