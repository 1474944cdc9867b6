"""The explorer as a running service: the replica runtime around the pure domain.

- `handlers.py`: `fold_history` and the `on_<event>` handlers over `ExplorerDeps`;
- `bootstrap.py`: the composition root, building those parts from settings;
- `live.py`: one lock, decisions published in order, a timer for what is due;
- `ownership.py`, `placement.py`: which operations this replica decides for (the partitions
  its consumer group gives it);
- `conflicts.py`: a decision read from the log against the one folded for its slot;
- `metrics.py`: the domain metrics, on the service's registry.
"""
