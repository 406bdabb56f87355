"""What a job is charged and how that charge fades (slurmlite/scheduler/billing.py,
usage.py): TRESBillingWeights, PriorityDecayHalfLife, PriorityUsageResetPeriod."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmlite.config import load_config, parse_config
from slurmlite.scheduler.billing import (
    TresWeightError,
    billing,
    charge,
    job_tres,
    parse_tres_weights,
)
from slurmlite.scheduler.usage import decay, decay_factor, next_reset, running_charge, should_reset

HOUR, DAY = 3600.0, 86400.0


def ts(*args: int, tz=UTC) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


# ------------------------------------------------------------------ billing


def test_weight_string_of_the_gpu_lab_example():
    # Mem=0.25G: 0.25 per GiB = 0.25/1024 per MiB (memory is counted in MiB)
    w = parse_tres_weights("CPU=1.0,Mem=0.25G,GRES/gpu=8.0")
    assert w == {"cpu": 1.0, "mem": 0.25 / 1024, "gres/gpu": 8.0}
    job = job_tres(cpus=4, mem=16000, gpus=2)
    # 4 x 1 + 16000 x 0.25/1024 + 2 x 8 = 4 + 3.90625 + 16
    assert billing(job, w) == 23.90625
    # MAX_TRES: the largest per-node term only: max(4, 3.90625, 16)
    assert billing(job, w, max_tres=True) == 16.0


def test_billing_without_weights_is_the_cpu_count_and_unweighted_gpus_are_free():
    job = job_tres(cpus=4, mem=16000, gpus=2)
    assert billing(job, {}) == 4.0 and billing(job, None) == 4.0
    assert billing(job, parse_tres_weights("CPU=2")) == 8.0  # GPUs and memory cost nothing


def test_weights_come_from_the_partition_line():
    cfg = parse_config(
        'NodeName=n1 CPUs=8\nPartitionName=gpu Nodes=n1 TRESBillingWeights="CPU=1.0,GRES/gpu=16"\n'
    )
    assert parse_tres_weights(cfg.partition("gpu").tres_billing_weights) == {
        "cpu": 1.0,
        "gres/gpu": 16.0,
    }


def test_weight_units_and_names():
    assert parse_tres_weights("mem=1T") == {"mem": 1 / 1024**2}  # per TiB -> per MiB
    assert parse_tres_weights("mem=2M,cpu=1K") == {"mem": 2.0, "cpu": 1 / 1024}
    assert parse_tres_weights("GRES/gpu:A100=3,license/matlab=1") == {
        "gres/gpu:a100": 3.0,
        "license/matlab": 1.0,
    }
    assert parse_tres_weights("") == {} and parse_tres_weights(None) == {}
    for bad in ("cpu", "cpu=x", "disk=1", "mem=1Q", "gres/=1"):
        with pytest.raises(TresWeightError):
            parse_tres_weights(bad)


def test_typed_gpus_are_billed_under_both_names():
    job = job_tres(cpus=1, gpus=2, gpu_type="A100")
    assert job["gres/gpu"] == job["gres/gpu:a100"] == 2
    assert billing(job, parse_tres_weights("GRES/gpu:a100=10")) == 20.0


def test_a_finished_job_is_charged_elapsed_times_billing():
    assert charge(600, 23.90625) == 14343.75  # 10 minutes of the example job
    assert charge(600, 4, usage_factor=0.5) == 1200.0  # a QOS UsageFactor of 0.5
    assert charge(-5, 4) == 0.0


# ------------------------------------------------------------------ decay


def test_decay_uses_slurms_linearised_factor():
    # D = 1 - 0.693/H; after one half-life of 7 days 0.50007 remains, not exactly 0.5
    assert decay_factor(7 * DAY) == 1 - 0.693 / (7 * DAY)
    assert decay(1000.0, 7 * DAY, 7 * DAY) == pytest.approx(500.07, abs=0.01)
    assert decay(1000.0, HOUR, 0) == 1000.0  # PriorityDecayHalfLife=0: no decay
    assert decay(1000.0, 0, HOUR) == 1000.0


def test_a_running_job_adds_its_decayed_share_of_the_period():
    # 4 billing for a 60 s period, H = 1 hour: 60 x D^60 x 4
    d = 1 - 0.693 / HOUR
    assert running_charge(4, 60, HOUR) == pytest.approx(60 * d**60 * 4)
    assert running_charge(4, 60, 0) == 240.0  # no decay: plain elapsed x billing
    assert running_charge(4, 60, 0, usage_factor=2.0) == 480.0
    assert running_charge(4, 0, HOUR) == 0.0


@given(usage=st.floats(1, 1e12), half_life=st.floats(HOUR, 365 * DAY))
def test_usage_halves_after_one_half_life(usage, half_life):
    assert decay(usage, half_life, half_life) / usage == pytest.approx(0.5, abs=1e-3)


@given(
    usage=st.floats(0, 1e9),
    first=st.floats(0, 30 * DAY),
    second=st.floats(0, 30 * DAY),
    half_life=st.floats(60, 30 * DAY),
)
def test_decay_in_two_steps_equals_decay_in_one(usage, first, second, half_life):
    two = decay(decay(usage, first, half_life), second, half_life)
    assert two == pytest.approx(decay(usage, first + second, half_life), rel=1e-9, abs=1e-9)
    assert two <= usage


# ------------------------------------------------------------------ resets


def test_reset_boundaries():
    last = ts(2026, 11, 30, 2, 29)  # a Monday
    assert next_reset("DAILY", last) == ts(2026, 12, 1)
    assert next_reset("WEEKLY", last) == ts(2026, 12, 6)  # the next Sunday, 00:00
    assert next_reset("WEEKLY", ts(2026, 12, 6, 0, 0)) == ts(2026, 12, 13)  # from a Sunday
    assert next_reset("MONTHLY", last) == ts(2026, 12, 1)
    assert next_reset("MONTHLY", ts(2026, 12, 15)) == ts(2027, 1, 1)
    assert next_reset("QUARTERLY", last) == ts(2027, 1, 1)
    assert next_reset("QUARTERLY", ts(2026, 2, 14)) == ts(2026, 4, 1)
    assert next_reset("quarterly", ts(2026, 4, 1)) == ts(2026, 7, 1)
    assert next_reset("YEARLY", last) == ts(2027, 1, 1)
    assert next_reset("NONE", last) is None and next_reset("NOW", last) is None
    with pytest.raises(ValueError):
        next_reset("HOURLY", last)


def test_reset_boundaries_are_in_the_controllers_time_zone():
    plus2 = timezone(timedelta(hours=2))
    # 23:30 UTC on 30 Nov is 01:30 on 1 Dec at UTC+2: the next local midnight is 2 Dec
    last = ts(2026, 11, 30, 23, 30)
    assert next_reset("DAILY", last, plus2) == ts(2026, 12, 2, tz=plus2)
    assert next_reset("MONTHLY", last, plus2) == ts(2027, 1, 1, tz=plus2)


def test_should_reset_between_last_reset_and_now():
    last = ts(2026, 11, 30, 12, 0)
    assert not should_reset("DAILY", last, ts(2026, 11, 30, 23, 59))
    assert should_reset("DAILY", last, ts(2026, 12, 1, 0, 0))
    assert not should_reset("MONTHLY", last, ts(2026, 11, 30, 23, 59))
    assert should_reset("MONTHLY", last, ts(2026, 12, 3))
    assert not should_reset("NONE", last, ts(2030, 1, 1))
    # NOW: once, when the controller (re)reads its configuration
    assert should_reset("NOW", last, last, starting=True)
    assert not should_reset("NOW", last, ts(2030, 1, 1))


def test_reset_and_decay_settings_come_from_slurm_conf():
    cfg = parse_config(
        "PriorityDecayHalfLife=14-0\nPriorityUsageResetPeriod=quarterly\n"
        "FairShareDampeningFactor=3\nAccountingStorageEnforce=associations,limits\n"
    )
    assert cfg.priority_decay_half_life * 60 == 14 * DAY
    assert cfg.priority_usage_reset_period == "QUARTERLY"
    assert cfg.fairshare_dampening_factor == 3
    assert cfg.accounting_storage_enforce == ["associations", "limits"]
    bare = parse_config("")
    assert (bare.priority_decay_half_life, bare.priority_usage_reset_period) == (10080, "NONE")
    assert bare.priority_calc_period == 5


def test_the_gpu_lab_example_config_charges_gpus_most():
    # deploy/slurm.conf.example's gpu partition: TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=8.0
    # a job of 4 CPUs, 16000 MiB and 2 GPUs: 4 + 16000 x 0.25/1024 + 2 x 8 = 23.90625 a second
    example = Path(__file__).resolve().parents[2] / "deploy" / "slurm.conf.example"
    gpu = load_config(str(example)).partition("gpu")
    weights = parse_tres_weights(gpu.tres_billing_weights)
    assert billing(job_tres(cpus=4, mem=16000, gpus=2), weights) == pytest.approx(23.90625)
    assert billing(job_tres(cpus=4, mem=16000), weights) == pytest.approx(7.90625)  # no GPUs
