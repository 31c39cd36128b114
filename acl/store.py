"""The access-control database: identity links, link states, grants, permission cache, audit."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterable, Sequence

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from acl.models import (
    AuditEntry,
    ChannelGrant,
    IdentityLink,
    LinkState,
    PendingLink,
    PermissionCache,
    RepoOverride,
)
from indexer.db import write_session

_STRICTNESS = {"public": 0, "internal": 1, "private": 2, "gone": 3}


def stricter(a: str, b: str) -> str:
    """The more restrictive of two visibilities (unknown values count as ``gone``)."""
    return a if _STRICTNESS.get(a, 3) >= _STRICTNESS.get(b, 3) else b


# Confirmation codes: no 0/O, 1/I/L, so a code read off a page is typed back right.
CONFIRM_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CONFIRM_LENGTH = 8
CONFIRM_ATTEMPTS = 3


def _code_hash(code: str) -> str:
    normal = "".join(ch for ch in code.upper() if ch.isalnum())
    return hashlib.sha256(normal.encode()).hexdigest()


class AclStore:
    """Small repository over the ACL tables; ``clock`` is injectable for TTL tests."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine  # the metadata engine (indexer.db), shared with the registry
        self.clock = clock

    # --- identity links -------------------------------------------------------------

    def link(
        self, platform: str, chat_user_id: str, github_user_id: int, github_login: str
    ) -> IdentityLink:
        """Link (or re-link) a chat user; their cached permissions start from scratch."""
        with write_session(self.engine) as s:
            old = s.exec(
                select(IdentityLink).where(
                    IdentityLink.platform == platform, IdentityLink.chat_user_id == chat_user_id
                )
            ).first()
            if old is not None:
                s.delete(old)
                s.flush()
            row = IdentityLink(
                platform=platform,
                chat_user_id=chat_user_id,
                github_user_id=github_user_id,
                github_login=github_login,
                linked_at=self.clock(),
            )
            s.add(row)
            s.commit()
            s.refresh(row)
        self.invalidate_user(github_user_id)
        return row

    def unlink(self, platform: str, chat_user_id: str) -> bool:
        with write_session(self.engine) as s:
            result = s.exec(
                delete(IdentityLink).where(
                    col(IdentityLink.platform) == platform,
                    col(IdentityLink.chat_user_id) == chat_user_id,
                )
            )
            s.commit()
            return bool(result.rowcount)

    def identity(self, platform: str, chat_user_id: str) -> IdentityLink | None:
        with Session(self.engine) as s:
            return s.exec(
                select(IdentityLink).where(
                    IdentityLink.platform == platform, IdentityLink.chat_user_id == chat_user_id
                )
            ).first()

    def links(self) -> list[IdentityLink]:
        with Session(self.engine) as s:
            return list(s.exec(select(IdentityLink).order_by(col(IdentityLink.linked_at))))

    def update_login(self, github_user_id: int, login: str) -> None:
        """Record a GitHub rename so operators see the current login."""
        with write_session(self.engine) as s:
            for row in s.exec(
                select(IdentityLink).where(IdentityLink.github_user_id == github_user_id)
            ):
                row.github_login = login
                s.add(row)
            s.commit()

    # --- OAuth states ---------------------------------------------------------------

    def create_link_state(self, platform: str, chat_user_id: str, ttl_seconds: float) -> str:
        state = secrets.token_urlsafe(32)
        now = self.clock()
        with write_session(self.engine) as s:
            s.exec(delete(LinkState).where(col(LinkState.expires_at) < now))
            s.add(
                LinkState(
                    state=state,
                    platform=platform,
                    chat_user_id=chat_user_id,
                    expires_at=now + ttl_seconds,
                )
            )
            s.commit()
        return state

    def consume_link_state(self, state: str) -> tuple[str, str] | None:
        """(platform, chat user) the state was issued to; None if unknown, used or expired."""
        with write_session(self.engine) as s:
            row = s.get(LinkState, state)
            if row is None:
                return None
            s.delete(row)
            s.commit()
            if row.expires_at < self.clock():
                return None
            return row.platform, row.chat_user_id

    # --- links waiting for the chat user's confirmation ---------------------------------

    def create_pending_link(
        self,
        platform: str,
        chat_user_id: str,
        github_user_id: int,
        github_login: str,
        ttl_seconds: float,
    ) -> str:
        """A one-time confirmation code for this sign-in (only its hash is stored).

        A newer sign-in replaces an older pending one of the same chat user.
        """
        code = "".join(secrets.choice(CONFIRM_ALPHABET) for _ in range(CONFIRM_LENGTH))
        now = self.clock()
        with write_session(self.engine) as s:
            s.exec(delete(PendingLink).where(col(PendingLink.expires_at) < now))
            s.exec(
                delete(PendingLink).where(
                    col(PendingLink.platform) == platform,
                    col(PendingLink.chat_user_id) == chat_user_id,
                )
            )
            s.add(
                PendingLink(
                    code_hash=_code_hash(code),
                    platform=platform,
                    chat_user_id=chat_user_id,
                    github_user_id=github_user_id,
                    github_login=github_login,
                    expires_at=now + ttl_seconds,
                )
            )
            s.commit()
        return f"{code[:4]}-{code[4:]}"

    def consume_pending_link(
        self, platform: str, chat_user_id: str, code: str
    ) -> tuple[int, str] | None:
        """(GitHub id, login) of the sign-in ``code`` confirms for this chat user, once.

        None when the code is unknown, expired, or was issued to another chat user. Each
        miss counts against the chat user's pending sign-in, which is dropped after
        ``CONFIRM_ATTEMPTS`` misses, so the code cannot be guessed.
        """
        now = self.clock()
        with write_session(self.engine) as s:
            row = s.get(PendingLink, _code_hash(code))
            if (
                row is not None
                and row.platform == platform
                and row.chat_user_id == chat_user_id
                and row.expires_at >= now
            ):
                s.delete(row)
                s.commit()
                return row.github_user_id, row.github_login
            if row is not None and (row.platform, row.chat_user_id) != (platform, chat_user_id):
                # Someone else holds this user's code: the sign-in is compromised.
                s.delete(row)
            for mine in s.exec(
                select(PendingLink).where(
                    PendingLink.platform == platform, PendingLink.chat_user_id == chat_user_id
                )
            ):
                mine.failed_attempts += 1
                if mine.failed_attempts >= CONFIRM_ATTEMPTS or mine.expires_at < now:
                    s.delete(mine)
                else:
                    s.add(mine)
            s.commit()
            return None

    # --- channel grants -------------------------------------------------------------

    def grant(self, platform: str, channel_id: str, repo: str, granted_by: str = "") -> None:
        with write_session(self.engine) as s:
            if self._grant_row(s, platform, channel_id, repo) is None:
                s.add(
                    ChannelGrant(
                        platform=platform,
                        channel_id=channel_id,
                        repo=repo,
                        granted_by=granted_by,
                        granted_at=self.clock(),
                    )
                )
                s.commit()

    def revoke_grant(self, platform: str, channel_id: str, repo: str) -> bool:
        with write_session(self.engine) as s:
            row = self._grant_row(s, platform, channel_id, repo)
            if row is None:
                return False
            s.delete(row)
            s.commit()
            return True

    @staticmethod
    def _grant_row(s: Session, platform: str, channel_id: str, repo: str) -> ChannelGrant | None:
        return s.exec(
            select(ChannelGrant).where(
                ChannelGrant.platform == platform,
                ChannelGrant.channel_id == channel_id,
                ChannelGrant.repo == repo,
            )
        ).first()

    def channel_grants(self, platform: str, channel_id: str) -> frozenset[str]:
        with Session(self.engine) as s:
            rows = s.exec(
                select(ChannelGrant.repo).where(
                    ChannelGrant.platform == platform, ChannelGrant.channel_id == channel_id
                )
            )
            return frozenset(rows)

    # --- permission cache -----------------------------------------------------------

    def cached_permissions(self, github_user_id: int, max_age: float) -> dict[str, bool]:
        """Repo → allowed, for the answers younger than ``max_age`` seconds."""
        oldest = self.clock() - max_age
        with Session(self.engine) as s:
            rows = s.exec(
                select(PermissionCache).where(
                    PermissionCache.github_user_id == github_user_id,
                    col(PermissionCache.fetched_at) >= oldest,
                )
            )
            return {r.repo: r.allowed for r in rows}

    def put_permissions(self, github_user_id: int, answers: dict[str, bool]) -> None:
        now = self.clock()
        with write_session(self.engine) as s:
            for repo, allowed in answers.items():
                s.merge(
                    PermissionCache(
                        github_user_id=github_user_id, repo=repo, allowed=allowed, fetched_at=now
                    )
                )
            s.commit()

    def invalidate_repo(self, repo: str) -> None:
        self._delete_cache(col(PermissionCache.repo) == repo)

    def invalidate_user(self, github_user_id: int) -> None:
        self._delete_cache(col(PermissionCache.github_user_id) == github_user_id)

    def invalidate_all(self) -> None:
        self._delete_cache(None)

    def _delete_cache(self, where: object) -> None:
        statement = delete(PermissionCache)
        if where is not None:
            statement = statement.where(where)  # type: ignore[arg-type]
        with write_session(self.engine) as s:
            s.exec(statement)
            s.commit()

    # --- visibility learnt from webhooks --------------------------------------------

    def set_repo_override(self, repo: str, visibility: str, reason: str = "") -> None:
        with write_session(self.engine) as s:
            s.merge(
                RepoOverride(
                    repo=repo, visibility=visibility, reason=reason, updated_at=self.clock()
                )
            )
            s.commit()

    def clear_repo_override(self, repo: str) -> None:
        with write_session(self.engine) as s:
            row = s.get(RepoOverride, repo)
            if row is not None:
                s.delete(row)
                s.commit()

    def repo_overrides(self) -> dict[str, str]:
        with Session(self.engine) as s:
            return {r.repo: r.visibility for r in s.exec(select(RepoOverride))}

    # --- audit ----------------------------------------------------------------------

    def record_audit(
        self,
        *,
        platform: str,
        user_id: str,
        place: str,
        question: str,
        allowed_repos: Iterable[str],
        cited: Sequence[tuple[str, str, int, int]],
        github_login: str = "",
        withheld: bool = False,
        reason: str = "",
        request_id: str = "",
    ) -> AuditEntry:
        """Store one question; ``cited`` is (repo, path, start_line, end_line): never code."""
        entry = AuditEntry(
            ts=self.clock(),
            platform=platform,
            user_id=user_id,
            github_login=github_login,
            place=place,
            question=question,
            allowed_repos=json.dumps(sorted(allowed_repos)),
            cited=json.dumps([{"repo": r, "path": p, "lines": [a, b]} for r, p, a, b in cited]),
            withheld=withheld,
            reason=reason,
            request_id=request_id,
        )
        with write_session(self.engine) as s:
            s.add(entry)
            s.commit()
            s.refresh(entry)
        return entry

    def audit_entries(self, limit: int = 50) -> list[AuditEntry]:
        """The newest ``limit`` entries, newest first."""
        with Session(self.engine) as s:
            rows = s.exec(
                select(AuditEntry)
                .order_by(col(AuditEntry.ts).desc(), col(AuditEntry.id).desc())
                .limit(limit)
            )
            return list(rows)
