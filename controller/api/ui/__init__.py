"""The web dashboard: server-rendered pages under ``/ui`` inside slurmctld's own app.

Files:

* ``tokens.py``   one-time login links and browser sessions (in memory)
* ``session.py``  ``Viewer`` (who is looking) and ``CsrfChecked`` (POST forms)
* ``render.py``   the Jinja2 environment and ``render(request, name, **ctx)``
* ``login.py``    ``/ui/login`` (link or pasted JWT), ``/ui/logout``, and
  ``POST /v1/ui/link`` that ``slurmlite ui`` calls over the Unix socket
* ``pages.py``    overview, nodes, fair share (read-only pages)
* ``queue_page.py``  the queue, a page of rows at a time
* ``jobpage.py``  one job: timeline, priority, explanation, GPUs, output tail
* ``gpugrid.py``  the state of every GPU cell of the overview
* ``sparkline.py``  the GPU utilization sparkline's inline SVG (its points:
  ``controller.accounting.usage_history``, fed as usage arrives)
* ``output_tail.py``  the end of a job's output: read here, else asked of the batch host
* ``actions.py``  cancel/hold/release a job, drain/resume a node (POST forms)
* ``events.py``   ``/ui/events``: a server-sent "changed" when jobs or nodes change
* ``plan.py``     the plan Gantt and what-if pages (their own router)
* ``templates/``, ``static/``  the pages and the one small script (live refresh)

Pages read the same services the API routes call, so a page shows what the
commands print and allows what the commands allow.  ``router`` is mounted by
``controller.api.app.create_app``; ``api_router`` (the link endpoint) goes
with the authenticated API routes.
"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/ui", include_in_schema=False)

from controller.api.ui import (  # noqa: E402  (each adds its routes)
    actions,
    events,
    jobpage,
    login,
    pages,
    plan,
    queue_page,
    static,
)

for part in (login, static, events, pages, queue_page, jobpage, actions, plan):
    router.include_router(part.router)
api_router = login.api_router
