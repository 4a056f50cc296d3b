//! Integration tests of wirespeed-protocol in one test binary: one module per area.

mod auth_interop;
mod robust_decoders;
mod rsa_keys;
