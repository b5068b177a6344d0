"""The cluster mirror: the one app that talks to the Kubernetes API. Its watchers list and watch
the DRA objects (and the nodes, namespaces and pods they touch) and write ``devices`` and
``claims`` rows; ``devices``, ``claims`` and ``portal`` never import it."""
