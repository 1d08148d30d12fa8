"""Contact/friction models, registered by name (see :func:`contactlab.models.base.make_model`).

Importing this package registers every built-in model: ``frictionless``,
``anitescu-hart``, ``box-friction``, ``coulomb``, ``stewart-trinkle``,
``staggered-projections``, ``bisp``, ``joint-friction-sp``, ``soft`` (MuJoCo's soft
constraints) and ``penalty`` (Hunt--Crossley with regularized friction).
"""

from contactlab.models import (  # noqa: F401
    anitescu_hart,
    bisp,
    box_friction,
    coulomb,
    frictionless,
    penalty,
    soft,
    staggered,
    stewart_trinkle,
)
from contactlab.models.base import ContactModel, make_model, model_names, register_model

__all__ = ["ContactModel", "make_model", "model_names", "register_model"]
