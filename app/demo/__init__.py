"""The bundled Harbor & Pine sample site (README.md here), served by `server.py`, and the tenant
settings its owner would choose."""

from __future__ import annotations

import msgspec

from store.config import SiteConfig


def as_its_owner_would(config: SiteConfig) -> SiteConfig:
    """The sample tenant as the shop's owner would set it up: the shop's own published phone number
    and e-mail address kept (`clean.allow_site_contacts`), every other one still scrubbed. Without
    it "what's your phone number?" was refused on the quickstart's own site and the contact page
    read "Phone: [phone]"."""
    if config.clean.allow_site_contacts:
        return config
    return msgspec.structs.replace(config, clean=msgspec.structs.replace(config.clean, allow_site_contacts=True))
