"""Everything about getting a model: the load-and-cache store, hub reachability, the embedded
assets, the device choice and the one lock around model construction.

Import the submodule you need (``from bertdemo.models.store import ModelStore``); this package
file imports nothing, so that light modules (``hub``, ``embedded``) stay free of torch.
"""
