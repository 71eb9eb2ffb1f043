"""The von Mises distribution on the circle: density exp(kappa cos x) / (2 pi I0(kappa)),
periodic in x as scipy's."""
import math

from ... import numpy as fnp
from .. import special
from ._util import promote, valid


def logpdf(x, kappa):
    # kappa (cos x - 1) - log(2 pi i0e(kappa)): the exponentially scaled Bessel function
    # keeps large kappa from overflowing
    x, kappa = promote(x, kappa)
    value = kappa * (fnp.cos(x) - 1) - math.log(2 * math.pi) - fnp.log(special.i0e(kappa))
    return valid(kappa > 0, value)


def pdf(x, kappa):
    return fnp.exp(logpdf(x, kappa))
