"""#SBATCH scanning and tokenising (spec §6.2)."""

from __future__ import annotations

import pytest

from slurmlite.directives import DirectiveError, invalid_directive, scan, split_directive


def tokens(script: str) -> list[str]:
    return scan(script, "job.sh").tokens


def test_directives_until_the_first_command():
    script = (
        "#!/bin/bash\n"
        "#SBATCH -N 2\n"
        "\n"  # blank: keep going
        "# a comment\n"  # comment: keep going
        "  # indented comment\n"
        "#SBATCH --time=5\n"
        "echo hi\n"  # first command: stop
        "#SBATCH -p late\n"
    )
    assert tokens(script) == ["-N", "2", "--time=5"]


def test_only_column_zero_exact_magic_counts():
    script = "#!/bin/sh\n  #SBATCH -p a\n# SBATCH -p b\n#sbatch -p c\n#SBATCH -p d\n"
    assert tokens(script) == ["-p", "d"]


def test_magic_word_glued_to_an_option():
    # the first 7 characters decide; the rest is split as usual
    assert tokens("#!/bin/sh\n#SBATCH--time=5\n") == ["--time=5"]


def test_quotes_and_escapes():
    script = (
        "#!/bin/sh\n"
        "#SBATCH --comment=\"a b\" -J 'it''s'\n"  # adjacent quoted parts join
        '#SBATCH --comment "say \\"hi\\"" --x=\'"\'\n'
        "#SBATCH -J a\\ b\n"
    )
    assert tokens(script) == [
        "--comment=a b",
        "-J",
        "its",
        "--comment",
        'say "hi"',
        '--x="',
        "-J",
        "a b",
    ]


def test_unquoted_hash_ends_the_directive():
    script = '#!/bin/sh\n#SBATCH -N 2 # two nodes -p x\n#SBATCH -J "a#b"#c\n#SBATCH -n 1#x y\n'
    assert tokens(script) == ["-N", "2", "-J", "a#b", "-n", "1"]


def test_no_shell_expansion():
    assert tokens("#!/bin/sh\n#SBATCH -o $HOME/out\n") == ["-o", "$HOME/out"]


def test_several_lines_form_one_argument_list():
    # an option's value may sit on the next directive line
    assert tokens("#!/bin/sh\n#SBATCH --job-name\n#SBATCH demo\n") == ["--job-name", "demo"]


def test_empty_quotes_give_an_empty_word():
    assert tokens('#!/bin/sh\n#SBATCH --comment "" -J x\n') == ["--comment", "", "-J", "x"]


def test_unmatched_quote_is_fatal():
    with pytest.raises(DirectiveError) as info:
        scan('#!/bin/sh\n#SBATCH -J "oops\n', "job.sh")
    assert info.value.lines == [
        'sbatch: fatal: job.sh: line 2: Unmatched `"` in [#SBATCH -J "oops]'
    ]
    assert info.value.exit_code == 1


def test_leading_colon_is_fatal():
    with pytest.raises(DirectiveError) as info:
        scan("#!/bin/sh\n\n#SBATCH :x\n", "stdin")
    assert info.value.lines == ["sbatch: fatal: stdin: line 3: Unexpected `:` in [#SBATCH :x]"]


def test_hetjob_is_refused():
    with pytest.raises(DirectiveError) as info:
        scan("#!/bin/sh\n#SBATCH -N1\n#SBATCH hetjob\n#SBATCH -N2\n")
    assert info.value.lines == ["sbatch: error: heterogeneous jobs (hetjob) are not supported yet"]
    # a word that merely starts with "hetjob" is not a separator
    assert tokens("#!/bin/sh\n#SBATCH hetjobs\n") == ["hetjobs"]


def test_slurm_magic_accepted_with_one_warning():
    found = scan("#!/bin/sh\n#SLURM -N 1\n#SLURM -n 2\n")
    assert found.tokens == ["-N", "1", "-n", "2"]
    assert len(found.warnings) == 1 and found.warnings[0].startswith("sbatch: error: #SLURM")


def test_invalid_directive_text():
    err = invalid_directive("foo")
    assert err.lines == ["sbatch: error: Invalid directive found in batch script: foo"]
    assert err.exit_code == 255


def test_split_directive_blanks_only():
    assert split_directive(" \t ", "f: line 1", "#SBATCH") == []
