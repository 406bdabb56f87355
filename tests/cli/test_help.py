"""Every command's ``--help`` and ``--usage`` come from its option table (issue 20).

What a user would notice: the help lists every option the command takes (each
long name and short flag), nothing it does not take, marks what slurmlite
accepts without effect and what it adds, names the Slurm options it refuses,
and shows no module path or docstring.  The pages are rendered strictly here,
so a table row added without help words fails the suite.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli import help as helppages
from slurmlite.getopt import NO_ARG, SUPPORTED, UNSUPPORTED, Getopt, OptionTable
from slurmlite.option_rows import row

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COMMANDS = helppages.COMMANDS
# scontrol, sacctmgr and sreport answer --usage with their help, as Slurm's do
USAGE_IS_HELP = {"scontrol", "sacctmgr", "sreport"}
INTERNAL = re.compile(r"\b(cli|slurmlite|controller|agent)\.[a-z_]+|``|::\s*$|\.py\b", re.M)
TOKEN = re.compile(r"(?<![\w\-/$])(--[A-Za-z][\w-]*|-[A-Za-z](?![\w-]))")
BUNDLE = re.compile(r"\[-([A-Za-z]{2,})\]")


def strict(prog: str, kind: str = "help") -> str:
    return helppages.text(prog, kind, strict=True)


def table_of(prog: str) -> OptionTable:
    return helppages.load(prog).table


def shown_rows(table: OptionTable):  # type: ignore[no-untyped-def]
    return [s for s in table.specs if s.status != UNSUPPORTED]


def entries(text: str) -> dict[str, str]:
    """Each option line of a help page with its continuation lines, whitespace folded,
    by the option's first spelling (``-A, --account=name ...`` -> ``-A``)."""
    found: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        if re.match(r"  {1,5}-", line):
            current = line.split()[0].rstrip(",")
            found[current] = line.strip()
        elif current and line.startswith(" " * 20) and line.strip():
            found[current] += " " + line.strip()
        else:
            current = ""
    return {k: " ".join(v.split()) for k, v in found.items()}


def run_command(prog: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))}
    env["SLURM_CONF"] = "/nonexistent/slurm.conf"  # help must not need a cluster
    return subprocess.run(
        [str(BIN / prog), *args], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT
    )


# ------------------------------------------------------------------ the real commands


@pytest.mark.parametrize("prog", COMMANDS)
@pytest.mark.parametrize("flag", ["--help", "--usage"])
def test_the_installed_command_prints_its_page_and_exits_0(prog, flag):
    done = run_command(prog, flag)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    kind = "help" if flag == "--help" or prog in USAGE_IS_HELP else "usage"
    assert done.stdout == strict(prog, kind)
    assert not INTERNAL.search(done.stdout), INTERNAL.search(done.stdout)


@pytest.mark.parametrize("prog", COMMANDS)
@pytest.mark.parametrize("flag", ["--help", "--usage"])
def test_main_prints_the_page_without_a_controller(prog, flag, capsys, monkeypatch):
    from cli import client

    def no_controller(*_args: object, **_kw: object) -> object:
        raise AssertionError("help asked the controller")

    monkeypatch.setattr(client.ControllerClient, "from_env", no_controller)
    main = importlib.import_module(f"cli.{prog}").main
    try:
        code = main([flag])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    kind = "help" if flag == "--help" or prog in USAGE_IS_HELP else "usage"
    assert (code or 0, out, err) == (0, strict(prog, kind), "")


@pytest.mark.parametrize("prog", COMMANDS)
def test_every_accepted_option_is_in_the_help(prog):
    text = strict(prog)
    tokens = set(TOKEN.findall(text))
    for spec in shown_rows(table_of(prog)):
        spellings = [f"--{n}" for n in spec.long] + ([f"-{spec.short}"] if spec.short else [])
        missing = [s for s in spellings if s not in tokens]
        assert not missing, f"{prog}: {missing} not in --help"


@pytest.mark.parametrize("prog", COMMANDS)
def test_every_option_the_help_names_is_accepted(prog):
    table = table_of(prog)
    text = strict(prog) + strict(prog, "usage")
    names = set(TOKEN.findall(text))
    names |= {f"-{c}" for bundle in BUNDLE.findall(text) for c in bundle}
    for name in names:
        matches = [s for n, s in table.long_names if f"--{n}" == name]
        spec = matches[0] if matches else table.shorts.get(name[1:]) if len(name) == 2 else None
        assert spec is not None, f"{prog} --help names {name}, which {prog} does not take"
        word = name if spec.arg == NO_ARG else f"{name}=x" if name.startswith("--") else f"{name}x"
        assert [o.spec for o in Getopt(table, [word])] == [spec]


@pytest.mark.parametrize("prog", COMMANDS)
def test_usage_lists_every_accepted_option_in_brackets(prog):
    text = strict(prog, "usage")
    assert text.startswith(f"Usage: {prog} ") and all(len(x) <= 79 for x in text.splitlines())
    letters = "".join(BUNDLE.findall(text))
    layout = helppages._Layout(helppages.load(prog), strict=True)
    for _, rows in layout.sections:
        for spec in rows:
            if spec.arg == NO_ARG and spec.short:
                assert spec.short in letters, (prog, spec.name)
            else:
                shown = f"[-{spec.short}" if spec.short else f"[{spec.name}"
                assert shown in text, (prog, spec.name)


