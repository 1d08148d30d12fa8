"""A package outside contactlab that adds one plug-in of each kind through entry points.

Each module is one plug-in; ``ENTRY_POINTS`` is what the package's
``entry_points.txt`` declares (the tests write it into a ``.dist-info`` folder
next to the package, which is all ``importlib.metadata`` needs to find it).
"""

ENTRY_POINTS = {
    "contactlab.models": {"plugin-box-lcp": "contactlab_demo_plugin.model:BoxFrictionLCP"},
    "solvers.backends": {"plugin-dense-kkt": "contactlab_demo_plugin.backend:DenseKKT"},
    "contactlab.constraints": {
        "plugin-fixed-height": "contactlab_demo_plugin.constraint:FixedHeight"
    },
    "contactlab.joints": {
        "plugin-helical": "contactlab_demo_plugin.joint:helical",
        "plugin-pin-slot": "contactlab_demo_plugin.joint:pin_slot",
    },
    "contactlab.formulations": {
        "plugin-particle": "contactlab_demo_plugin.formulation:ParticleFormulation"
    },
    "contactlab.scenarios": {"plugin": "contactlab_demo_plugin.scenarios:SCENARIOS"},
}
