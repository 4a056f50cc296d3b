//! Integration tests of wirespeed-observe in one test binary: one module per area.

mod recorded;
