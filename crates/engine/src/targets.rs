//! Several servers tested at once (`wirespeed client HOST -p PORT,PORT`): one client test per
//! target, each on its own thread with the same configuration, gathered into the report's
//! typed document ([`TargetsDoc`]: each target's report or error, and the sums).

use wirespeed_report::targets::{Target, TargetOutcome, TargetsDoc};

use crate::client::{run_client, ClientConfig};
use crate::output::NullReporter;
use crate::EngineError;

/// Run `cfg`'s test against every `(host, port)` at once. The document has every target in
/// the order given; the first failure (in that order) comes back too, for the exit status.
pub fn run_targets(
    cfg: &ClientConfig,
    targets: &[(String, u16)],
) -> (TargetsDoc, Option<EngineError>) {
    let runs: Vec<(String, u16, Result<_, EngineError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(h, p)| {
                let mut c = cfg.clone();
                c.host = h.clone();
                c.port = *p;
                scope.spawn(move || {
                    let r = run_client(&c, &mut NullReporter);
                    (c.host, c.port, r)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut first_err = None;
    let targets = runs
        .into_iter()
        .map(|(host, port, r)| Target {
            host,
            port,
            outcome: match r {
                Ok(r) => TargetOutcome::Result(Box::new(r)),
                Err(e) => {
                    let outcome = TargetOutcome::Error(e.to_string());
                    first_err.get_or_insert(e);
                    outcome
                }
            },
        })
        .collect();
    (TargetsDoc::of(targets), first_err)
}
