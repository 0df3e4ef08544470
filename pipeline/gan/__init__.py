"""The conditional WGAN-GP: safe-norm gradient penalty, networks, trainer, sampler.

Importing this package imports TensorFlow (quietly, see :mod:`pipeline.core.backend`);
the rest of the library does not, so commands such as ``fraudaug validate`` start
fast.
"""

from pipeline.core.backend import load_tensorflow

load_tensorflow()
