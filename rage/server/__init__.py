"""The self-hostable receiver behind ``rage serve`` (extra ``server``: waitress).

- ``validate``: streaming checks of an uploaded ``.tar.zst`` before it is stored
- ``multipart``: a streaming ``multipart/form-data`` reader (``curl -F file=@...``)
- ``storage``: the :class:`~rage.server.storage.Storage` interface and the local backend
- ``pages``: HTML for the landing page, one page per bundle, the admin index
- ``app``: the plain WSGI application that routes requests to the above

Nothing here is imported by the rest of rage: the receiver is an optional component.
"""

from __future__ import annotations
