"""contactlab: rigid-body dynamics with joints, contact and friction."""

__version__ = "0.1.0"
