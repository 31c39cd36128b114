"""An aiohttp app served from a background thread on a real port (the local model servers)."""

from __future__ import annotations

import abc
import asyncio
import socket
import threading

from aiohttp import web


class BackgroundServer(abc.ABC):
    """Serves ``app()`` at ``base_url`` from a daemon thread between ``start`` and ``stop``."""

    label = "local server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @abc.abstractmethod
    def app(self) -> web.Application:
        """The aiohttp application this server runs."""

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            runner = web.AppRunner(self.app(), access_log=None)
            try:
                sock = socket.create_server((self.host, self.port))
                self.port = sock.getsockname()[1]
                loop.run_until_complete(runner.setup())
                loop.run_until_complete(web.SockSite(runner, sock).start())
            except BaseException as exc:  # reported to the caller of start()
                self._error = exc
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name=self.label, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"the {self.label} did not start within 10 s")
        if self._error is not None:
            raise RuntimeError(f"the {self.label} did not start: {self._error}")

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
