"""The run timeline pages of ``oncelog serve``: ``/ui/`` and ``/ui/runs/{channel}``.

Server-rendered HTML with inline SVG (no script, no CDN: they work offline),
built with the ``/v1`` routes' own handlers (in a group, the group's answers),
behind the API's auth. See
:func:`oncelog.query.ui.routes.install_ui`.
"""

from oncelog.query.ui.login import is_login_post, is_ui_path
from oncelog.query.ui.routes import install_ui

__all__ = ["install_ui", "is_login_post", "is_ui_path"]
