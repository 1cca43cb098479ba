"""What a scenario's output columns mean: each scenario module declares its ``SCHEMA``
(a :class:`Schema`) next to its run function, and ``bflnet describe NAME --columns``
prints it.

The convention every scenario follows (checked over the registry by the tests):

* every row has an ``event`` (what the row records: ``init``, ``iteration`` or ``round``,
  ``fault``, ``run`` for a one-row-per-run table, ...);
* a row's simulated time is ``time_s`` (seconds) and its cumulative bits on the air are
  ``cum_bits`` (and ``cum_bits_*`` for the parts: delivered, uplink, downlink);
* any other duration ends in ``_s`` (seconds), any other amount of bits in ``_bits``.

Units are one of :data:`UNITS`. Columns common to many scenarios are defined here once.
A column may also give a short ``label`` for the axes of a figure (``snr_db``: "SNR",
drawn as "SNR (dB)") and name a ``reference`` value (``mac``: ``links``, a setting the
others are compared with, drawn in every panel of a figure by ``bflnet plot``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["ALL", "UNITS", "Column", "Schema", "col"]

#: Allowed units: ``1`` is a dimensionless number, ``label`` a text or category,
#: ``index`` an integer position or id, ``count`` a number of things, ``fraction`` a
#: share in [0, 1], ``flag`` a yes / no value, ``nats`` an information quantity (KL),
#: ``dB`` a power ratio in decibels.
UNITS = ("s", "bits", "nats", "count", "fraction", "1", "label", "index", "flag", "m/s",
         "dB")

#: ``events`` of a column every row carries.
ALL: tuple[str, ...] = ()


@dataclass(frozen=True)
class Column:
    """One output column: its unit, what it means, and which ``event`` rows carry it
    (:data:`ALL`: every row); ``when`` says under which settings it exists, if not
    always; ``label`` its short name on a figure's axis (empty: from its name);
    ``reference`` the value that names the reference setting, if it has one."""

    name: str
    unit: str
    meaning: str
    events: tuple[str, ...] = ALL
    when: str = ""
    label: str = ""
    reference: str = ""

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"column {self.name}: unit must be one of {', '.join(UNITS)}, "
                             f"got {self.unit!r}")

    def on(self, *events: str) -> Column:
        """This column, carried by the rows of ``events`` only."""
        return replace(self, events=tuple(events))

    def only_when(self, when: str) -> Column:
        """This column, present only under the settings ``when`` describes."""
        return replace(self, when=when)

    def means(self, meaning: str) -> Column:
        """This column with another meaning."""
        return replace(self, meaning=meaning)

    def labelled(self, label: str) -> Column:
        """This column with another short label on figures."""
        return replace(self, label=label)


def col(name: str, unit: str, meaning: str, *events: str, when: str = "", label: str = "",
        reference: str = "") -> Column:
    """A :class:`Column` (``events`` empty: every row)."""
    return Column(name, unit, meaning, tuple(events), when, label, reference)


@dataclass(frozen=True)
class Schema:
    """A scenario's output columns, in table order."""

    columns: tuple[Column, ...]

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"columns declared twice: {', '.join(twice)}")

    @classmethod
    def of(cls, *columns: Column) -> Schema:
        """A schema of ``columns``."""
        return cls(tuple(columns))

    def names(self) -> list[str]:
        """The column names, in order."""
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        """The column called ``name``."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def lines(self) -> list[str]:
        """One line per column for ``bflnet describe --columns``: name, unit, the events
        whose rows carry it, meaning (and when it exists)."""
        width = max(len(c.name) for c in self.columns)
        unit_width = max(len(c.unit) for c in self.columns)
        out = []
        for c in self.columns:
            rows = ", ".join(c.events) if c.events else "all"
            when = f" Only with {c.when}." if c.when else ""
            out.append(f"  {c.name:<{width}}  {c.unit:<{unit_width}}  [{rows}]  "
                       f"{c.meaning}{when}")
        return out


# ------------------------------------------------------------------ common columns

EVENT = col("event", "label", "what the row records (init: before the first step; the "
            "others name a step, a fault or a per-run summary)")
TIME_S = col("time_s", "s", "simulated time of the row")
ITERATION = col("iteration", "index", "step of the protocol (0: the initial state)")
CUM_BITS = col("cum_bits", "bits", "bits put on the air so far, retransmissions included")
CUM_BITS_DELIVERED = col("cum_bits_delivered", "bits",
                         "bits of the messages delivered so far")
CUM_BITS_UP = col("cum_bits_up", "bits", "bits sent by the agents to the server so far")
CUM_BITS_DOWN = col("cum_bits_down", "bits", "bits sent by the server to the agents so far")
NODE = col("node", "index", "node that acted at this row (the token holder, the server)")
RUN = col("run", "index", "run number within this table (0..runs-1)")
RUN_SEED = col("run_seed", "index", "seed of this run, derived from the scenario's seed")
RUN_ID = col("run_id", "label", "one curve: method, setting and seed")
METHOD = col("method", "label", "the method this row's run uses")
SEED = col("seed", "index", "the scenario's seed")
KL = col("kl", "nats", "KL(q || exact posterior of all the data)")
THETA_MEAN = col("theta_mean", "1", "posterior mean of the parameter under q")
ACCURACY = col("accuracy", "fraction", "test accuracy of the predictive distribution")
ECE = col("ece", "fraction", "expected calibration error on the test set")
NLL = col("nll", "nats", "mean negative log-likelihood of the test labels")
BRIER = col("brier", "1", "Brier score on the test set")
DROPPED = col("dropped", "count", "messages lost (after every retransmission) this step")
BASE = (TIME_S, ITERATION, EVENT, CUM_BITS, CUM_BITS_DELIVERED)
SCHEDULED = col("scheduled", "count", "agents the server scheduled this round")
UPDATES = col("updates", "count", "agents' updates merged this round")
UPLINK_BITS = col("uplink_bits", "bits", "bits sent to the server this iteration")
SERVER_NODE = NODE.means("the server (its rows)")

#: Rows of one message each (``record_messages=true``).
MESSAGE_COLUMNS = (
    col("kind", "label", "message rows: what the message carries (gossip, token, ...)",
        "message", when="record_messages=true"),
    col("bits", "bits", "the message's size", "message", when="record_messages=true"),
    col("bits_on_air", "bits", "bits the message took on the air, retransmissions included",
        "message", when="record_messages=true"),
    col("attempts", "count", "transmission attempts of the message", "message",
        when="record_messages=true"),
    col("start_s", "s", "simulated time the message's first transmission began",
        "message", when="record_messages=true"),
)


#: Rows of the shared radio medium (``medium=shared``): ``mac`` rows (one per CSMA
#: back-off, one per ALOHA attempt that deferred, with its deferrals counted, one per
#: lost reception) always, ``tx`` rows (one per packet) with ``record_messages``.
SHARED_WHEN = "medium=shared"
MEDIUM_COLUMNS = (
    col("cause", "label", "mac collision rows: collision (interference) or half_duplex "
        "(the receiver was transmitting)", "mac", when=SHARED_WHEN),
    col("attempt", "index", "mac and tx rows: attempt of the packet (1: first)", "mac", "tx",
        when=SHARED_WHEN),
    col("cw", "count", "mac backoff rows (csma, one per back-off, written when it ends): "
        "the contention window drawn from", "mac", when="medium=shared and mac=csma"),
    col("counter", "count", "mac backoff rows (csma): the back-off counter drawn (idle "
        "slots to count down)", "mac", when="medium=shared and mac=csma"),
    col("deferrals", "count", "mac backoff rows (csma): times the countdown froze on a busy "
        "carrier; mac defer rows (aloha, one per attempt that deferred, written when it "
        "transmits): slots skipped", "mac", when="medium=shared and mac in (csma, aloha)"),
    col("end_s", "s", "tx rows: simulated time the packet left the air", "tx",
        when="medium=shared and record_messages=true"),
    col("receivers", "count", "tx rows and broadcast message rows: nodes addressed",
        "tx", "message", when="medium=shared and record_messages=true"),
    col("received", "count", "tx rows and broadcast message rows: nodes that got it",
        "tx", "message", when="medium=shared and record_messages=true"),
    col("frame", "label", "tx rows and mac collision rows: ack for an 802.11 ACK frame "
        "(empty: a data frame)", "mac", "tx",
        when="medium=shared and a phy preset (80211b, the default)"),
)


def fault_columns(*kinds: str, when: str = "") -> tuple[Column, ...]:
    """``kind``, ``peer``, ``lost`` and ``lost_steps`` of ``fault`` rows (``kinds``: the
    kinds that can occur)."""
    return (
        col("kind", "label", f"fault rows: what happened ({', '.join(kinds)})", "fault",
            when=when),
        col("peer", "index", "fault rows: the other end of the link", "fault", when=when),
        col("lost", "label", "fault rows: what a crash lost (agent_state, token, ...)",
            "fault", when=when or "keep_state=false or a lost token"),
        col("lost_steps", "count", "fault rows (token_lost): the token's updates lost",
            "fault", when=when),
    )
