"""The cluster mirror: API objects → rows (``mapping``, pure), rows written (``store``), and the
list+watch loop that feeds them (``reflector``)."""
