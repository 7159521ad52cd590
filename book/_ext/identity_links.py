"""Sphinx extension: every mention of a registered identity ID links to its certificate entry.

An ID written as inline code anywhere in the book (prose, tables, identity badges) becomes a
link to the anchor the certificate page gives that identity (``certificate.html#<ID>``: the
library's badge emits ``<span id="<ID>">``), so a reader can follow any mention to the
statement, its evidence and a one-click citation.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

import attnproof  # noqa: F401  (importing the package registers every identity)
from attnproof.verify.registry import REGISTRY


class IdentityLinks(SphinxPostTransform):
    """Wrap each inline literal whose text is a registered ID in a link to its anchor."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        page = self.config.identity_links_page
        here = self.env.docname
        base = "" if here == page else self.app.builder.get_relative_uri(here, page)
        for literal in list(self.document.findall(nodes.literal)):
            ident = literal.astext()
            if ident not in REGISTRY or isinstance(literal.parent, nodes.reference):
                continue
            ref = nodes.reference("", "", internal=True, refuri=f"{base}#{ident}",
                                  classes=["identity-link"], reftitle=f"identity {ident} in the certificate")
            literal.replace_self(ref)
            ref += literal


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("identity_links_page", "certificate", "html")
    app.add_post_transform(IdentityLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
