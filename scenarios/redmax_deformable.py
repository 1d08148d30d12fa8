"""REDMAX reference scene 12: mass-spring strands attached to a 2-link chain (Sueda's notes §2.7).

Units follow :mod:`scenarios.basic` and :mod:`scenarios.redmax`: the
reference's centimetre-gram-second values converted exactly to SI (10 x 1 x 1
cm links of 0.01 kg, gravity 9.81 m/s^2).  A strand's stiffness ``K`` is an
energy per squared strain (``V = K/2 eps^2``, Sueda's notes eq. 2.81), so it
converts like a torque: 1 g cm^2/s^2 = 1e-7 J, and the reference's 1e5 is
1e-2 J.  As in the reference, a strand's mass (there 0.1 x the link's 10 g)
is shared equally by its nodes.
"""

from __future__ import annotations

from contactlab.reduced.deformable import WORLD, attach_strands, strand_between
from contactlab.scenario import scenario
from contactlab.scene import Scene
from scenarios.basic import CM, _chain
from scenarios.redmax import TORQUE, _scene


@scenario("redmax-mass-springs", formulations=("reduced",))
def mass_springs(stiffness: float = 1e5 * TORQUE, strand_mass: float = 1e-3) -> Scene:
    """REDMAX scene 12: a 2-link chain held by two mass-spring strands.

    stiffness : K of every spring [J] (energy per squared strain; the reference's 1e5).
    strand_mass : mass of each strand [kg], shared by its nodes (the reference's 1 g).

    The chain (revolute y joints, links along x, horizontal at the start)
    carries a 3-node strand from the world point (30, 0, 10) cm to the tip
    of link 1 and a 2-node strand from the centre of link 0 to the centre of
    link 1; the end nodes are attached (Sueda's notes eq. 2.83–2.85), the middle
    node of the first strand is free, and every spring starts at rest.  The
    chain falls and the strands catch it.  Step 5e-3 s over 1 s as in the
    reference.  Reduced coordinates only: the nodes are point masses, whose
    vanishing rotational inertia leaves the maximal KKT matrix numerically
    singular.
    """
    bodies, specs = _chain(2, "R", "y", (0.0,))
    chain = Scene("redmax-mass-springs", tuple(bodies), tuple(specs))
    strands = (
        strand_between(
            chain,
            "strand0",
            3,
            strand_mass,
            stiffness,
            (WORLD, (30 * CM, 0.0, 10 * CM)),
            ("link1", (5 * CM, 0.0, 0.0)),
        ),
        strand_between(
            chain,
            "strand1",
            2,
            strand_mass,
            stiffness,
            ("link0", (0.0, 0.0, 0.0)),
            ("link1", (0.0, 0.0, 0.0)),
        ),
    )
    full = attach_strands(chain, strands)
    return _scene(
        "redmax-mass-springs", full.bodies, full.joints, forces=full.forces, dt=5e-3, duration=1.0
    )
