//! Workspace-level tests of agentplane live in `tests/`; this library is empty.
