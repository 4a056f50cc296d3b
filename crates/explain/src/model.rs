//! The observation model: what one end of a test saw, per interval and for the whole test. The
//! types live in `wirespeed-model` (both ends' results carry them); re-exported here.

pub use wirespeed_model::observation::*;
