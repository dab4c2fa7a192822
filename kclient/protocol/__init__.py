"""Kafka wire format: schemas, codecs, headers and framing (pure, no I/O)."""

from kclient.protocol.catalog import ApiInfo, Catalog, default_catalog, load_catalog

__all__ = ["ApiInfo", "Catalog", "default_catalog", "load_catalog"]
