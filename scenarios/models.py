"""Scenes from robot description files shipped in ``scenarios/data``.

``urdf-arm`` is a two-link arm read by the URDF importer
(:func:`contactlab.reduced.urdf.load_urdf`); ``mjcf-tumble`` a box, a ball and a
hinged paddle over a ground plane compiled by MuJoCo
(:func:`contactlab.reduced.mjcf.load_mjcf`, registered when the ``mjcf`` extra
is installed).  The same files are the examples of the documentation.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from contactlab.scenario import scenario
from contactlab.scene import Scene

#: The folder of the shipped model files.
DATA = Path(__file__).parent / "data"


@scenario("urdf-arm", formulations=("reduced", "maximal"))
def urdf_arm() -> Scene:
    """A two-link arm (``data/arm.urdf``) released horizontally, falling under gravity.

    Shoulder and elbow hinges with damping 0.05 N m s/rad, a gripper block
    welded at the tip (merged into the forearm).  Nothing drives the joints, so
    the file's effort and velocity limits (reported as not represented) do not
    matter here.
    """
    import warnings

    from contactlab.errors import ModelFileWarning
    from contactlab.reduced.urdf import load_urdf

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "(?s).*effort/velocity", ModelFileWarning)
        return load_urdf(DATA / "arm.urdf").with_(dt=0.005, duration=2.0)


if find_spec("mujoco") is not None:

    @scenario("mjcf-tumble")
    def mjcf_tumble() -> Scene:
        """A box and a ball falling onto a hinged paddle and the ground (``data/tumble.xml``)."""
        from contactlab.reduced.mjcf import load_mjcf

        return load_mjcf(DATA / "tumble.xml").with_(duration=1.0)
