"""imbalanced-learn's own estimator checks on GANOverSampler (a tiny GAN each).

Every check passes: multiclass and string targets (the GAN is conditioned on class
indices), pandas and list input, sparse input (densified for the network, returned
sparse), dtype preservation, parameter validation. No expected failures to
document.
"""

from imblearn.utils.estimator_checks import parametrize_with_checks

from pipeline.gan.sampler import GANOverSampler

CHECK_GAN = {
    "latent_dim": 4,
    "generator_widths": (8,),
    "critic_widths": (8,),
    "batch_size": 16,
    "steps": 2,
    "n_critic": 1,
    "min_fraud_rows": 2,
}


@parametrize_with_checks([GANOverSampler(random_state=0, gan_params=CHECK_GAN)])
def test_imbalanced_learn_estimator_checks(estimator, check):
    check(estimator)
