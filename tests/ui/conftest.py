"""Fixtures of the dashboard tests: a live cluster, a real browser, logged-in users.

* ``cluster``: one slurmctld and two slurmd on loopback (``tests/e2e``'s
  ``local_cluster``), nodes gpu1 and gpu2 with 8 CPUs and 4 fake GPUs each,
  per pytest worker.  CPU-only jobs always fit beside the GPU jobs a test
  places, so tests sharing the cluster do not queue behind each other; each
  test cancels what it submitted.
* ``browser``: Debian's chromium, headless, driven by sync Playwright
  (``tests/ui/browser.py``); skipped without one unless
  ``SLURMLITE_REQUIRE_BROWSER=1``.
* ``dashboard``: ``dashboard()`` logs root (an operator: ``SlurmUser``) in,
  ``dashboard(dora)`` the second, unprivileged user.  Login is what a user
  does: ``slurmlite ui`` run as that user (the controller learns who asks
  from the Unix socket's peer credentials) prints a one-time link, which a
  fresh browser context (its own cookie jar) opens.  Every page of every
  context is watched for console errors; the test fails with them.
* ``dora``: a Unix user created with ``useradd`` for the session (one per
  pytest worker) and removed afterwards; ``as_user``
  (``tests/e2e/test_authz.py``) runs commands as her.
* ``invariants_hold`` (``tests/e2e/conftest.py``): after each test, the
  cluster's store keeps its invariants.

Everything started here is stopped in finalisers, by object or by PID, even
when the test fails: browser contexts, the browser, Playwright's driver, the
daemons (``local_cluster``) and the user.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.conftest import Cluster, invariants_hold, local_cluster, run_as  # noqa: F401
from tests.ui.browser import ConsoleErrors, browser_or_skip

USER = "slurmlite-dora"
LINK = re.compile(r"https?://[^\s/]+/ui/login\?token=[^\s]+")


@pytest.fixture(scope="session")
def chromium() -> str:
    return browser_or_skip()


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """One browser per test file: Playwright's sync API runs an event loop in this thread
    until it is stopped, and the next file in the same pytest worker (``--dist loadfile``)
    may call ``asyncio.run``, which refuses to run inside a running loop."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture(scope="session")
def cluster(chromium: str) -> Iterator[Cluster]:
    with local_cluster(
        "slurmlite-ui-",
        nodelist="gpu[1-2]",
        cpus_per_node=8,
        gpus_per_node=4,
        mem_per_node=16000,
        cluster_name="lab",
    ) as c:
        yield c


@pytest.fixture(scope="session")
def dora() -> Iterator[pwd.struct_passwd]:
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one user per worker: none removes another's
    name = f"{USER}-{worker}" if worker else USER
    created = False
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", name], check=True)
        created = True
    try:
        yield pwd.getpwnam(name)
    finally:
        if created:
            subprocess.run(["userdel", name], check=False)


def login_link(cluster: Cluster, user: pwd.struct_passwd | None) -> str:
    """The one-time link ``slurmlite ui`` prints for ``user`` (None: root, this process)."""
    if user is None:
        r = cluster.run("slurmlite ui")
        code, out, err = r.returncode, r.stdout, r.stderr
    else:
        from cli.slurmlite import main

        def ui(argv: list[str]) -> None:
            main.main(args=argv, prog_name="slurmlite")

        env = cluster.env(HOME="/tmp", USER=user.pw_name)
        code, out, err = run_as(user, ui, ["ui"], str(cluster.work), env)
    found = LINK.search(out)
    assert code == 0 and found, f"slurmlite ui: exit {code}\n{out}\n{err}"
    return found.group(0)


@dataclass
class Dashboard:
    """One user's browser session: a context of its own, one page, its console watched."""

    page: Any
    base: str  # http://127.0.0.1:PORT
    user: str  # who logged in ("" for nobody yet)
    console: ConsoleErrors
    link: str  # the login link: used up, unless opened with login=False

    def goto(self, path: str, status: int = 200) -> Any:
        """Open ``path`` (``/ui/...``) and check the answer's HTTP status."""
        response = self.page.goto(self.base + path, wait_until="load")
        assert response is not None and response.status == status, (
            f"GET {path} as {self.user}: {response.status if response else 'no response'}"
        )
        return response


@pytest.fixture
def dashboard(browser: Any, cluster: Cluster) -> Iterator[Callable[..., Dashboard]]:
    contexts: list[Any] = []
    consoles: list[ConsoleErrors] = []

    def open_as(user: pwd.struct_passwd | None = None, login: bool = True) -> Dashboard:
        """A new browser context logged in as ``user``; with ``login=False`` its link is
        left unopened (a visitor with no session)."""
        link = login_link(cluster, user)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        contexts.append(context)
        page = context.new_page()
        console = ConsoleErrors()
        consoles.append(console)
        console.watch(page)
        name = user.pw_name if user else "root"
        session = Dashboard(page, link.split("/ui/", 1)[0], name if login else "", console, link)
        if not login:
            return session
        page.goto(link, wait_until="load")
        assert "/ui/login" not in page.url, f"login as {name} stayed on {page.url}"
        seen = page.locator("#viewer").get_attribute("data-user")
        assert seen == name, f"logged in as {seen}, not {name}"
        return session

    try:
        yield open_as
    finally:
        for context in contexts:
            context.close()
    for console in consoles:
        console.assert_none()


def sbatch_as(cluster: Cluster, user: pwd.struct_passwd | None, args: list[str]) -> int:
    """Submit a job as ``user`` (None: root); its id."""
    workdir = cluster.new_workdir()
    if user is None:
        r = cluster.run("sbatch --parsable " + shlex.join(args), cwd=workdir)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.strip())
    from tests.e2e.test_authz import as_user

    code, out, err = as_user(cluster, user, "sbatch", ["--parsable", *args], workdir)
    assert code == 0, err
    return int(out.strip().split(";")[0])


def job_state(cluster: Cluster, job: int) -> str:
    return cluster.run(f"squeue -h -t all -j {job} -o %T").stdout.strip()


def expected_start(cluster: Cluster, job: int) -> str | None:
    """The job's estimated start as ``squeue --start`` prints it (%S), None while unknown."""
    start = cluster.run(f"squeue --start -h -j {job} -o %S").stdout.strip()
    return None if start in ("", "N/A") else start


def cancel_all(cluster: Cluster, jobs: list[int]) -> None:
    """Cancel the test's jobs (root may cancel anyone's); harmless for ended ones."""
    if jobs:
        cluster.run("scancel " + " ".join(map(str, jobs)))
