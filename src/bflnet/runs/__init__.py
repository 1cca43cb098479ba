"""The run machinery: what turns a config into a table. The registry of scenarios,
configs and TOML files, output schemas, resource guards, provenance and rerun, result
files, saved states and sweeps."""
