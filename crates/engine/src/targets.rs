//! Several servers tested at once (`wirespeed client HOST -p PORT,PORT`): one client test per
//! target, each on its own thread with the same configuration, gathered into the report's
//! typed document ([`TargetsDoc`]: each target's report or error, and the sums).

use wirespeed_report::targets::{Target, TargetOutcome, TargetsDoc};

use crate::client::{run_client, ClientConfig};
use crate::output::NullReporter;
use crate::EngineError;

/// The host a client tests when none is given: this machine's loopback.
pub const DEFAULT_HOST: &str = "127.0.0.1";
/// The port a client connects to and a server listens on when none is given (iperf3's).
pub const DEFAULT_PORT: u16 = 5201;

/// `HOST%DEV` (and `-B ADDR%DEV`): the host and the interface its sockets bind to, as
/// `--bind-dev DEV` does; `HOST` alone, or with an empty `%`, binds to none.
pub fn split_dev(s: &str) -> (&str, Option<&str>) {
    match s.rsplit_once('%') {
        Some((h, d)) if !d.is_empty() => (h, Some(d)),
        _ => (s, None),
    }
}

/// The targets of a command line: every host of `hosts` (a comma-separated list; the default
/// host without one) on every port of `ports` (the default port without any), hosts first.
pub fn expand(hosts: Option<&str>, ports: &[u16]) -> Vec<(String, u16)> {
    let hosts: Vec<String> = match hosts {
        Some(h) => h
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(String::from)
            .collect(),
        None => vec![DEFAULT_HOST.into()],
    };
    let ports = if ports.is_empty() {
        &[DEFAULT_PORT][..]
    } else {
        ports
    };
    hosts
        .iter()
        .flat_map(|h| ports.iter().map(move |p| (h.clone(), *p)))
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_dev_and_the_defaults() {
        assert_eq!(split_dev("192.0.2.1%eth0"), ("192.0.2.1", Some("eth0")));
        assert_eq!(split_dev("fe80::1%"), ("fe80::1%", None));
        assert_eq!(split_dev("host"), ("host", None));
        assert_eq!(
            expand(None, &[]),
            vec![(DEFAULT_HOST.to_string(), DEFAULT_PORT)]
        );
        assert_eq!(
            expand(Some("a, b"), &[1, 2]),
            vec![
                ("a".to_string(), 1),
                ("a".to_string(), 2),
                ("b".to_string(), 1),
                ("b".to_string(), 2)
            ]
        );
    }
}
