"""getopt_long semantics and the per-command option tables.

The engine is checked three ways: hand-written cases with glibc's exact
messages (the golden files of real sbatch/squeue), the table contents a user
relies on, and -- where the C library is glibc -- a seeded differential run
against the real ``getopt_long`` through ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import random

import pytest

from slurmlite.getopt import (
    IGNORED,
    NO_ARG,
    OPTIONAL,
    REQUIRED,
    SUPPORTED,
    UNSUPPORTED,
    Getopt,
    OptionError,
    OptionSpec,
    OptionTable,
    UnsupportedOption,
    resolve,
)
from slurmlite.options import SACCT, SBATCH, SCANCEL, SCONTROL, SINFO, SQUEUE, TABLES
from tests.golden_path import optional_golden


def golden_stderr(name: str) -> tuple[list[str], int] | None:
    """(stderr lines, exit status) of a golden file, None when not available."""
    path = optional_golden(name)
    if path is None:
        return None
    lines = path.read_text().splitlines()[1:]
    status = int(lines[-1].removeprefix("[exit ").rstrip("]"))
    if "[stderr]" not in lines:
        return [], status
    return lines[lines.index("[stderr]") + 1 : -1], status


def parse(table: OptionTable, *args: str) -> tuple[list[tuple[str, str | None]], list[str]]:
    getopt = Getopt(table, list(args))
    found = [(o.spec.key, o.value) for o in getopt]
    return found, getopt.positionals


def error_lines(table: OptionTable, *args: str) -> list[str]:
    with pytest.raises(OptionError) as info:
        parse(table, *args)
    return info.value.lines


# ----------------------------------------------------------- golden messages


@pytest.mark.parametrize(
    "golden, table, args, expected, status",
    [
        (
            "40_sbatch_bad_option.txt",
            SBATCH,
            ["--bogus-option", "--wrap", "true"],
            ["sbatch: unrecognized option '--bogus-option'"],
            255,
        ),
        (
            "40_sbatch_no_args_wrap_missing.txt",
            SBATCH,
            ["--wrap"],
            ["sbatch: option '--wrap' requires an argument"],
            255,
        ),
        (
            "60_squeue_helpformat.txt",
            SQUEUE,
            ["--helpformat"],
            ["squeue: unrecognized option '--helpformat'"],
            1,
        ),
    ],
)
def test_golden_getopt_errors_byte_for_byte(golden, table, args, expected, status):
    prog = table.prog
    expected = [*expected, f'Try "{prog} --help" for more information']
    with pytest.raises(OptionError) as info:
        parse(table, *args)
    assert info.value.lines == expected
    assert info.value.exit_code == status
    real = golden_stderr(golden)
    if real is not None:  # the embedded text is the real one
        assert real == (expected, status)


@pytest.mark.parametrize(
    "args, message",
    [
        (["-Z"], "sbatch: invalid option -- 'Z'"),
        (["-J"], "sbatch: option requires an argument -- 'J'"),
        (["--parsable=1"], "sbatch: option '--parsable' doesn't allow an argument"),
        # an abbreviation is reported under the option's full name
        (["--pars=yes"], "sbatch: option '--parsable' doesn't allow an argument"),
        (["--wra"], "sbatch: option '--wrap' requires an argument"),
        # unrecognized: the word as typed, value included
        (["--bogus=1"], "sbatch: unrecognized option '--bogus=1'"),
        # ambiguous: the matches in table order
        (["--pa"], "sbatch: option '--pa' is ambiguous; possibilities: '--parsable' '--partition'"),
        (
            ["--clu=x"],
            "sbatch: option '--clu=x' is ambiguous; possibilities: "
            "'--cluster-constraint' '--cluster' '--clusters'",
        ),
    ],
)
def test_error_texts(args, message):
    assert error_lines(SBATCH, *args) == [message, 'Try "sbatch --help" for more information']


def test_sacct_prints_no_help_hint():
    # sacct leaves the explanation to getopt alone: one line, exit 1
    # (clients.md: `sacct -nu root -o Account%256 "|" tail -1`)
    with pytest.raises(OptionError) as info:
        parse(SACCT, "-nu", "root", "-o", "Account%256", "|", "tail", "-1")
    assert info.value.lines == ["sacct: invalid option -- '1'"]
    assert info.value.exit_code == 1


# ------------------------------------------------------------------ parsing


def test_long_forms_prefixes_and_equals():
    assert parse(SBATCH, "--part=debug", "--partition", "long") == (
        [("partition", "debug"), ("partition", "long")],
        [],
    )
    # a value may itself start with a dash
    assert parse(SBATCH, "--job-name", "--weird")[0] == [("job_name", "--weird")]
    # an empty value after '=' is a value
    assert parse(SBATCH, "--comment=")[0] == [("comment", "")]


def test_exact_name_beats_longer_names():
    # "--cluster" is exact although "--clusters" and "--cluster-constraint" exist
    assert parse(SBATCH, "--cluster=a")[0] == [("cluster", "a")]
    assert parse(SBATCH, "--nodes=2")[0] == [("nodes", "2")]  # not --nodelist


def test_aliases_are_not_ambiguous():
    # squeue --node/--nodes/--nodelist are one option; "--nod" matches only those
    assert parse(SQUEUE, "--nod=n1")[0] == [("nodelist", "n1")]
    # sbatch --ntasks-per-node and hidden --tasks-per-node share a destination
    assert parse(SBATCH, "--tasks-per-node=2")[0] == [("ntasks_per_node", "2")]


def test_optional_argument_only_with_equals():
    assert parse(SBATCH, "--nice=5")[0] == [("nice", "5")]
    # "--nice 5": 5 is the script (sbatch stops at the first positional)
    assert parse(SBATCH, "--nice", "5") == ([("nice", None)], ["5"])
    # short optional argument: only attached
    assert parse(SBATCH, "-k", "off") == ([("no_kill", None)], ["off"])
    assert parse(SBATCH, "-koff")[0] == [("no_kill", "off")]


def test_short_bundling_and_attached_values():
    assert parse(SBATCH, "-N2", "-Hv", "-ofmt%j", "-p", "debug")[0] == [
        ("nodes", "2"),
        ("hold", None),
        ("verbose", None),
        ("output", "fmt%j"),
        ("partition", "debug"),
    ]
    # a value-taking letter inside a bundle takes the rest of the word
    assert parse(SBATCH, "-HJname")[0] == [("hold", None), ("job_name", "name")]
    # ... or the next word when it ends the bundle
    assert parse(SBATCH, "-HJ", "name")[0] == [("hold", None), ("job_name", "name")]


def test_sbatch_stops_at_the_script():
    found, rest = parse(SBATCH, "-p", "debug", "job.sh", "-p", "x", "--bogus")
    assert found == [("partition", "debug")]
    assert rest == ["job.sh", "-p", "x", "--bogus"]  # script + its arguments


def test_double_dash_and_lone_dash():
    assert parse(SBATCH, "-H", "--", "-p") == ([("hold", None)], ["-p"])
    assert parse(SQUEUE, "-", "-h") == ([("noheader", None)], ["-"])
    assert parse(SQUEUE, "-h", "--", "-t", "R") == ([("noheader", None)], ["-t", "R"])


def test_permutation_for_queue_commands():
    found, rest = parse(SCANCEL, "12", "--signal", "USR1", "13", "-v")
    assert found == [("signal", "USR1"), ("verbose", None)]
    assert rest == ["12", "13"]
    # scontrol verbs are positional words; options may follow them
    found, rest = parse(SCONTROL, "show", "job", "5", "-o")
    assert (found, rest) == ([("oneliner", None)], ["show", "job", "5"])


def test_command_specific_letters():
    assert parse(SINFO, "-h")[0] == [("noheader", None)]  # sinfo: -h is --noheader
    assert parse(SACCT, "-h")[0] == [("help", None)]  # sacct: -h is --help
    assert error_lines(SCANCEL, "-h")[0] == "scancel: invalid option -- 'h'"
    # squeue -j takes a value only when attached; the job list may follow
    assert parse(SQUEUE, "-j", "5") == ([("jobs", None)], ["5"])
    assert parse(SQUEUE, "-j5")[0] == [("jobs", "5")]


def test_error_stops_at_the_bad_word():
    # options before the error have been seen: sbatch --version --bogus
    # prints the version, as a C getopt loop would
    getopt = iter(Getopt(SBATCH, ["--version", "--bogus"]))
    assert next(getopt).spec.key == "version"
    with pytest.raises(OptionError):
        next(getopt)


# ---------------------------------------------------------------- resolving


def test_resolve_env_then_command_line():
    r = resolve(SQUEUE, ["-t", "R"], {"SQUEUE_STATES": "PD", "SQUEUE_SORT": "-i"})
    assert r.get("states") == "R"  # command line wins
    assert r.get("sort") == "-i"  # variable used when the option is absent
    assert r.sources == {"states": "cli", "sort": "env"}


def test_squeue_format_variables_yield_to_format_options():
    env = {"SQUEUE_FORMAT": "%i", "SQUEUE_FORMAT2": "jobid"}
    assert resolve(SQUEUE, [], env).values == {"format": "%i"}  # FORMAT beats FORMAT2
    assert resolve(SQUEUE, ["-l"], env).values == {"long": True}  # -l beats both
    assert resolve(SQUEUE, ["-O", "name"], env).values == {"Format": "name"}


def test_repeat_rules():
    r = resolve(SACCT, ["-j", "1", "--jobs=2,3", "-o", "JobID", "-vvv"], {})
    assert r.list("jobs") == ["1", "2,3"]  # every -j kept (submitit repeats -j)
    assert r.list("format") == ["JobID"]
    assert r.count("verbose") == 3
    r = resolve(SQUEUE, ["-p", "a", "-p", "b"], {})
    assert r.get("partition") == "b"  # last wins


def test_env_flags():
    assert resolve(SQUEUE, [], {"SQUEUE_ALL": "0"}).flag("all")  # presence is enough
    r = resolve(SCANCEL, [], {"SCANCEL_BATCH": "T", "SCANCEL_FULL": "false"})
    assert r.flag("batch") and not r.flag("full")
    r = resolve(SCANCEL, [], {"SCANCEL_INTERACTIVE": "maybe"})
    assert r.warnings == ["scancel: error: Unrecognized SCANCEL_INTERACTIVE value: maybe"]
    assert not r.flag("interactive")


def test_unsupported_is_refused_never_dropped():
    with pytest.raises(UnsupportedOption) as info:
        resolve(SQUEUE, ["-h", "--yaml"], {})
    assert info.value.lines == ["squeue: error: --yaml is not supported yet"]
    assert info.value.exit_code == 1
    with pytest.raises(UnsupportedOption) as info:
        resolve(SQUEUE, [], {"SQUEUE_PRIORITY": "1"})
    assert info.value.lines == [
        "squeue: error: --priority (from SQUEUE_PRIORITY) is not supported yet"
    ]


def test_ignored_options_are_reported_and_keep_their_value():
    r = resolve(SCANCEL, ["-M", "anchor", "--ctld", "5"], {})
    assert r.ignored == ["--clusters", "--ctld"]
    assert r.get("clusters") == "anchor"
    assert r.positionals == ["5"]


# ------------------------------------------------------------------- tables

# Every option of real sbatch 22.05 (its man page / option list).
SBATCH_22_05 = """account acctg-freq array batch begin bb bbf cluster-constraint chdir cluster
clusters comment container context contiguous constraint core-spec cores-per-socket
cpu-freq cpus-per-gpu cpus-per-task deadline delay-boot dependency distribution error
exclude exclusive export export-file extra-node-info get-user-env gid gpu-bind gpu-freq
gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags help hint hold
ignore-pbs input job-name kill-on-invalid-dep licenses mail-type mail-user mcs-label mem
mem-bind mem-per-cpu mem-per-gpu mincpus network nice no-kill no-requeue nodefile
nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node ntasks-per-socket
ntasks-per-tres open-mode output overcommit oversubscribe parsable partition power
prefer priority profile propagate qos quiet reboot requeue reservation signal
sockets-per-node spread-job switches tasks-per-node test-only thread-spec
threads-per-core time time-min tmp uid use-min-nodes verbose version usage wait
wait-all-nodes wckey wrap""".split()

BRIEF_SUPPORTED = """nodes ntasks ntasks-per-node cpus-per-task mem mem-per-cpu mem-per-gpu gres
gpus gpus-per-node time partition job-name output error input chdir export parsable hold
test-only open-mode comment exclude nodelist exclusive account qos wrap nice requeue
no-requeue constraint version help usage quiet verbose signal""".split()


def status_of(table: OptionTable, name: str) -> str:
    return next(s.status for s in table.specs if name in s.long)


def test_sbatch_table_covers_every_real_option():
    names = {n for s in SBATCH.specs for n in s.long}
    assert names == set(SBATCH_22_05)
    for name in BRIEF_SUPPORTED:
        assert status_of(SBATCH, name) == SUPPORTED, name
    for name in "wckey clusters profile propagate".split():
        assert status_of(SBATCH, name) == IGNORED, name
    for name in "dependency begin kill-on-invalid-dep array mail-type mail-user wait".split():
        assert status_of(SBATCH, name) == SUPPORTED, name
    for name in "gpus-per-task reservation".split():
        assert status_of(SBATCH, name) == UNSUPPORTED, name
    # short letters of real sbatch
    assert "".join(sorted(SBATCH.shorts)) == "ABCDFGHJLMNOQSVWabcdehikmnopqstvwx"


@pytest.mark.parametrize(
    "word, message",
    [
        ("--cpu-bind=none", "sbatch: unrecognized option '--cpu-bind=none'"),
        ("--pty", "sbatch: unrecognized option '--pty'"),
        ("-l", "sbatch: invalid option -- 'l'"),
    ],
)
def test_srun_only_options_are_unrecognized_by_sbatch(word, message):
    assert error_lines(SBATCH, word)[0] == message


@pytest.mark.parametrize(
    "table, supported",
    [
        (SQUEUE, "o O h j u me t n p l S start a r w A q i v V version help usage"),
        (SCANCEL, "u n t p s b f v i me A q w V version help"),
        (SINFO, "N l o O h p t n s R a e r d noconvert S i V version help"),
        (SACCT, "j o P p n X u S E name s b l a D delimiter e V help"),
        (SCONTROL, "o d a Q v V version help"),
    ],
)
def test_brief_options_are_supported(table, supported):
    for name in supported.split():
        spec = (
            table.shorts[name] if len(name) == 1 else next(s for s in table.specs if name in s.long)
        )
        assert spec.status == SUPPORTED, (table.prog, name)
    assert table.shorts["M"].status == IGNORED  # cluster selection: accepted, ignored


def test_tables_are_registered_and_sbatch_exits_255():
    assert set(TABLES) == {"sbatch", "squeue", "scancel", "sinfo", "sacct", "scontrol"}
    assert SBATCH.error_exit == 255 and not SBATCH.permute
    assert all(t.error_exit == 1 and t.permute for t in TABLES.values() if t is not SBATCH)


def test_table_rejects_duplicate_letters():
    with pytest.raises(ValueError):
        OptionTable("x", (OptionSpec("a", short="a"), OptionSpec("b", short="a")))


# ------------------------------------------------ differential test vs glibc


def _glibc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it)
        return libc
    except (OSError, AttributeError, TypeError):
        return None


class _COption(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("has_arg", ctypes.c_int),
        ("flag", ctypes.c_void_p),
        ("val", ctypes.c_int),
    ]


def _glibc_getopt(libc, table: OptionTable, args: list[str]):
    """Run glibc getopt_long with ``table``: (options, positionals, error?)."""
    kinds = {NO_ARG: 0, REQUIRED: 1, OPTIONAL: 2}
    idents = {}
    for spec in table.specs:
        idents.setdefault((spec.key, spec.arg), 1000 + len(idents))
    longs = [(n, s) for s in table.specs for n in s.long]
    array = (_COption * (len(longs) + 1))()
    for i, (n, s) in enumerate(longs):
        array[i] = _COption(n.encode(), kinds[s.arg], None, idents[(s.key, s.arg)])
    optstring = "" if table.permute else "+"
    for s in table.specs:
        if s.short:
            optstring += s.short + {NO_ARG: "", REQUIRED: ":", OPTIONAL: "::"}[s.arg]
    argv = [table.prog, *args]
    c_argv = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    ctypes.c_int.in_dll(libc, "optind").value = 0  # full re-initialisation
    optarg = ctypes.c_char_p.in_dll(libc, "optarg")
    by_val = {v: k for k, v in idents.items()}
    by_short = {ord(s.short): (s.key, s.arg) for s in table.specs if s.short}
    found, index = [], ctypes.c_int(0)
    while True:
        c = libc.getopt_long(len(argv), c_argv, optstring.encode(), array, ctypes.byref(index))
        if c == -1:
            break
        if c == ord("?"):
            return found, None, True
        key = by_val.get(c) or by_short[c]
        found.append((key[0], optarg.value.decode() if optarg.value is not None else None))
    optind = ctypes.c_int.in_dll(libc, "optind").value
    return found, [c_argv[i].decode() for i in range(optind, len(argv))], False


WORDS = [
    "-", "--", "x", "y.sh", "-p", "-pdebug", "-Hv", "-J", "-Jname", "-k", "-koff", "-Z",
    "--pa", "--part", "--part=a", "--parsable", "--parsable=1", "--nice", "--nice=3",
    "--wrap", "--wrap=cmd", "--clu", "--cluster", "--clusters=a", "--bogus", "--t",
    "--time=5", "--mem", "-N2", "-n", "--exclusive", "--exclusive=user", "--=x",
    "-h", "-j", "-j5", "--jobs", "--states", "-t", "--nod=n1", "--sort=i", "-vvV",
    "--no", "--us", "--u=1", "--he", "--s", "--cl", "--json", "-o", "--f=x", "-1",
]  # fmt: skip


@pytest.mark.skipif(_glibc() is None, reason="needs glibc's getopt_long")
@pytest.mark.parametrize("table", list(TABLES.values()), ids=lambda t: t.prog)
def test_matches_glibc_getopt_long(table, capfd, monkeypatch):
    monkeypatch.delenv("POSIXLY_CORRECT", raising=False)
    libc = _glibc()
    rng = random.Random(f"getopt-{table.prog}")  # fixed seed: same cases every run
    for _ in range(400):
        args = [rng.choice(WORDS) for _ in range(rng.randint(0, 6))]
        want_found, want_rest, want_error = _glibc_getopt(libc, table, args)
        libc.fflush(None)
        want_stderr = capfd.readouterr().err
        getopt = Getopt(table, args)
        found: list[tuple[str, str | None]] = []
        try:
            for occ in getopt:
                found.append((occ.spec.key, occ.value))
        except OptionError as exc:
            assert want_error, args
            # glibc prints its line; the command adds the Try line
            assert want_stderr == exc.lines[0] + "\n", args
        else:
            assert not want_error, (args, want_stderr)
            assert getopt.positionals == want_rest, args
        assert found == want_found, args
