"""The workload file: every problem named by its line and key, overrides typed by the schema."""

from __future__ import annotations

import pytest

from slurmlite.workload.spec import WorkloadError, load

GOOD = """\
experiment_name: llama-ft
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 16
code_source:
  type: snapshot
  snapshot:
    root_path: ./src
command: |
  torchrun --nproc_per_node=8 $CODE_SOURCE_PATH/train.py
env_variables:
  LR: 3e-4
timeout_minutes: 90
"""


def problems(text: str, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(WorkloadError) as e:
        load(text, "train.yaml", overrides)
    return e.value.problems


def test_a_good_file_gives_nodes_gpus_and_defaults():
    w = load(GOOD, "train.yaml")
    assert (w.nodes, w.gpus_per_node, w.gpu_type) == (2, 8, "H100")
    assert w.timeout_minutes == 90 and w.max_retries == 3  # the runtimes' default
    assert w.env_variables == {"LR": "3e-4"} and w.root_path == "./src"


def test_an_unknown_key_names_its_line_and_the_closest_key():
    text = GOOD.replace("num_accelerators", "num_acelerators")
    assert problems(text) == [
        "train.yaml:4: compute.num_acelerators: unknown key (did you mean num_accelerators?)",
        "train.yaml:2: compute.num_accelerators: required key missing",
    ]
    assert problems(GOOD + "retries: 2\n") == [
        "train.yaml:14: retries: unknown key (did you mean max_retries?)"
    ]


def test_wrong_kinds_and_ranges_are_named():
    text = GOOD.replace("num_accelerators: 16", "num_accelerators: two")
    text = text.replace("timeout_minutes: 90", "timeout_minutes: 0")
    text = text.replace("  LR: 3e-4", "  LR: [1, 2]")
    assert problems(text) == [
        "train.yaml:4: compute.num_accelerators: must be a whole number, not 'two'",
        "train.yaml:12: env_variables.LR: must be a text, not a list",
        "train.yaml:13: timeout_minutes: must be at least 1, not 0",
    ]


def test_a_total_not_a_multiple_of_the_gpus_per_node():
    text = GOOD.replace("num_accelerators: 16", "num_accelerators: 12")
    assert problems(text) == [
        "train.yaml:4: compute.num_accelerators: 12 is not a multiple of the 8 GPUs per node "
        "of GPU_8xH100"
    ]


def test_a_malformed_accelerator_type():
    text = GOOD.replace("GPU_8xH100", "8xH100")
    [line] = problems(text)
    assert line.startswith("train.yaml:3: compute.accelerator_type: must be GPU_<GPUs per node>x")


def test_containers_are_refused_not_dropped():
    text = GOOD + "environment:\n  docker_image:\n    url: nvcr.io/pytorch\n"
    [line] = problems(text)
    assert line.startswith("train.yaml:15: environment.docker_image: containers are not supported")


def test_variables_that_slurmlite_sets_cannot_be_overridden_by_the_file():
    text = GOOD.replace("  LR: 3e-4", "  RUN_ID: x\n  SLURM_JOB_ID: y\n  2BAD: z")
    assert problems(text) == [
        "train.yaml:12: env_variables.RUN_ID: set by slurmlite for every run; choose another name",
        "train.yaml:13: env_variables.SLURM_JOB_ID: set by slurmlite for every run; choose another name",
        "train.yaml:14: env_variables.2BAD: not a variable name (letters, digits, _)",
    ]


def test_a_name_is_a_secret_or_a_variable_not_both():
    text = GOOD + "secrets:\n  LR: team/lr\n  TOKEN: 'bad name!'\n"
    assert problems(text) == [
        "train.yaml:15: secrets.LR: also set in env_variables; a name is one or the other",
        "train.yaml:16: secrets.TOKEN: not a secret name: 'bad name!'",
    ]


def test_yaml_syntax_errors_give_yaml_s_line_and_never_a_traceback():
    [line] = problems("experiment_name: x\ncompute: [\n")
    assert line.startswith("train.yaml:3: not valid YAML")
    assert problems("") == ["train.yaml: the file is empty"]
    assert problems("- a\n- b\n") == [
        "train.yaml: must be a mapping of keys (experiment_name: ...)"
    ]
    assert problems(GOOD + "timeout_minutes: 5\n") == [
        "train.yaml:14: timeout_minutes: given twice"
    ]


def test_experiment_name_and_command_rules():
    text = GOOD.replace("llama-ft", "llama ft!").replace(
        "  torchrun --nproc_per_node=8 $CODE_SOURCE_PATH/train.py\n", "  \n"
    )
    text = text.replace("command: |", "command: ' '")
    assert problems(text) == [
        "train.yaml:1: experiment_name: only letters, digits, _ and - (at most 100)",
        "train.yaml:9: command: must not be empty",
    ]


def test_overrides_are_typed_by_the_schema_and_applied_before_validation():
    w = load(
        GOOD, "t.yaml", ["compute.num_accelerators=8", "env_variables.LR=1e-3", "max_retries=0"]
    )
    assert (w.nodes, w.env_variables["LR"], w.max_retries) == (1, "1e-3", 0)
    w = load(GOOD, "t.yaml", ["env_variables.NEW=7", "code_source.snapshot.include_paths=[a, b]"])
    assert w.env_variables["NEW"] == "7" and w.include_paths == ["a", "b"]
    assert problems(GOOD, ["compute.num_accelerators=x", "compute.gpus=2", "oops"]) == [
        "--override compute.num_accelerators=x: not a whole number",
        "--override compute.gpus=2: unknown key compute.gpus",
        "--override oops: expected KEY=VALUE",
    ]
    # an override that breaks a rule is named as the override
    assert problems(GOOD, ["compute.num_accelerators=12"]) == [
        "--override: compute.num_accelerators: 12 is not a multiple of the 8 GPUs per node of "
        "GPU_8xH100"
    ]
