"""Models that outlive a run: MLflow tracking, the model registry, the
champion/challenger rule and scoring new transactions with the champion."""
