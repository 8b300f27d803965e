"""The root CA publisher (upstream pkg/controller/certificates/rootcacertpublisher)."""
