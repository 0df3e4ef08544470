"""The methods compared: each declared once, by family (``baseline``,
``over_sampling``, ``under_sampling``, ``combine``, ``generative``), collected
with the plugins' (``plugins``: entry points) in ``registry``; the amounts each is
fitted at (``amounts``), a sampler run on the training rows (``resample``),
fraudaug's variants of imbalanced-learn's samplers (``samplers``) and the exact
neighbour cleaning (``cleaning``)."""
