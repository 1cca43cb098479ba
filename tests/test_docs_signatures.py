"""docs/architecture.md's interface signatures match the code: every `` `name(args)` ``
the doc gives for a method or constructor of the classes it documents is compared with
``inspect.signature`` of what it names (parameter names, in order)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from bflnet.channels.base import Channel
from bflnet.learners.base import ConsensusLearner, GlobalStateLearner
from bflnet.learners.federated.fedavg import FedAvg
from bflnet.learners.gossip.gossip_adapter import GossipAdapter
from bflnet.protocols.coding.codec_base import Codec

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
#: The classes whose methods the doc spells out, by the name the doc gives them.
CLASSES = {"GlobalStateLearner": GlobalStateLearner, "ConsensusLearner": ConsensusLearner,
           "Channel": Channel, "Codec": Codec, "GossipAdapter": GossipAdapter,
           "FedAvg": FedAvg}
CALL = re.compile(r"`(?:([A-Z]\w*)\.)?([a-z_]\w*|[A-Z]\w*)\(([^`()]*)\)")


def _names(text: str) -> list[str]:
    """Parameter names of a documented call: ``agent, state, *, scale=1.0`` -> names."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if part in ("", "*", "..."):
            continue
        out.append(part.split("=")[0].split(":")[0].strip().lstrip("*"))
    return out


def _code_names(obj: object) -> list[str]:
    params = inspect.signature(obj).parameters.values()  # type: ignore[arg-type]
    return [p.name for p in params if p.name != "self"
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _bullets(text: str) -> list[str]:
    return re.split(r"\n(?=- )", text)


def test_the_documented_signatures_are_the_code_signatures():
    checked = []
    for bullet in _bullets(DOC.read_text()):
        head = re.match(r"- \*\*`(\w+)`\*\*", bullet)
        owner = CLASSES.get(head.group(1)) if head else None
        for qualifier, name, args in CALL.findall(bullet):
            if name in CLASSES:  # a constructor
                target = CLASSES[name]
            else:
                cls = CLASSES.get(qualifier) or owner
                candidates = [cls] if cls is not None else [
                    c for c in CLASSES.values() if name in vars(c)]
                candidates = [c for c in candidates if c is not None and hasattr(c, name)]
                if not candidates:
                    continue
                target = getattr(candidates[0], name)
            documented, actual = _names(args), _code_names(target)
            if not documented and actual and name not in CLASSES:
                continue  # `fresh()` style mentions with no arguments: compared below
            assert documented == actual, f"{name}({args}) in the doc; the code: {actual}"
            checked.append(name)
    # the interfaces the doc must spell out, each checked at least once
    for name in ("init", "init_agent", "local_update", "merge", "evaluate", "forget",
                 "init_node", "local_steps", "outgoing", "sent", "absorb", "attempt",
                 "encode", "merge_weighted", "local_update_batch", "GossipAdapter"):
        assert name in checked, f"the doc gives no signature of {name}"


def test_init_node_takes_the_common_start():
    assert _code_names(ConsensusLearner.init_node) == ["node", "rng", "common"]
