"""The live dashboard (``inplace dashboard``): usage against requests and limits, every resize.

A component like the scheduler: it talks to the cluster only through the Kubernetes API (the
``client`` package), so it works against any cluster. :mod:`.state` keeps one watch per kind
and a bounded history (:mod:`.history`), :mod:`.model` and :mod:`.views` turn objects into
what the pages show, :mod:`.resize` builds the resize form's patch, and :mod:`.server`
serves the page, its static files (uPlot, vendored under ``static/vendor``) and live
server-sent event streams on 127.0.0.1 behind a token.
"""
