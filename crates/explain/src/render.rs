//! Text renderers of observations live in the report crate (`wirespeed_report::where_ran`), with
//! every other renderer; re-exported here.

pub use wirespeed_report::where_ran::{end_heading, write_end, write_test};
