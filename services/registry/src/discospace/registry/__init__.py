"""discospace.registry: validates submitted discovery spaces against the experiment catalog."""
