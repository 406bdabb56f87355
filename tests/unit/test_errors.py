"""The shared error table: Slurm's numbers, Slurm's texts, one exception class."""

from __future__ import annotations

import pytest

from slurmlite import errors
from slurmlite.errors import (
    ESLURM_ACCESS_DENIED,
    ESLURM_ALREADY_DONE,
    ESLURM_INVALID_JOB_ID,
    ESLURM_INVALID_PARTITION_NAME,
    ESLURM_NOT_SUPPORTED,
    MESSAGES,
    SlurmError,
    error_name,
    exit_status,
    http_status,
    message,
    not_supported,
)

# spec §8.6 (every row) and texts the golden files print
REQUIRED_TEXTS = {
    "ESLURM_INVALID_PARTITION_NAME": "Invalid partition name specified",
    "ESLURM_DEFAULT_PARTITION_NOT_SET": "No partition specified or system default partition",
    "ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE": "Requested node configuration is not available",
    "ESLURM_INVALID_TIME_LIMIT": (
        "Requested time limit is invalid (missing or exceeds some limit)"
    ),
    "ESLURM_INVALID_GRES": "Invalid generic resource (gres) specification",
    "ESLURM_INVALID_JOB_ID": "Invalid job id specified",
    "ESLURM_ALREADY_DONE": "Job/step already completing or completed",
    "ESLURM_PARTITION_NOT_AVAIL": "Required partition not available (inactive or drain)",
    "ESLURM_DEPENDENCY": "Job dependency problem",
    "ESLURM_ACCOUNTING_POLICY": (
        "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    ),
    "ESLURM_INVALID_ARRAY": "Invalid job array specification",
    "ESLURM_ACCESS_DENIED": "Access/permission denied",
    "ESLURM_NODES_BUSY": "Requested nodes are busy",
    "ESLURM_INVALID_TASK_MEMORY": "Memory required by task is not available",
    "ESLURM_INVALID_ACCOUNT": "Invalid account or account/partition combination specified",
    "ESLURM_INVALID_QOS": "Invalid qos specification",
    "ESLURM_USER_ID_MISSING": "Invalid user id",  # "Invalid user id for job 60"
    "SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR": (
        "Unable to contact slurm controller (connect failure)"
    ),
    "SLURM_PROTOCOL_AUTHENTICATION_ERROR": "Protocol authentication error",
    "ESLURM_AUTH_CRED_INVALID": "Invalid authentication credential",
    "ESLURM_INVALID_NODE_NAME": "Invalid node name specified",
    "ESLURM_NOT_SUPPORTED": "Requested operation not supported on this system",
}

# numbers from slurm/slurm_errno.h
REQUIRED_NUMBERS = {
    "ESLURM_INVALID_PARTITION_NAME": 2000,
    "ESLURM_DEFAULT_PARTITION_NOT_SET": 2001,
    "ESLURM_ACCESS_DENIED": 2002,
    "ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE": 2014,
    "ESLURM_NODES_BUSY": 2016,
    "ESLURM_INVALID_JOB_ID": 2017,
    "ESLURM_INVALID_NODE_NAME": 2018,
    "ESLURM_ALREADY_DONE": 2021,
    "ESLURM_NOT_SUPPORTED": 2036,
    "ESLURM_DEPENDENCY": 2038,
    "ESLURM_INVALID_ACCOUNT": 2045,
    "ESLURM_INVALID_TIME_LIMIT": 2051,
    "ESLURM_INVALID_QOS": 2066,
    "ESLURM_PARTITION_NOT_AVAIL": 2070,
    "ESLURM_INVALID_GRES": 2072,
    "ESLURM_INVALID_ARRAY": 2081,
    "SLURM_COMMUNICATIONS_CONNECTION_ERROR": 1001,
    "SLURM_PROTOCOL_AUTHENTICATION_ERROR": 1007,
    "SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR": 1800,
    "ESLURM_AUTH_CRED_INVALID": 6000,
}


@pytest.mark.parametrize(("name", "text"), sorted(REQUIRED_TEXTS.items()))
def test_required_texts(name: str, text: str) -> None:
    code = getattr(errors, name)
    assert message(code) == text
    assert str(SlurmError(code)) == text


@pytest.mark.parametrize(("name", "number"), sorted(REQUIRED_NUMBERS.items()))
def test_real_slurm_numbers(name: str, number: int) -> None:
    assert getattr(errors, name) == number
    assert error_name(number) == name


def test_every_constant_has_a_message_and_codes_are_unique() -> None:
    constants = {
        k: v
        for k, v in vars(errors).items()
        if k.startswith(("SLURM", "ESLURM")) and isinstance(v, int)
    }
    assert len(set(constants.values())) == len(constants)  # no two names share a number
    assert set(constants.values()) == set(MESSAGES)  # table and constants agree


def test_access_denied_exit_status_is_210() -> None:
    # golden 51_scancel_other_users_job.txt: exit 210 == 2002 & 0xff
    assert exit_status(ESLURM_ACCESS_DENIED) == 210


def test_http_status_mapping() -> None:
    assert http_status(ESLURM_INVALID_PARTITION_NAME) == 400
    assert http_status(errors.ESLURM_INVALID_TIME_LIMIT) == 400
    assert http_status(errors.ESLURM_AUTH_CRED_INVALID) == 401
    assert http_status(errors.SLURM_PROTOCOL_AUTHENTICATION_ERROR) == 401
    assert http_status(ESLURM_ACCESS_DENIED) == 403
    assert http_status(ESLURM_INVALID_JOB_ID) == 404
    assert http_status(ESLURM_ALREADY_DONE) == 409
    assert http_status(errors.ESLURM_INTERNAL) == 500
    assert http_status(ESLURM_NOT_SUPPORTED) == 400  # the client asked for too much: 4xx
    assert http_status(123456) == 400  # unknown codes are the client's problem


def test_slurm_error_fields_and_str() -> None:
    err = SlurmError(ESLURM_INVALID_PARTITION_NAME, detail="nosuch")
    assert err.code == 2000
    assert err.message == "Invalid partition name specified"
    assert err.detail == "nosuch"
    assert str(err) == "Invalid partition name specified"  # detail never leaks into str
    assert err.full == "Invalid partition name specified: nosuch"
    assert err.http_status == 400
    assert "ESLURM_INVALID_PARTITION_NAME" in repr(err)
    # what sbatch prints (golden 40_sbatch_bad_partition.txt)
    assert f"Batch job submission failed: {err}" == (
        "Batch job submission failed: Invalid partition name specified"
    )


def test_slurm_error_round_trips_through_json_dict() -> None:
    err = SlurmError(ESLURM_ALREADY_DONE, detail="job 7")
    body = err.to_dict()
    assert body == {
        "code": 2021,
        "name": "ESLURM_ALREADY_DONE",
        "message": "Job/step already completing or completed",
        "detail": "job 7",
    }
    back = SlurmError.from_dict(body)
    assert (back.code, back.message, back.detail) == (err.code, err.message, err.detail)


def test_slurm_error_is_raisable_and_catchable() -> None:
    with pytest.raises(SlurmError) as caught:
        raise SlurmError(ESLURM_INVALID_JOB_ID)
    assert caught.value.code == ESLURM_INVALID_JOB_ID


def test_unknown_and_system_codes() -> None:
    assert message(99999) == "Unknown error 99999"
    assert message(2) == "No such file or directory"  # system errno, as slurm_strerror
    assert error_name(99999) == "UNKNOWN_99999"
    assert SlurmError(99999).message == "Unknown error 99999"


def test_not_supported_yet() -> None:
    err = not_supported("--switches")
    assert isinstance(err, SlurmError)
    assert err.code == ESLURM_NOT_SUPPORTED == errors.NOT_SUPPORTED_YET
    assert str(err) == "Requested operation not supported on this system"
    assert err.detail == "--switches is not supported by slurmlite yet"
