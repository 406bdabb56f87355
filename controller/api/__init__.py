"""The HTTP API: thin routes over the services, nothing else.

``app.py``          the application factory (``create_app``).
``deps.py``         dependencies: the controller object, the calling user, the
                    calling node.
``schemas.py``      Pydantic models of the JSON API (create and read kept
                    apart), mirroring ``slurmlite.protocol``.
``fastsubmit.py``   ``POST /v1/jobs`` without the framework's per-request
                    detours (the submit hot path).
``routes_*.py``     one file per family: jobs, job verbs, steps, cluster,
                    accounts, priority, shares, explain, auth, check.

A route parses, calls a service, answers; it holds no query of the store.
"""
