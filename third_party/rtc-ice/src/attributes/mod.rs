/// `ICE-CONTROLLING` and `ICE-CONTROLLED`, which resolve role conflicts.
pub mod control;
/// The `PRIORITY` attribute carried in connectivity checks.
pub mod priority;
/// The `USE-CANDIDATE` flag, by which the controlling agent nominates a pair.
pub mod use_candidate;
