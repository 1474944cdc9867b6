"""discospace.explorer: owns operations; runs operators over each operation's event history.

- `domain/` (pure): an operation's state as a fold of its events, and the engine that turns it
  and the time into decisions; the operator interface (`domain/operator.py`).
- `operators/` (pure): the operators the engine runs (random walk, Zeus, Optuna), and
  `known_operators`.
- `service/` (runtime): handlers, the composition root, the live loop, replica ownership,
  metrics.
- `app.py` (wiring), `settings.py`, `__main__.py` (`python -m discospace.explorer`).

Nothing in `domain/` or `operators/` imports the runtime, reads a clock or draws an unseeded
random number (`services/explorer/tests/test_pure_packages.py`).
"""
