"""Control loops run by the controller manager (manager.py), one module per controller."""
