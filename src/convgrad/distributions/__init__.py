"""``convgrad.distributions``: ``torch.distributions``' families with its names and
arguments.  Continuous: ``Normal``, ``LogNormal``, ``Uniform``, ``Exponential``,
``Laplace`` (all with a reparameterised ``rsample``), ``Gamma``, ``Beta``, ``Dirichlet``
(``sample`` only), ``MultivariateNormal`` (``rsample``); discrete: ``Categorical``,
``OneHotCategorical``, ``Bernoulli``, ``Binomial``, ``Poisson``; ``Independent``; and
``kl_divergence`` for pairs of one family.  ``log_prob``, ``entropy`` and the KL
divergences are composed of differentiable operations, so they train (the REINFORCE loss
``-log_prob(action) * reward``, a VAE's KL term).  Draws come from the library's
generator (``cg.manual_seed``).  Arguments are not validated against their supports
beyond shapes (torch's ``validate_args`` is accepted only when False or None).
"""

from .base import Distribution
from .continuous import Exponential, Laplace, Uniform
from .discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence
from .multivariate import MultivariateNormal
from .normal import LogNormal, Normal

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Dirichlet", "Distribution",
           "Exponential", "Gamma", "Independent", "Laplace", "LogNormal", "MultivariateNormal",
           "Normal", "OneHotCategorical", "Poisson", "Uniform", "kl_divergence"]
