"""A threading HTTP server for test-local servers that prints no traceback when a client hangs up.

Clients in these tests often close a connection mid-answer on purpose (a timeout, a bounded read);
``socketserver`` would print a ``BrokenPipeError`` traceback into an otherwise passing run. Any
other error still prints its traceback.
"""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)
