"""Implementations the lockstep unit tests compare with the engine: each is the engine with one name
replaced (tests/meta/differential_wrappers' helpers), or a hostile module (one that hangs, ends its
process, patches the engine in place, returns values that are hard to compare, or fails to load).
Each is imported by name in a process of its own, as ``csconform diff`` imports B."""
