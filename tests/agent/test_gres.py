"""GPU discovery: NVML through a fake pynvml module, and the static fallback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agent.gres import GpuDevice, device_indices, discover, parse_device_list
from agent.gres import nvml as nvml_mod

FAKE = Path(__file__).parent / "fake_nvml" / "pynvml.py"


@pytest.fixture
def fake_nvml(monkeypatch):
    spec = importlib.util.spec_from_file_location("pynvml", FAKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(nvml_mod, "_load", lambda: module)
    return module


def test_nvml_devices_are_listed_in_nvml_order_with_slurm_style_names(fake_nvml, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_GPUS", "2")
    devices = nvml_mod.probe()
    assert [(d.index, d.name, d.memory_mib, d.fake) for d in devices] == [
        (0, "nvidia_h200", 143771, False),
        (1, "nvidia_h200", 143771, False),
    ]
    assert devices[1].uuid.endswith("1")


def test_no_driver_means_no_nvml_devices(fake_nvml, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_GPUS", "-1")
    assert nvml_mod.probe() is None


def test_missing_pynvml_library_means_no_nvml_devices(monkeypatch):
    monkeypatch.setattr(nvml_mod, "_load", lambda: None)
    assert nvml_mod.probe() is None


def test_discover_prefers_nvml_and_falls_back_to_configured_fake_gpus(fake_nvml, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_GPUS", "4")
    devices, source = discover("nvml", configured=2, gpu_type="a100")
    assert source == "nvml" and len(devices) == 4
    devices, source = discover("off", configured=2, gpu_type="a100")
    assert source == "static" and [(d.index, d.name, d.fake) for d in devices] == [
        (0, "a100", True),
        (1, "a100", True),
    ]
    monkeypatch.setenv("FAKE_NVML_GPUS", "-1")
    devices, source = discover("nvml", configured=3, gpu_type=None)
    assert source == "static" and len(devices) == 3
    devices, source = discover("nvml", configured=1, gpu_type=None, real_gpus=False)
    assert source == "static"


def test_subset_of_real_devices_and_device_indices(fake_nvml, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_GPUS", "4")
    devices, _ = discover("nvml", configured=0, gpu_type=None, subset=parse_device_list("2-3"))
    assert [d.index for d in devices] == [2, 3]
    # the scheduler numbers this node's GPUs 0 and 1; CUDA must see the machine's 2 and 3
    assert device_indices([1], devices) == [3]
    assert device_indices([0, 1], devices) == [2, 3]
    assert device_indices([], devices) == []
    assert device_indices([2], devices) == [2]  # not one of this node's: left as it came
    same = [GpuDevice(0, "g"), GpuDevice(1, "g")]
    assert device_indices([1], same) == [1]


def test_device_lists():
    assert parse_device_list("0,2-3") == [0, 2, 3]
    with pytest.raises(ValueError):
        parse_device_list("3-1")
