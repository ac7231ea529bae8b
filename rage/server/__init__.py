"""The self-hostable receiver behind ``rage serve`` (extra ``server``: waitress).

- ``multipart``: a streaming ``multipart/form-data`` reader (``curl -F file=@...``)
- ``storage``: the :class:`~rage.server.storage.Storage` interface and the local backend
- ``pages``: HTML for the landing page, one page per bundle, the admin index
- ``app``: the plain WSGI application that routes requests to the above; uploads are
  checked by :func:`rage.bundle.validate_bundle` before they are stored

Nothing here is imported by the rest of rage: the receiver is an optional component.
"""

from __future__ import annotations
