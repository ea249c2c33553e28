"""The object model every component shares: quantities, resource math, annotations,
conditions, selectors, storage names, back-off, time stamps, defaults, the validation rules a
component needs too (metadata, pods, the resize) and how objects print.

This is the lowest layer: it imports nothing else from inplace, and everything may import it.
Objects are plain JSON dicts, as the API sends them; the modules here give typed views and
exact arithmetic over them. What only the API server needs to serve a kind is in
:mod:`inplace.registry`.
"""
