"""Streaming from containers: exec and attach over WebSocket channel protocols (kubelet side)."""
