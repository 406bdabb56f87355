"""Who is asking, and what they may do.

``callers.py``        ``Caller`` (uid, gid, name, operator or not), Unix-socket
                      peer credentials (``auth/local``), ``AdminPolicy`` and
                      ``may_act_on`` -- the one authorization rule.
``authenticate.py``   TCP requests: munge credentials (``auth/munge``) and
                      JSON Web Tokens (``auth/jwt``, ``scontrol token``).
``peercred_http.py``  the HTTP protocol that reads peer credentials per
                      connection.

How a caller was proven never matters past this package: services see a
``Caller``.
"""
