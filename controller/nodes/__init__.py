"""The node agents, seen from the controller.

``service.py``       ``NodeService``: registration, heartbeats, liveness
                     (``SlurmdTimeout``), the node and partition states sinfo
                     shows, where each agent listens.
``reconcile.py``     what a node says it runs vs what the store says; strays
                     and vanished jobs.
``agent_client.py``  ``AgentOrder`` (what an agent must be told after a
                     commit), the ``Signer`` of launch/step/signal orders and
                     the HTTP client that delivers them.
"""
