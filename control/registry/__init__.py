"""Per-resource defaulting and validation of API objects, as upstream's pkg/apis/*/v1 and */validation."""
