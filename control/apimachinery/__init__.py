"""API machinery shared by every component, as k8s.io/apimachinery upstream.

Label and field selectors, DNS-1123 name validation, resource quantities and object-metadata helpers.
Everything here is pure: no I/O, no clocks, no global state. The bottom of the shared base with
control.util: control.api and control.client build on it.
"""
