"""Published measurement traces as tables and simulators (Zeus NSDI'23, fms-acceleration).

- `discospace.traces.data`: where the traces live (`DISCOSPACE_DATA_DIR`, else
  `<repo>/../shared/data`); `TraceDataMissingError` names an absent folder.
- `discospace.traces.zeus`: `ZeusTrace`, the Zeus train and power traces as a simulator of
  training to a target metric at (batch size, power limit), with the Zeus cost.
- `discospace.traces.zeus_rules`: Zeus's run controls (early stopping at a cost limit,
  just-in-time power-limit profiling, an epoch cap) as pure rules, shared by the explorer's
  simulator and the replay actuator.
- `discospace.traces.fms`: the fms-acceleration A100 fine-tuning table (or any table with its
  columns), typed.
- `discospace.traces.cells`: a trace's CSV file read with every cell the readers need checked,
  so that a bad file is refused in one sentence naming it (and the row and column of a bad cell).
"""
