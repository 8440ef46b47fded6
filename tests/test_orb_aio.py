"""pycdr.orb.aio.Resume: a coroutine started by hand (as the server's transport
callback starts a batch of messages) goes on in a task once it waits."""

from __future__ import annotations

import asyncio

import pytest

from pycdr.orb.aio import Resume


async def _await(awaitable):
    return await awaitable


def started(coroutine):
    """Run ``coroutine`` by hand up to its first wait: what it waits for."""
    return coroutine.send(None)


def test_finishes_after_the_future_it_waits_for():
    async def main():
        loop = asyncio.get_running_loop()
        gate = loop.create_future()
        steps = []

        async def work():
            steps.append("before")
            got = await gate
            steps.append(got)
            await asyncio.sleep(0)          # a bare yield on the way
            steps.append("after")
            return "value"

        coroutine = work()
        waiting_for = started(coroutine)
        assert waiting_for is gate and steps == ["before"]
        task = loop.create_task(_await(Resume(coroutine, waiting_for)))
        await asyncio.sleep(0)
        assert not task.done() and steps == ["before"]     # it waits for the gate
        gate.set_result("opened")
        assert await task == "value"
        assert steps == ["before", "opened", "after"]

    asyncio.run(main())


def test_cancellation_goes_into_the_coroutine():
    async def main():
        loop = asyncio.get_running_loop()
        gate = loop.create_future()
        seen = []

        async def work():
            try:
                await gate
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            finally:
                seen.append("finally")

        coroutine = work()
        task = loop.create_task(_await(Resume(coroutine, started(coroutine))))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seen == ["cancelled", "finally"]

    asyncio.run(main())


def test_errors_come_out_of_the_await():
    async def main():
        loop = asyncio.get_running_loop()
        gate = loop.create_future()

        async def work():
            await gate
            raise ValueError("from the coroutine")

        coroutine = work()
        task = loop.create_task(_await(Resume(coroutine, started(coroutine))))
        gate.set_result(None)
        with pytest.raises(ValueError, match="from the coroutine"):
            await task

    asyncio.run(main())


def test_an_exception_the_coroutine_handles_lets_it_go_on():
    async def main():
        loop = asyncio.get_running_loop()
        first, second = loop.create_future(), loop.create_future()

        async def work():
            try:
                await first
            except KeyError:
                pass                            # handled: it waits again
            return await second

        coroutine = work()
        task = loop.create_task(_await(Resume(coroutine, started(coroutine))))
        first.set_exception(KeyError("x"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not task.done()
        second.set_result(42)
        assert await task == 42

    asyncio.run(main())
