"""``Scene.exclude_pairs``: listed body pairs never collide; a wrong entry is one clear error."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.contact_pairs import scene_contacts
from contactlab.errors import ConfigurationError
from contactlab.scene import Scene
from contactlab.shapes import Box, Plane


def _scene(**kw):
    a, _ = body_from_shape("a", Box(half_extents=np.full(3, 0.1)), mass=1.0)
    b, _ = body_from_shape("b", Box(half_extents=np.full(3, 0.1)), mass=1.0)
    E = np.array([se3.make_transform(None, [0, 0, 0.099]), se3.make_transform(None, [0, 0, 0.29])])
    return Scene("pair", (a, b), static_shapes=(Plane(),), initial_E=E, **kw)


def test_excluded_pair_gives_no_contacts_and_others_stay():
    scene = _scene()
    both = scene_contacts(scene, scene.initial_E)
    pairs = {tuple(sorted((int(a), int(b)))) for a, b in zip(both.body_a, both.body_b)}
    assert pairs == {(-1, 0), (0, 1)}  # a on the ground, b on a
    cut = _scene(exclude_pairs=(("b", "a"),))
    left = scene_contacts(cut, cut.initial_E)
    assert {tuple(sorted((int(a), int(b)))) for a, b in zip(left.body_a, left.body_b)} == {(-1, 0)}
    assert len(left) == sum(1 for a, b in zip(both.body_a, both.body_b) if -1 in (a, b))
    ground = _scene(exclude_pairs=((None, "a"),))
    rest = scene_contacts(ground, ground.initial_E)
    assert {tuple(sorted((int(a), int(b)))) for a, b in zip(rest.body_a, rest.body_b)} == {(0, 1)}


def test_unknown_body_in_exclude_pairs_is_refused():
    with pytest.raises(ConfigurationError, match="exclude_pairs entry .*'c'.*bodies are"):
        _scene(exclude_pairs=(("a", "c"),))
