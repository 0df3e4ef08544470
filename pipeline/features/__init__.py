"""From the table to model space: the splits (random, temporal, rolling), the
transformer fitted on a split's training rows, and a split's rows as the
per-split stages read them."""
