"""Small utilities several components share (part of the shared base, with `control.apimachinery`,
`control.api` and `control.client`): the iptables client and backend detection, the clock, the
event-loop thread, component-config loading, the join token, and the version.

Nothing here imports a component; the import contracts in pyproject.toml check it.
"""
