"""The sync and async clients: the same endpoints (memory_client._core.Endpoints), two ways to send."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, cast

import httpx

from memory_client._core import (
    DEFAULT_TIMEOUT,
    Attempts,
    Call,
    Endpoints,
    RetryPolicy,
    T,
    base_url,
    headers,
    next_page_call,
    read,
)
from memory_client.errors import MemoryServiceError
from memory_client.models import HistoryEvent, Job, Memory, Page, ReflectionCycle


class MemoryClient(Endpoints):
    """Sync client. `MemoryClient("http://localhost:8000", api_key=KEY)`; use as a context manager or close()."""

    def __init__(self, url: str, *, api_key: str, timeout: float = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, http_client: httpx.Client | None = None):
        self.retry = retry or RetryPolicy()
        self._http = http_client or httpx.Client(timeout=timeout)
        self._base = base_url(url)
        self._headers = headers(api_key)

    def _send(self, call: Call[T]) -> T:
        attempts = Attempts(self.retry, call, self._base)
        while True:
            try:
                response = self._http.request(call.method, httpx.URL(self._base).join(call.path),
                                              json=call.json, params=call.params or None, headers=self._headers)
            except (httpx.ConnectError, httpx.TimeoutException) as exc:
                time.sleep(attempts.after_error(exc))
                continue
            wait = attempts.after_response(response)
            if wait is None:
                return read(response, call)
            time.sleep(wait)

    def iter_memories(self, **filters: Any) -> Iterator[Memory]:
        """Every memory the filters match (as for list), page after page."""
        page = self.list(**filters)
        while True:
            yield from page.results
            if not page.next:
                return
            page = self.list(cursor_url=page.next)

    def iter_history(self, memory_id: str) -> Iterator[HistoryEvent]:
        page = self.history(memory_id)
        while True:
            yield from page.results
            if not page.next:
                return
            page = self.history(memory_id, cursor_url=page.next)

    def wait_for_job(self, job_id: str, *, timeout: float = 60.0, interval: float = 0.25) -> Job:
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job.finished:
                return job
            if time.monotonic() > deadline:
                raise MemoryServiceError(f"job {job_id} still {job.status} after {timeout} s")
            time.sleep(interval)

    def wait_for_reflection(self, cycle_id: int, *, timeout: float = 60.0, interval: float = 0.25) -> ReflectionCycle:
        deadline = time.monotonic() + timeout
        while True:
            cycle = self.reflection_cycle(cycle_id)
            if cycle.finished:
                return cycle
            if time.monotonic() > deadline:
                raise MemoryServiceError(f"reflection cycle {cycle_id} still {cycle.status} after {timeout} s")
            time.sleep(interval)

    def next_page(self, page: Page[T]) -> Page[T] | None:
        """The page after this one (of list, history), or None on the last page; followed on this
        client's own origin."""
        call = next_page_call(page)
        return None if call is None else self._send(call)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMemoryClient(Endpoints):
    """Async client: every method of MemoryClient, awaited (iterators: `async for`)."""

    def __init__(self, url: str, *, api_key: str, timeout: float = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, http_client: httpx.AsyncClient | None = None):
        self.retry = retry or RetryPolicy()
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._base = base_url(url)
        self._headers = headers(api_key)

    async def _send(self, call: Call[T]) -> T:  # type: ignore[override]  # the same answers, awaited
        attempts = Attempts(self.retry, call, self._base)
        while True:
            try:
                response = await self._http.request(call.method, httpx.URL(self._base).join(call.path),
                                                    json=call.json, params=call.params or None,
                                                    headers=self._headers)
            except (httpx.ConnectError, httpx.TimeoutException) as exc:
                await asyncio.sleep(attempts.after_error(exc))
                continue
            wait = attempts.after_response(response)
            if wait is None:
                return read(response, call)
            await asyncio.sleep(wait)

    async def iter_memories(self, **filters: Any) -> AsyncIterator[Memory]:
        page = await self.list(**filters)  # type: ignore[misc]
        while True:
            for memory in page.results:
                yield memory
            if not page.next:
                return
            page = await self.list(cursor_url=page.next)  # type: ignore[misc]

    async def iter_history(self, memory_id: str) -> AsyncIterator[HistoryEvent]:
        page = await self.history(memory_id)  # type: ignore[misc]
        while True:
            for event in page.results:
                yield event
            if not page.next:
                return
            page = await self.history(memory_id, cursor_url=page.next)  # type: ignore[misc]

    async def wait_for_job(self, job_id: str, *, timeout: float = 60.0, interval: float = 0.25) -> Job:
        deadline = time.monotonic() + timeout
        while True:
            job: Job = await self.job(job_id)  # type: ignore[misc]
            if job.finished:
                return job
            if time.monotonic() > deadline:
                raise MemoryServiceError(f"job {job_id} still {job.status} after {timeout} s")
            await asyncio.sleep(interval)

    async def wait_for_reflection(self, cycle_id: int, *, timeout: float = 60.0,
                                  interval: float = 0.25) -> ReflectionCycle:
        deadline = time.monotonic() + timeout
        while True:
            cycle = await cast(Awaitable[ReflectionCycle], self.reflection_cycle(cycle_id))  # awaitable here
            if cycle.finished:
                return cycle
            if time.monotonic() > deadline:
                raise MemoryServiceError(f"reflection cycle {cycle_id} still {cycle.status} after {timeout} s")
            await asyncio.sleep(interval)

    async def next_page(self, page: Page[T]) -> Page[T] | None:
        """The page after this one, or None on the last page (as MemoryClient.next_page)."""
        call = next_page_call(page)
        if call is None:
            return None
        following: Page[T] = await self._send(call)
        return following

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