@pytest.mark.parametrize("prog", COMMANDS)
def test_marks_say_what_has_no_effect_and_what_is_refused(prog):
    table = table_of(prog)
    text = strict(prog)
    listed, _, refused = text.partition(helppages.REFUSED_TITLE)
    lines = entries(listed)
    refused_names = set(TOKEN.findall(refused))
    for spec in table.specs:
        first = f"-{spec.short}" if spec.short else spec.name
        shown = any(k == first or k.startswith((f"{first}=", f"{first}[")) for k in lines)
        if spec.status == UNSUPPORTED:
            assert spec.name in refused_names and not shown, (prog, spec.name)
            continue
        if first not in lines:  # an alias shown as "(also ...)" on another row
            continue
        assert (helppages.IGNORED_MARK in lines[first]) == (spec.status != SUPPORTED), lines[first]


def test_sbatch_reads_like_slurms():
    text = strict("sbatch")
    assert text.splitlines()[0] == (
        "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]"
    )
    titles = [x for x in text.splitlines() if x and not x.startswith(" ")][1:]
    assert titles == [
        "Parallel run options:",
        "Constraint options:",
        "Consumable resources related options:",
        "Affinity/Multi-core options:",
        "GPU scheduling options:",
        "Help options:",
        "Other options:",
        helppages.REFUSED_TITLE,
    ]
    lines = entries(text)
    assert lines["-A"].startswith("-A, --account=name ")
    assert lines["--nice[=value]"].startswith("--nice[=value] ")
    assert lines["--wckey=wckey"].endswith("(accepted, no effect)")
    assert "(also --tasks-per-node)" in lines["--ntasks-per-node=n"]
    # descriptions start in one column
    assert text.index("charge the job") - text.rfind("\n", 0, text.index("charge the job")) == 31


def test_another_name_of_an_option_is_shown_on_its_row():
    assert entries(strict("scancel"))["-n"].endswith("(also --name)")
    assert "--name=" not in strict("scancel")
    assert entries(strict("sacct"))["-u"].endswith("(also --user)")


def test_seff_marks_its_long_options_as_slurmlites():
    lines = entries(strict("seff"))
    assert lines["--help"].endswith("[slurmlite]") and not lines["-h"].endswith("[slurmlite]")


# ------------------------------------------------------------------ consistency guard


def test_a_row_added_without_help_words_fails_loudly():
    page = helppages.load("sinfo")
    grown = OptionTable("sinfo", (*page.table.specs, row("brand-new", "", "required")))
    bad = helppages.HelpPage(grown, page.synopsis, page.sections, page.words)
    with pytest.raises(helppages.HelpMismatch, match="--brand-new"):
        helppages.render_help(bad, strict=True)
    # a user's --help still works: the row is listed, last
    assert "--brand-new=value" in helppages.render_help(bad).split("Other options:")[1]


def test_help_words_for_an_option_the_table_lacks_fail_loudly():
    page = helppages.load("sprio")
    words = {**page.own_words, "no-such-option": ("", "nothing")}
    bad = helppages.HelpPage(page.table, page.synopsis, page.sections, words)
    with pytest.raises(helppages.HelpMismatch, match="no-such-option"):
        helppages.render_usage(bad, strict=True)


def test_a_value_name_on_a_flag_fails_loudly():
    page = helppages.load("sshare")
    words = {**page.own_words, "long": ("what", "a flag takes no value")}
    bad = helppages.HelpPage(page.table, page.synopsis, page.sections, words)
    with pytest.raises(helppages.HelpMismatch, match="--long"):
        helppages.render_help(bad, strict=True)


def test_an_alias_the_help_cannot_show_fails_loudly():
    page = helppages.load("sbatch")
    assert "(also --cluster)" in entries(strict("sbatch"))["-M"]
    bad = helppages.HelpPage(
        page.table, page.synopsis, page.sections, page.own_words, shared=page.words,
        also={"cluster": "no-such-row"},
    )  # fmt: skip
    with pytest.raises(helppages.HelpMismatch, match="cluster"):
        helppages.render_help(bad, strict=True)


# ------------------------------------------------------------------ paths into the pages


@pytest.mark.parametrize("prog", COMMANDS)
def test_a_commands_start_up_does_not_load_the_help_pages(prog):
    probe = (
        f"import sys, cli.{prog}; print(sorted(m for m in sys.modules if m.startswith('cli.help')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_stray_word_prints_the_generated_usage():
    done = run_command("squeue", "bogus")
    assert done.returncode == 1
    assert done.stderr == f"squeue: error: Unrecognized option: bogus\n{strict('squeue', 'usage')}"


def test_interactive_help_of_scontrol_and_sacctmgr_is_the_page(capsys):
    from cli import sacctmgr, scontrol

    assert scontrol.main(["help"]) == 0
    assert capsys.readouterr().out == strict("scontrol")
    assert sacctmgr.main(["help"]) == 0
    assert capsys.readouterr().out == strict("sacctmgr")


def test_seff_keeps_perls_short_letters():
    done = run_command("seff", "-x")
    assert done.returncode == 1 and done.stderr == "Unknown option: x\n"
    assert done.stdout.startswith("Usage: seff [Options] <Jobid>")


def test_slurmlite_lists_each_subcommand_on_one_line():
    for group in ([], ["cluster"], ["keys"], ["secret"], ["list"], ["get"]):
        done = run_command("slurmlite", *group, "--help")
        assert done.returncode == 0, done.stderr
        commands = done.stdout.partition("Commands:\n")[2].splitlines()
        assert commands, group
        for line in commands:
            assert len(line.split(None, 1)) == 2 and not line.endswith("..."), line
