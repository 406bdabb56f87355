"""The pydantic API models mirror the wire dataclasses field for field."""

from __future__ import annotations

import dataclasses
import typing

from controller.api.schemas import WIRE_DATACLASSES, mirror
from slurmlite import protocol as p
from slurmlite.wire_limits import CHOICES


def test_every_wire_dataclass_has_a_mirror_with_the_same_fields_and_defaults():
    for dc in WIRE_DATACLASSES:
        model = mirror(dc)
        fields = {f.name: f for f in dataclasses.fields(dc)}
        assert set(model.model_fields) == set(fields), dc.__name__
        for name, f in fields.items():
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            assert model.model_fields[name].is_required() == required, f"{dc.__name__}.{name}"


def test_all_protocol_dataclasses_used_on_the_wire_are_listed():
    defined = {
        obj for obj in vars(p).values() if dataclasses.is_dataclass(obj) and isinstance(obj, type)
    }
    # LaunchSpec, SignalSpec, NoteSpec and TailSpec travel controller->agent and are
    # mirrored by the agent's own models
    orders = {p.LaunchSpec, p.SignalSpec, p.NoteSpec, p.TailSpec}
    assert defined - set(WIRE_DATACLASSES) == orders


def _example(tp, name=""):  # a value of the given type, to push through the model
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is int:
        return 3
    if tp is float:
        return 1.5
    if tp is bool:
        return True
    if tp is str:
        return CHOICES[name][0] if name in CHOICES else "x"  # a closed vocabulary: one of its words
    if origin is list:
        return [_example(args[0], name)]
    if origin is dict:
        return {(3 if args[0] is int else "k"): _example(args[1])}
    if args and type(None) in args:
        return _example(next(a for a in args if a is not type(None)), name)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return {f.name: _example(hints[f.name], f.name) for f in dataclasses.fields(tp)}
    raise AssertionError(f"no example for {tp}")


def test_a_full_value_survives_the_model_unchanged():
    for dc in WIRE_DATACLASSES:
        value = _example(dc)
        dumped = mirror(dc).model_validate(value).model_dump()
        assert dumped == value, dc.__name__
        assert p.to_dict(p.from_dict(dc, value)) == value, dc.__name__


def test_agent_models_mirror_launch_and_signal_specs():
    from agent.app import LaunchBody, NoteBody, SignalBody, TailBody

    pairs = (
        (p.LaunchSpec, LaunchBody),
        (p.SignalSpec, SignalBody),
        (p.NoteSpec, NoteBody),
        (p.TailSpec, TailBody),
    )
    for dc, model in pairs:
        assert set(model.model_fields) == {f.name for f in dataclasses.fields(dc)}, dc.__name__
