"""The cluster mirror, the read side: its watchers list and watch the DRA objects (and the nodes,
namespaces and pods they touch) through ``kube`` and write ``devices`` and ``claims`` rows; claim
requests follow their mirrored claims here (``following``), and the ResourceQuota backstop
keeps its quotas. Writing claims is ``claims.lifecycle``'s; ``devices``, ``claims`` and ``portal``
never import this app."""
