//! `wirespeed model`: what a path allows one TCP stream (see `wirespeed_doctor::path_model`).

use std::process::ExitCode;

use clap::Args;
use wirespeed_doctor::path_model::{self, Path};
use wirespeed_doctor::target::{Ask, Command};
use wirespeed_model::units::Rate;

use wirespeed_report::path;

use crate::exit;
use crate::lab::parse_fraction;

#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The path's bottleneck rate (10G, 2.5G, 400M; a bare number is Mbit/s).
    #[arg(long, value_name = "RATE", value_parser = crate::common::rate)]
    rate: Rate,
    /// Round-trip time, ms (required unless --table).
    #[arg(long, value_name = "MS", value_parser = crate::common::rtt)]
    rtt: Option<f64>,
    /// Packet loss: a fraction (0.0000455) or a percentage (0.00455%).
    #[arg(long, value_name = "P")]
    loss: Option<String>,
    /// TCP maximum segment size, bytes (1448: a 1500-byte MTU with timestamps; 8948 for 9000).
    #[arg(long, value_name = "BYTES", default_value_t = path_model::DEFAULT_MSS)]
    mss: u32,
    /// ESnet-style table: one stream's expected rate by distance (RTT) and loss.
    #[arg(long)]
    table: bool,
    /// JSON output.
    #[arg(short = 'J', long)]
    json: bool,
}

pub fn run(a: ModelArgs) -> anyhow::Result<ExitCode> {
    let usage = |m: String| exit::fail(exit::USAGE, m);
    let ask = Ask {
        rate: Some(a.rate),
        rtt_ms: a.rtt,
        ..Ask::default()
    };
    let target = crate::common::resolve_target(Command::Model, None, &ask)?;
    let rate = a.rate.bps();
    if a.mss < 88 || a.mss > 65_495 {
        return Err(usage(format!(
            "--mss {}: an MSS is 88 to 65495 bytes",
            a.mss
        )));
    }
    let loss = a
        .loss
        .as_deref()
        .map(|l| parse_fraction(l, "--loss"))
        .transpose()?;
    let out = if a.table {
        let doc = path_model::TableDoc::new(rate, a.mss);
        if a.json {
            serde_json::to_string_pretty(&doc)? + "\n"
        } else {
            path::table_text(&doc)
        }
    } else {
        let rtt = target
            .rtt
            .map(|r| r.ms)
            .ok_or_else(|| usage("model: --rtt MS is needed (or --table)".into()))?;
        let m = path_model::model(&Path {
            rate_bps: rate,
            rtt_ms: rtt,
            loss,
            mss: a.mss,
        });
        if a.json {
            serde_json::to_string_pretty(&m)? + "\n"
        } else {
            target.line().map(|l| l + "\n").unwrap_or_default() + &path::model_text(&m)
        }
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
