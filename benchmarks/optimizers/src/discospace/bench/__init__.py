"""The optimizer benchmarks, in process, on published measurements (a tool, not a service).

- `discospace.bench.harness`: `run_operation` runs one operation through the explorer's real
  engine and operators, with the sampler and the actuators played by a `measure` function.
- `discospace.bench.zeus_sim`: the Zeus traces as the job `zeus_bso` optimises (runs replayed
  as Zeus's own simulator does, `discospace.traces.zeus_rules.simulated_run`).
- `discospace.bench.zeus`: `zeus_bso` against random choice and the oracle on every workload.
- `discospace.bench.fms`: measurements to near the best tokens/s on the fms-acceleration table.
- `discospace.bench.common`: the result tables, their JSON file and their printout.
- `discospace.bench.command`: what `discospace bench optimizers` runs.
"""
