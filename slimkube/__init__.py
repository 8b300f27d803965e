"""slimkube's composition root: the `slimkube` command (cli.py) and the all-in-one `up` (allinone.py).

The only package that imports the components — the API server (`control.apiserver` with
`control.storage`), the controller manager (`control.controllers`), the kubelet (`nodeagent`) and the
kube-proxy (`proxy`) — to build, start and stop them in k3s's order (storage → API server → scheduler
→ controller manager → node agent → proxy), each switchable off with `--disable NAME`. Nothing imports
this package; the import contracts in pyproject.toml check both directions.
"""
