"""Pages of the cluster mirror: nodes, devices, device classes and the mirror's health."""
