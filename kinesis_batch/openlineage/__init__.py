"""A run's OpenLineage events (``openlineage`` extra): the datasets' names (:mod:`.naming`, pure),
the events (:mod:`.events`) and their emission (:mod:`.emit`), only when OpenLineage is
configured the standard way, and never failing a run."""
