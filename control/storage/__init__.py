"""Storage for the API server: one interface (`interface.Storage`), two real backends.

Part of the API-server component: only control.apiserver imports it (an import contract in
pyproject.toml); every other component reaches the state through the API.

`sqlite.SQLiteStorage` is the embedded default (a kine-like log table); `etcd.EtcdStorage` talks to a
real etcd through its v3 JSON gateway. `factory.open_storage(url, data_dir=...)` picks one from a `--datastore` URL.
"""
