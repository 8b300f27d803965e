"""The Kubernetes REST API server (aiohttp) and its pure helpers."""
