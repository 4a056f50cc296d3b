//! The test-run core, two ends in memory.

mod two_ends;
