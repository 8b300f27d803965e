"""Storage for the API server: one interface (`interface.Storage`), two real backends.

`sqlite.SQLiteStorage` is the embedded default (a kine-like log table); `etcd.EtcdStorage` talks to a
real etcd through its v3 JSON gateway. `factory.open_storage(url, data_dir=...)` picks one from a `--datastore` URL.
"""
