"""Short-lived secrets of the dashboard: one-time login links and browser sessions.

A browser has no Unix-socket peer credentials and no munge, so the
dashboard trades a proof the controller already trusts for a cookie:

* ``slurmlite ui`` asks over the Unix socket (the kernel names the caller)
  for a **login link**: 32 random bytes, valid ``LINK_TTL`` seconds, good
  for one exchange (``redeem`` removes it whether or not it is still
  valid, so a link copied from a terminal's scroll-back is worthless).
* The exchange opens a **session**: another random id, kept in an HttpOnly,
  SameSite=Strict cookie, with its own CSRF token for the page's forms.
  A session ends ``SESSION_TTL`` seconds after it was opened, or at logout.

Only uid and gid are kept; who is an operator is decided again on every
request (``AdminPolicy``), so ``scontrol reconfigure`` takes effect at once.

Worked example (clock in seconds): link issued at t=0 -> redeemed at t=30:
a session until t=30+43200; the same link at t=31 -> None.

Kept in memory: a restarted controller forgets every session (users run
``slurmlite ui`` again), which is also the way to end them all.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

LINK_TTL = 120.0  # seconds a login link may wait for its click
SESSION_TTL = 12 * 3600.0  # seconds a dashboard session lasts
MAX_LINKS = 10_000  # outstanding links kept at most (the oldest are dropped)


@dataclass(frozen=True)
class Session:
    uid: int
    gid: int
    csrf: str  # the hidden field every POST form of this session carries
    expires: float


class UiTokens:
    """Login links and sessions, both keyed by unguessable random strings."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._links: dict[str, tuple[int, int, float]] = {}
        self._sessions: dict[str, Session] = {}

    def issue_link(self, uid: int, gid: int) -> tuple[str, float]:
        """A new one-time login token for ``uid`` and the moment it expires."""
        self._forget_expired()
        while len(self._links) >= MAX_LINKS:
            self._links.pop(next(iter(self._links)))
        token = secrets.token_urlsafe(32)
        expires = self.clock() + LINK_TTL
        self._links[token] = (uid, gid, expires)
        return token, expires

    def redeem(self, token: str) -> tuple[int, int] | None:
        """``(uid, gid)`` of an unexpired link, which is used up; None otherwise."""
        found = self._links.pop(token, None)
        if found is None or found[2] <= self.clock():
            return None
        return found[0], found[1]

    def open_session(self, uid: int, gid: int) -> str:
        """A new session for ``uid``; returns its id (the cookie's value)."""
        self._forget_expired()
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = Session(
            uid, gid, secrets.token_urlsafe(24), self.clock() + SESSION_TTL
        )
        return sid

    def session(self, sid: str) -> Session | None:
        """The live session with id ``sid``; None if unknown or expired."""
        found = self._sessions.get(sid)
        if found is None:
            return None
        if found.expires <= self.clock():
            del self._sessions[sid]
            return None
        return found

    def close_session(self, sid: str) -> None:
        self._sessions.pop(sid, None)

    def _forget_expired(self) -> None:
        now = self.clock()
        for sid in [s for s, v in self._sessions.items() if v.expires <= now]:
            del self._sessions[sid]
        for tok in [t for t, v in self._links.items() if v[2] <= now]:
            del self._links[tok]
