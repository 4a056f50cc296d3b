//! Render an iperf3 (or wirespeed) `-J` file as iperf3's text output.
//! Usage: cargo run -p wirespeed-report --example render FILE.json [-V]

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: render FILE.json [-V]");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("render: {path}: {e}");
            return ExitCode::from(1);
        }
    };
    let result = match wirespeed_report::TestResult::from_json_str(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("render: {path}: not an iperf3 -J document: {e}");
            return ExitCode::from(1);
        }
    };
    let opts = wirespeed_report::TextOptions {
        verbose: args.iter().any(|a| a == "-V"),
        ..Default::default()
    };
    let mut out = std::io::stdout().lock();
    match wirespeed_report::render_text(&mut out, &result, opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("render: {e}");
            ExitCode::from(1)
        }
    }
}
