"""The node agents, seen from the controller.

``service.py``       ``NodeService``: registration, heartbeats, liveness
                     (``SlurmdTimeout``), what jobs hold on each node, where
                     each agent listens.
``listing.py``       the node and partition states sinfo and scontrol show
                     (base state, flags, totals), built from the service's facts.
``reconcile.py``     what a node says it runs vs what the store says; strays
                     and vanished jobs.
``outside_gpus.py``  GPUs the agents find used outside the scheduler: blocked
                     until free for the settle time, the node's Reason.
``agent_client.py``  ``AgentOrder`` (what an agent must be told after a
                     commit), the ``Signer`` of launch/step/signal orders and
                     the HTTP client that delivers them.
"""
