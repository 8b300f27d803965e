"""How a node reaches the pods of the other nodes, in the shape of flannel's backends (module notes in
`desired`): `vxlan` (the default), `host-gw`, `none`."""
