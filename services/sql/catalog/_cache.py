"""The catalog of one database, loaded in the background and kept current.

A warehouse of a thousand tables takes seconds to read; the service must not wait for it
to report SERVING, and a question must not wait for a reload. So the first load starts in
the background when the service opens the database, a question arriving before it is
done waits for it within its own deadline (else UNAVAILABLE, reason CATALOG_LOADING, with
a retry delay), and once a catalog is cached it is always served at once: after the TTL a
cheap fingerprint of the schema is compared in the background, and only a changed one is
reloaded, the old catalog serving meanwhile.

What other steps derive from a load and must not be paid for by a question (the value
vectors of ``services.sql.linker._valued``) is prepared inside the load
(:meth:`CatalogCache.prepare_with`): a catalog is served only once its preparations ran,
so a question asked while they run waits for the catalog as for any first load (or is
told CATALOG_LOADING), and one asked after reads the same catalog with the same
derivations: no answer depends on whether a background task had finished. A refresh
prepares the new catalog while the old one, already prepared, serves. A preparation
that could not finish (its dependency down or too busy) leaves the catalog served
without it, and it is run again in the background, :data:`PREPARE_RETRY_S` later and
then twice as long after each failure (at most :data:`PREPARE_RETRY_MAX_S`), until it
completes or the catalog is replaced; no question starts or waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from services.common import Unavailable, remaining
from services.sql.catalog._catalog import Catalog

# What is derived from a load before it is served; True when it is complete.
Prepare = Callable[[Catalog], Awaitable[bool]]

_log = logging.getLogger("tandem.sql.catalog")

# A question that waits for its database's first catalog keeps this much of its deadline
# for being answered once the catalog is there.
ANSWER_RESERVE_S = 1.0
# The retry delay a CATALOG_LOADING refusal suggests.
LOADING_RETRY_S = 2.0
# When a catalog served without its preparations has them run again: after this, then
# twice as long after each failure, at most the second figure apart.
PREPARE_RETRY_S = 2.0
PREPARE_RETRY_MAX_S = 60.0


class CatalogCache:
    """The last good catalog of one database (see the module docstring).

    ``load`` reads a whole catalog; ``fingerprint``, when given, digests what a load would
    read, cheaply, so an unchanged schema is not read again. Without one, every TTL
    reloads. A failed load with nothing cached is UNAVAILABLE (CATALOG_UNAVAILABLE) and
    the next call tries again; a failed refresh keeps serving the cached catalog.
    """

    def __init__(
        self,
        load: Callable[[], Awaitable[Catalog]],
        *,
        ttl_s: float,
        fingerprint: Callable[[], Awaitable[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        database: str = "",
    ) -> None:
        self._load = load
        self._fingerprint = fingerprint
        self._ttl_s = ttl_s
        self._clock = clock
        self._database = database
        self._catalog: Catalog | None = None
        self._seen: str | None = None  # the fingerprint the cached catalog was read under
        self._checked_at = 0.0
        self._loading: asyncio.Task[Catalog] | None = None
        self._refreshing: asyncio.Task[None] | None = None
        self._prepares: list[Prepare] = []
        self._prepared = True  # whether the cached catalog's preparations all completed
        self._preparing: asyncio.Task[None] | None = None

    def prepare_with(self, prepare: Prepare) -> None:
        """Run ``prepare`` on every catalog this cache loads, before it is served (see
        the module docstring). Registered before the first load starts."""
        self._prepares.append(prepare)

    @property
    def cached(self) -> Catalog | None:
        return self._catalog

    def invalidate(self) -> None:
        """Check the schema again on the next ``get``."""
        self._checked_at = float("-inf")

    def start(self) -> None:
        """Begin the first load in the background (nothing to wait for)."""
        if self._catalog is None:
            self._first_load()

    async def get(self) -> Catalog:
        """The cached catalog at once (checked in the background once stale); with none
        yet, the first load, awaited within the request's deadline."""
        if self._catalog is not None:
            if self._clock() - self._checked_at >= self._ttl_s and (
                self._refreshing is None or self._refreshing.done()
            ):
                self._checked_at = self._clock()  # one check per TTL, however many ask
                self._refreshing = asyncio.create_task(self.refresh())
            return self._catalog
        task = self._first_load()
        left = remaining()
        try:
            if left is None:
                return await asyncio.shield(task)
            return await asyncio.wait_for(asyncio.shield(task), max(left - ANSWER_RESERVE_S, 0))
        except TimeoutError:
            raise Unavailable(
                f"the schema catalog of database {self._database!r} is still loading",
                reason="CATALOG_LOADING",
                retry_after_s=LOADING_RETRY_S,
            ) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._loading is task:
                self._loading = None  # the next call tries again
            raise Unavailable("schema catalog unavailable", reason="CATALOG_UNAVAILABLE") from exc

    async def refresh(self) -> None:
        """Reload when the fingerprint changed (or there is none); on failure keep the
        cached catalog, to be checked again after another TTL."""
        try:
            unchanged = (
                self._fingerprint is not None
                and self._catalog is not None
                and await self._fingerprint() == self._seen
            )
            if unchanged:
                self._checked_at = self._clock()
                return
            await self._read()
        except Exception as exc:
            _log.warning(
                "catalog refresh failed; serving the cached catalog",
                extra={"fields": {"database": self._database, "error.type": type(exc).__name__}},
            )
            self._checked_at = self._clock()

    async def close(self) -> None:
        """Stop a load or refresh still running (the service is stopping)."""
        for task in (self._loading, self._refreshing, self._preparing):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):  # stopping: whatever it ended with
                    await task

    def _first_load(self) -> asyncio.Task[Catalog]:
        if self._loading is None or (self._loading.done() and self._catalog is None):
            self._loading = asyncio.create_task(self._read())
            self._loading.add_done_callback(self._loaded)
        return self._loading

    def _loaded(self, task: asyncio.Task[Catalog]) -> None:
        # A load nobody waited for still says how it ended (and its exception is taken).
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            _log.warning(
                "catalog load failed and nothing is cached",
                extra={"fields": {"database": self._database, "error.type": type(exc).__name__}},
            )

    async def _read(self) -> Catalog:
        started = self._clock()
        # read before the catalog: a change made during the load is seen on the next check
        seen = await self._fingerprint() if self._fingerprint is not None else None
        catalog = await self._load()
        prepared = await self._prepare(catalog)
        self._catalog, self._seen, self._checked_at = catalog, seen, self._clock()
        self._prepared = prepared
        if not prepared and (self._preparing is None or self._preparing.done()):
            self._preparing = asyncio.create_task(self._prepare_again(catalog))
        _log.info(
            "catalog loaded",
            extra={
                "fields": {
                    "database": self._database,
                    "tables": len(catalog.tables),
                    "seconds": round(self._clock() - started, 3),
                }
            },
        )
        return catalog

    async def _prepare(self, catalog: Catalog) -> bool:
        complete = True
        for prepare in self._prepares:
            complete = await prepare(catalog) and complete
        return complete

    async def _prepare_again(self, catalog: Catalog) -> None:
        delay = PREPARE_RETRY_S
        while self._catalog is catalog and not self._prepared:
            await asyncio.sleep(delay)
            if self._catalog is not catalog:
                return  # replaced by a newer load, prepared with it
            self._prepared = await self._prepare(catalog)
            delay = min(delay * 2, PREPARE_RETRY_MAX_S)

    async def preparation(self) -> None:
        """Wait for a preparation run again in the background, if one is running (tests,
        and a caller that wants the catalog's derivations in before it goes on)."""
        if self._preparing is not None:
            await asyncio.shield(self._preparing)
