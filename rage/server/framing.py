"""HTTP framing the receiver refuses, below the WSGI application (waitress's parser).

A request with both Content-Length and Transfer-Encoding is how requests are smuggled past
a proxy that reads one header while the server reads the other. waitress reads it by
Transfer-Encoding and keeps the connection open, so whatever the proxy took for the body
ran as the next request. RFC 9112 (6.3) lets a server reject such a request, and requires
it to close the connection either way: it is refused here with a 400 and a close, before
the application sees anything (the WSGI environ no longer shows both headers).
"""

from __future__ import annotations

from typing import Any


def _header_names(header_plus: bytes) -> set[bytes]:
    return {line.split(b":", 1)[0].strip().lower()
            for line in header_plus.split(b"\r\n")[1:] if b":" in line}


def harden(server: Any) -> None:
    """Make ``server`` (what waitress's ``create_server`` returned) refuse ambiguous framing
    on every connection it accepts from now on."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser, ParsingError

    class StrictParser(HTTPRequestParser):  # type: ignore[misc]
        def parse_header(self, header_plus: bytes) -> None:
            names = _header_names(header_plus)
            if b"content-length" in names and b"transfer-encoding" in names:
                # waitress answers a ParsingError with 400 and closes the connection
                raise ParsingError("both Content-Length and Transfer-Encoding: refused")
            super().parse_header(header_plus)

    class StrictChannel(HTTPChannel):  # type: ignore[misc]
        parser_class = StrictParser

    # one listening socket, or several (waitress's MultiSocketServer keeps them in its map)
    for s in [server, *getattr(server, "map", {}).values()]:
        if hasattr(s, "channel_class"):
            s.channel_class = StrictChannel
