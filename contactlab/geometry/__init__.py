"""Symbolic geometry for joints given by their transform (Si & Guenter).

:mod:`~contactlab.geometry.primitives` builds rigid transforms from
rotations and translations; :mod:`~contactlab.geometry.surfaces` holds
parametric surfaces and curves with their frames.  Both return sympy
expressions that :class:`contactlab.joints.transform.TransformJoint`
differentiates and compiles.
"""
