"""Wire formats: JSON (orjson where it answers as the standard library), protobuf, strict field decoding (upstream:
k8s.io/apimachinery/pkg/runtime/serializer).
"""
