"""The object model every component shares: quantities, resource math, kinds, patches, selectors.

This is the lowest layer: it imports nothing else from inplace, and everything may import it.
Objects are plain JSON dicts, as the API sends them; the modules here give typed views and
exact arithmetic over them.
"""
