"""Over-the-air learning: ``ota-langevin`` (WFALD vs FALD vs a digital uplink) and
``wflmc-gaussian``, with the devices' placement."""
