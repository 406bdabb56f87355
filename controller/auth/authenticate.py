"""Who is asking over TCP: munge credentials and JSON Web Tokens (``AuthType``).

On the controller's Unix socket the kernel names the caller (``SO_PEERCRED``,
``controller.auth.callers``) whatever ``AuthType`` says.  A command on another host
reaches the TCP listener instead and must bring proof in a header:

* ``X-Slurmlite-Munge: MUNGE:...`` when ``AuthType=auth/munge``: a fresh
  ``munge -n`` credential, decoded by our munged (``unmunge``, in a thread
  so the event loop never waits on it).  munged refuses a second decode of
  the same credential, so a credential copied off the wire is worthless.
* ``X-SLURM-USER-TOKEN: <jwt>`` when ``auth/jwt`` is the ``AuthType`` or one
  of ``AuthAltTypes``: an HS256 token (``slurmlite.jwt``) naming a user,
  signed with the key file ``AuthAltParameters=jwt_key=PATH``.  The optional
  ``X-SLURM-USER-NAME`` (as slurmrestd sends it) may name another user only
  when the token is root's or the SlurmUser's.

Either way the answer is a ``Caller`` (uid, primary gid, name, admin), the
same object a Unix-socket caller gets, so the one authorization rule
(``controller.auth.callers.may_act_on``) needs to know nothing about how it was
proven.  A bad proof is a ``SlurmError``: ``ESLURM_AUTH_EXPIRED`` for an
expired token or credential, ``ESLURM_AUTH_CRED_INVALID`` for everything
else (forged, replayed, unknown user, method not configured); the API turns
both into HTTP 401.

Tokens are minted here too (``scontrol token``): for the caller, or -- by
root and the SlurmUser only -- for anyone; ``lifespan`` defaults to 1800 s
(or ``max_token_lifespan`` if smaller); other users may not ask for more
than ``max_token_lifespan``.  Worked example, ``max_token_lifespan=600``:
alice asks for no lifespan -> 600 s; for 900 s -> refused
(``ESLURM_INVALID_TIME_LIMIT``); root asks 900 s for alice -> granted.

The JWT key is as secret as root's password (whoever reads it can mint a
token for root): :func:`load_jwt_key` refuses a file not owned by the
controller's user or open to group or others.  Facts from Slurm's
``auth/jwt`` and ``auth/munge`` plugins and ``_slurm_rpc_auth_token``, in
our own words.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import stat
from collections.abc import Mapping

from controller.auth.callers import AdminPolicy, Caller, uid_of
from slurmlite import errors, jwt, munge
from slurmlite.config import Config, ConfigError
from slurmlite.credential import CredentialError
from slurmlite.errors import SlurmError

HEADER_MUNGE = "x-slurmlite-munge"
HEADER_TOKEN = "x-slurm-user-token"
HEADER_USER = "x-slurm-user-name"
DEFAULT_JWT_KEY = "jwt_hs256.key"  # in StateSaveLocation, as Slurm's default
MIN_JWT_KEY = 32  # bytes
log = logging.getLogger("slurmctld.authn")


def jwt_key_path(cfg: Config) -> str:
    """``AuthAltParameters=jwt_key=PATH`` (relative: to the config's directory), else
    ``<StateSaveLocation>/jwt_hs256.key``."""
    path = cfg.auth_alt_parameters.get("jwt_key") or os.path.join(
        cfg.state_save_location, DEFAULT_JWT_KEY
    )
    if not os.path.isabs(path) and not cfg.path.startswith("<"):
        path = os.path.join(os.path.dirname(cfg.path), path)
    return path


def load_jwt_key(path: str) -> bytes:
    """The JWT signing key; ``CredentialError`` if missing, short, or not private.

    Private means owned by the user the controller runs as and mode 0600 or
    0400: the same rule as the cluster key, plus the owner (a key another
    user owns could be replaced by that user).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CredentialError(
            f"auth/jwt key file {path} not found; create it with "
            f"'dd if=/dev/urandom of={path} bs=32 count=1 && chmod 600 {path}'"
        ) from None
    if st.st_uid != os.geteuid():
        raise CredentialError(
            f"auth/jwt key file {path} is owned by uid {st.st_uid}, not by the controller's "
            f"user (uid {os.geteuid()}); run 'chown {os.geteuid()} {path}'"
        )
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialError(
            f"auth/jwt key file {path} is accessible by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); run 'chmod 600 {path}'"
        )
    with open(path, "rb") as f:
        key = f.read()
    if len(key) < MIN_JWT_KEY:
        raise CredentialError(f"auth/jwt key file {path} is too short (need {MIN_JWT_KEY}+ bytes)")
    return key


def _refuse(code: int, detail: str) -> SlurmError:
    return SlurmError(code, detail)


class Authenticator:
    """The TCP authentication a configuration asks for; built once per ``Config``."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.munge = cfg.auth_type == "auth/munge"
        self.jwt = "auth/jwt" in (cfg.auth_type, *cfg.auth_alt_types)
        self.munge_socket = cfg.auth_info.get("socket") or None
        self.creation_disabled = "disable_token_creation" in cfg.auth_alt_parameters
        self.max_lifespan = 0  # 0: no limit
        self.problem: str | None = None  # why auth/jwt cannot work (bad key file...)
        self.key: bytes | None = None
        self.slurm_uid = uid_of(cfg.slurm_user) if cfg.slurm_user else None
        raw = cfg.auth_alt_parameters.get("max_token_lifespan")
        if raw is not None:
            if not raw.isdecimal() or int(raw) < 1:
                self.problem = f"invalid AuthAltParameters max_token_lifespan={raw!r}"
            else:
                self.max_lifespan = int(raw)
        if self.jwt and self.problem is None:
            try:
                self.key = load_jwt_key(jwt_key_path(cfg))
            except (CredentialError, OSError) as e:
                self.problem = str(e)

    def check(self) -> None:
        """Raise ``ConfigError`` if auth/jwt is configured but cannot work (start-up)."""
        if self.jwt and self.problem:
            raise ConfigError(self.problem)

    def privileged(self, uid: int) -> bool:
        """Root or the SlurmUser: may mint and use tokens for other users (as in Slurm)."""
        return uid == 0 or uid == self.slurm_uid

    async def identify(
        self, headers: Mapping[str, str], admins: AdminPolicy, now: float
    ) -> Caller | None:
        """The caller the headers prove; None if they carry no credential at all."""
        token, cred = headers.get(HEADER_TOKEN), headers.get(HEADER_MUNGE)
        if token is not None:
            if not self.jwt:
                raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, "auth/jwt is not configured")
            return self._from_token(token, headers.get(HEADER_USER), admins, now)
        if cred is not None:
            if not self.munge:
                raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, "AuthType is not auth/munge")
            return await self._from_munge(cred, admins)
        return None

    async def _from_munge(self, cred: str, admins: AdminPolicy) -> Caller:
        try:
            uid, gid = await asyncio.to_thread(munge.decode, cred, self.munge_socket)
        except munge.CredentialExpired as e:
            raise _refuse(errors.ESLURM_AUTH_EXPIRED, f"munge: {e}") from None
        except munge.MungeUnavailable as e:
            log.error("auth/munge: cannot decode credentials: %s", e)
            raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, f"controller's munged: {e}") from None
        except munge.AuthError as e:
            raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, f"munge: {e}") from None
        return admins.caller(uid, gid)

    def _from_token(
        self, token: str, wanted: str | None, admins: AdminPolicy, now: float
    ) -> Caller:
        if self.key is None:
            log.error("auth/jwt: %s", self.problem)
            raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, "auth/jwt key unusable on controller")
        if not token.isascii():  # a JWT is base64url and dots (jwt.verify_token needs ASCII)
            raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, "malformed token")
        try:
            name = jwt.verify_token(self.key, token, now)
        except jwt.TokenError as e:
            code = errors.ESLURM_AUTH_EXPIRED if e.expired else errors.ESLURM_AUTH_CRED_INVALID
            raise _refuse(code, str(e)) from None
        owner = _account(name)
        if wanted and wanted != name:
            if owner is None or not self.privileged(owner.pw_uid):
                raise _refuse(
                    errors.ESLURM_AUTH_CRED_INVALID,
                    f"a token of {name} cannot act as {wanted} (only root and SlurmUser may)",
                )
            owner, name = _account(wanted), wanted
        if owner is None:
            raise _refuse(errors.ESLURM_AUTH_CRED_INVALID, f"token names unknown user {name}")
        return admins.caller(owner.pw_uid, owner.pw_gid)

    def mint(
        self, caller: Caller, username: str | None, lifespan: int | None, now: float
    ) -> tuple[str, str, int]:
        """``(token, user, lifespan)`` for ``scontrol token``; ``SlurmError`` if refused."""
        privileged = self.privileged(caller.uid)
        if self.creation_disabled and not privileged:
            raise SlurmError(errors.ESLURM_ACCESS_DENIED, "token creation is disabled")
        if not self.jwt:
            raise SlurmError(errors.ESLURM_PLUGIN_NOT_LOADED, "auth/jwt is not configured")
        user = username or caller.user
        if user != caller.user and not privileged:
            raise SlurmError(
                errors.ESLURM_USER_ID_MISSING, f"{caller.user} may not ask a token for {user}"
            )
        if _account(user) is None:
            raise SlurmError(errors.ESLURM_USER_ID_MISSING, f"no such user: {user}")
        limit = self.max_lifespan
        if not lifespan:
            lifespan = min(jwt.DEFAULT_LIFESPAN, limit) if limit else jwt.DEFAULT_LIFESPAN
        elif limit and lifespan > limit and not privileged:
            raise SlurmError(
                errors.ESLURM_INVALID_TIME_LIMIT,
                f"lifespan {lifespan} s exceeds max_token_lifespan={limit}",
            )
        if self.key is None:
            raise SlurmError(errors.ESLURM_AUTH_UNABLE_TO_GENERATE_TOKEN, self.problem)
        return jwt.make_token(self.key, user, lifespan, now), user, lifespan


def _account(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except (KeyError, ValueError):  # ValueError: a NUL in the name
        return None
