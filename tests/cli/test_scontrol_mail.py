"""``scontrol show job``'s mail line: ``MailUser=... MailType=...`` after the TresPer lines.

Slurm's ``slurm_sprint_job_info`` prints the line only when the job asked
for mail (a mail type and a recipient); the record otherwise stays byte for
byte the golden one (``tests/cli/test_scontrol_show.py``).
"""

from __future__ import annotations

import dataclasses

from cli import scontrol_show as show
from tests.cli.test_scontrol_show import JOBS, NOW


def test_the_mail_line_follows_tres_per_node_and_ends_the_record():
    base = JOBS[56]  # a GPU job: its record ends with TresPerNode=gres:gpu:2
    job = dataclasses.replace(base, mail_type="BEGIN,END", mail_user="alice@lab.test")
    lines = show.job_lines(job, NOW)
    assert lines[-3:] == [
        "TresPerNode=gres:gpu:2",
        "MailUser=alice@lab.test MailType=BEGIN,END",
        "",
    ]
    assert show.job_lines(base, NOW) == lines[:-2] + [""]  # no mail asked: no line
