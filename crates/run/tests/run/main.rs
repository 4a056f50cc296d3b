//! The test-run core, two ends in memory.

mod clock;
mod two_ends;
