"""The operators the explorer runs: pure decide functions over an operation's view.

- `random_walk.py`: `random_walk`, draws by the operation's sampling strategy;
- `zeus/`: `zeus_bso`, the Zeus batch-size and power-limit optimizer;
- `optuna_search/`: `optuna_tpe`, `optuna_gp`, `optuna_cmaes`, `optuna_nsga2`;
- `known.py`: `known_operators`, every operator by name.

Each implements `discospace.explorer.domain.operator.Operator`. Seeds come from the operation's
parameters and the view; nothing here reads a clock or touches Kafka.
"""
