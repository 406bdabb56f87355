"""The dashboard on a real cluster: ``slurmlite ui``'s link, the pages, an action.

Everything is real: slurmctld and two agents on loopback, ``sbatch`` and
``slurmlite ui`` as a user types them (the link is asked over the Unix
socket, peer credentials say who), and a browser-like httpx client that
keeps the session cookie.  Browser tests of the same pages: tests/ui.
"""

from __future__ import annotations

import re

import httpx

from tests.e2e.conftest import local_cluster, wait_for

LINK = re.compile(r"(https?://\S+)/ui/login\?token=\S+")


def test_a_user_logs_in_with_the_link_sees_their_job_and_cancels_it():
    with local_cluster("slurmlite-ui-", nodelist="d[1-2]", gpus_per_node=2) as c:
        work = c.new_workdir()
        job = c.submit(f"--gpus=1 -t 10 -o {work}/out.txt --wrap 'echo hello-dashboard; sleep 60'")
        wait_for(lambda: c.run(f"squeue -h -j {job} -o %T").stdout.strip() == "RUNNING", 30)
        r = c.run("slurmlite ui")
        assert r.returncode == 0, r.stderr
        found = LINK.search(r.stdout)
        assert found, r.stdout
        with httpx.Client(base_url=found.group(1), timeout=10) as browser:
            opened = browser.get(found.group(0), follow_redirects=True)
            assert opened.status_code == 200 and str(opened.url).endswith("/ui/")
            held = re.search(
                rf'data-job-id="{job}" data-gpu="(d[12]:[01])" data-gpu-state="al', opened.text
            )
            assert held, "the GPU grid shows the job's GPU as allocated"

            def job_page_with_output() -> str | None:
                text = browser.get(f"/ui/jobs/{job}").text
                return text if "hello-dashboard" in text else None

            page = wait_for(job_page_with_output, 15, "the job's output on its page")
            csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
            done = browser.post(
                f"/ui/jobs/{job}/action",
                data={"csrf": csrf, "action": "cancel", "back": "/ui/queue"},
                follow_redirects=True,
            )
            assert f"job {job} cancelled" in done.text
        assert c.wait_done(job) == "CANCELLED"
        # the link was used: a second opening is refused
        assert httpx.get(found.group(0), follow_redirects=False).status_code == 401
