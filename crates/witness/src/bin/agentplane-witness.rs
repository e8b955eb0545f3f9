//! The agentplane witness server (stub until the server lands).
fn main() {}
