"""The PersistentVolume binder controller (upstream pkg/controller/volume/persistentvolume)."""
