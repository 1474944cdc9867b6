"""The explorer's pure domain: an operation's state, its fold, and the engine's decisions.

- `operation.py`: one operation's state, a fold (`evolve`) of its events from two topics;
- `state.py`: every operation, space and sample store an explorer folded (`explore`, `tick`);
- `decide.py`: the engine: from an operation's state and the time, its next decisions;
- `starting.py`, `stopping.py`: accepting a request; the stopping rules;
- `pairs.py`: one (entity, experiment) pair's facts, and retries;
- `entity_progress.py`: where each entity stands, experiment by experiment, and the counts;
- `objective.py`: best-so-far for the objective (the rules of `discospace.core.results`);
- `spaces.py`, `sample_store.py`: the registered spaces; results of their sample stores;
- `operator.py`: the operator interface (`Operator`, `OperationView`, `Draw`, `Measure`...),
  implemented in `discospace.explorer.operators`.

Nothing here reads a clock, draws a random number or touches Kafka: time and seeds come in as
arguments.
"""
