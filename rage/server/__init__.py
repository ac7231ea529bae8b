"""The self-hostable receiver behind ``rage serve`` (extra ``server``: waitress, jinja2,
multipart).

- ``app``: the plain WSGI application that routes requests; uploads are checked by
  :func:`rage.bundle.validate_bundle` and bounded by ``limits`` before they are stored
- ``wsgi``: errors, headers, request bodies and streamed files (no bundle knowledge)
- ``multipart``: ``curl -F file=@...`` bodies, through the ``multipart`` streaming parser
- ``storage``: the :class:`~rage.server.storage.Storage` interface and the local backend
- ``auth``: the maintainer's login form and session cookie
- ``downloads``: one member of a bundle as a download; ``cache``: what pages were built from
- ``pages``, ``bundle_page``: what each page shows (every page bounded), rendered by
  ``templating`` from ``templates/``; ``ansi``, ``tracebacks``, ``human`` format terminal
  output, tracebacks and values for people

Nothing here is imported by the rest of rage: the receiver is an optional component.
"""

from __future__ import annotations
