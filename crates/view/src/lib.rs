//! Terminal views: drawing the running test (`client --live`, [`live`]) and the tests a server
//! is serving (`wirespeed top`, [`top`]) full-screen with ratatui, from the engine's live
//! frames and the server's stats feed. Each view is a screen state, fed event by event, and a
//! pure `render` of it into any ratatui frame (tested on ratatui's test backend); the terminal
//! and its keys are handled here too. Sockets and host counters are the caller's: the feed's
//! lines and this host's CPUs are passed in.

mod draw;
pub mod live;
pub mod top;
