"""The conditional WGAN-GP: safe-norm gradient penalty, networks, trainer, sampler.

Importing this package imports TensorFlow; the rest of the library does not, so
commands such as ``fraudaug validate`` start fast.
"""
