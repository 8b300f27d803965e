"""The kubelet's garbage collection of dead containers and sandboxes (containers.py) and of unused images
(images.py), each a pure selection with the I/O that acts on it in manager.py."""
