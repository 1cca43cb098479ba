"""State directories: a run's learnt states saved (``--save-state DIR``) and a later run
started from them (``--load-state DIR``): learn once, unlearn many times.

A state directory holds three files, written together atomically
(:mod:`~bflnet.runs.states.directory`):

- ``state.json``: the scenario, its full config, the seed, the bflnet version and, per run,
  the checkpoint's non-array parts (token position, clock, bit counters, random streams'
  states, ...);
- ``arrays.npz``: every array (global state, agents' states), read back without pickle:
  nothing in the directory is ever unpickled or executed;
- ``checksums.json``: the SHA-256 of the other two.

Nothing runs from a loaded directory before it is verified: its checksums
(:func:`~bflnet.runs.states.directory.read_state_dir`), the record and its config
(:func:`~bflnet.runs.states.schema.check_record`), then, once the scenario knows its
network, every saved run against the schema and the headers of the arrays against the
dtypes and shapes they must have, before any array's data are read
(:meth:`~bflnet.runs.states.handle.States.verify`); arrays holding NaN or infinity are refused.

A loading run takes its settings and seed from the saved state; it may change only the
settings of the request and after it (:mod:`~bflnet.runs.states.loading`).
"""

from bflnet.runs.states.directory import (
    ARRAYS_FILE,
    CHECKSUMS_FILE,
    STATE_FILE,
    SavedState,
    check_save_dir,
    read_state_dir,
    read_state_record,
    state_path,
)
from bflnet.runs.states.handle import (
    States,
    check_compatible,
    decode_checkpoint,
    encode_checkpoint,
    write_state_dir,
)
from bflnet.runs.states.loading import SavedSettings, saved_scenario, saved_settings
from bflnet.runs.states.schema import FORMAT, Fields, StateSpec, check_record, check_runs

__all__ = ["ARRAYS_FILE", "CHECKSUMS_FILE", "FORMAT", "STATE_FILE", "Fields", "SavedSettings",
           "SavedState", "StateSpec", "States", "check_compatible", "check_record",
           "check_runs", "check_save_dir", "decode_checkpoint", "encode_checkpoint",
           "read_state_dir", "read_state_record", "saved_scenario", "saved_settings",
           "state_path", "write_state_dir"]
