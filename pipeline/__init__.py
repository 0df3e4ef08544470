"""fraudaug: GAN vs SMOTE augmentation for credit-card fraud detection.

The library never imports Prefect; ``flows/`` is the orchestration layer on top.
"""

__version__ = "0.1.0"
