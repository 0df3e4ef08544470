"""How methods are judged: metrics, intervals and verdicts, the amount
choice, precision top-k, the GAN's fidelity, drift, and a run's metrics.

Pure functions of scores and rows; no model is trained here."""
