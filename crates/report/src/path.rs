//! The path model as text (`wirespeed model`): one path's buffers, slow start and loss
//! ceiling, or the loss × distance table. The figures are doctor's `path_model`; its JSON is
//! their serde form.

use wirespeed_doctor::path_model::{self, Model, TableDoc, LOSSES};
use wirespeed_model::units::{self, Rate};

/// The path's rate as every command echoes a `--rate` it understood: `10 Gbit/s (--rate)`.
fn rate_words(bps: u64) -> String {
    Rate::from_bps(bps).map_or_else(|| units::rate(bps as f64), |r| r.from_source("--rate"))
}

/// The loss × distance table as text.
pub fn table_text(doc: &TableDoc) -> String {
    let (rate, mss, t) = (doc.rate_bps, doc.mss, &doc.rows);
    let mut o = format!(
        "one loss-based TCP stream on a {} path, MSS {mss} bytes: the smaller of the link and MSS/RTT x 1.22/sqrt(loss)\n",
        rate_words(rate)
    );
    o += &format!("{:<14} {:>8}", "distance", "RTT");
    for l in LOSSES {
        o += &format!(" {:>14}", format!("1 in {:.0}", 1.0 / l));
    }
    o.push('\n');
    for row in t {
        o += &format!("{:<14} {:>5} ms", row.distance, row.rtt_ms);
        for v in &row.expected_bps {
            o += &format!(" {:>14}", units::rate(*v));
        }
        o.push('\n');
    }
    o += "loss-tolerant algorithms (HTCP, BBR) do far better than this line on long paths in ESnet's measurements\n";
    o
}

/// One path's model as text.
pub fn model_text(m: &Model) -> String {
    let rate = m.rate_bps as f64;
    let loss_text = m.loss.map_or(String::new(), |p| {
        format!(", loss {:.5} % (1 in {:.0})", p * 100.0, 1.0 / p)
    });
    let mut o = format!(
        "path: {}, RTT {} ms, MSS {} bytes{loss_text}\n",
        rate_words(m.rate_bps),
        m.rtt_ms,
        m.mss
    );
    o += &format!(
        "bandwidth-delay product: {}, {} segment{}\n",
        units::bytes_exact(m.bdp_bytes),
        m.window_segments,
        if m.window_segments == 1 { "" } else { "s" }
    );
    o += &format!(
        "socket buffers to set: {} (2 x BDP rounded up to a power of two, as doctor's fix and tune's plan set them)\n",
        units::bytes_exact(m.buffer_bytes)
    );
    o += &format!(
        "  sysctl -w net.core.rmem_max={b} net.core.wmem_max={b}; the maximum of net.ipv4.tcp_rmem and tcp_wmem to {b}\n",
        b = m.buffer_bytes
    );
    o += &format!(
        "slow start: {} round trip{} ({:.2} s) from {} segments to {}, if nothing is lost on the way\n",
        m.slow_start.round_trips,
        if m.slow_start.round_trips == 1 { "" } else { "s" },
        m.slow_start.seconds,
        path_model::INITIAL_WINDOW,
        m.window_segments
    );
    if let Some(ceiling) = m.mathis_bps {
        o += &format!(
            "Mathis ceiling of loss-based congestion control (Reno, CUBIC): MSS/RTT x 1.22/sqrt(p) = {}\n",
            units::rate(ceiling)
        );
        if m.loss_limited {
            o += &format!(
                "  the loss, not the link, limits one stream: {:.1} % of {}\n",
                ceiling * 100.0 / rate,
                rate_words(m.rate_bps)
            );
            o += "  loss-tolerant algorithms did better in ESnet's measurements: with 1 loss in 22,000 at 90 ms, a 10 Gbit/s path gave about 0.5 Gbit/s with HTCP (far less with Reno); BBR does not take loss for congestion\n";
        } else {
            o += "  above the link's rate: the loss does not limit one stream here\n";
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_doctor::path_model::{self, Path};

    #[test]
    fn esnet_s_example_prints_the_ceiling_and_the_loss_tolerant_algorithms() {
        let path = Path {
            rate_bps: 10_000_000_000,
            rtt_ms: 90.0,
            loss: Some(0.0000455),
            mss: 8948,
        };
        let t = model_text(&path_model::model(&path));
        assert!(t.contains("MSS/RTT x 1.22/sqrt(p) = 143.9 Mbit/s\n"), "{t}");
        assert!(t.contains("1.4 % of 10 Gbit/s (--rate)"), "{t}");
        assert!(t.contains("HTCP"), "{t}");
        let small = model_text(&path_model::model(&Path { mss: 1448, ..path }));
        assert!(small.contains("= 23.3 Mbit/s"), "{small}");
    }

    #[test]
    fn buffers_at_100g_10ms_are_the_sizing_rule_s() {
        let m = path_model::model(&Path {
            rate_bps: 100_000_000_000,
            rtt_ms: 10.0,
            loss: None,
            mss: 1448,
        });
        let t = model_text(&m);
        let want = wirespeed_doctor::sizing::buffer_target(100_000, 10.0);
        assert!(
            t.contains(&format!(
                "net.core.rmem_max={want} net.core.wmem_max={want}"
            )),
            "{t}"
        );
        assert!(!t.contains("Mathis"), "{t}");
    }

    #[test]
    fn the_table_has_a_row_per_distance() {
        let rows = path_model::table(10_000_000_000, 1448);
        let t = table_text(&TableDoc::new(10_000_000_000, 1448));
        assert_eq!(rows.len(), path_model::DISTANCES.len());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2 + path_model::DISTANCES.len() + 1, "{t}");
        assert!(lines[1].contains("1 in 22000"), "{t}");
        assert!(lines[2].starts_with("LAN"), "{t}");
        assert!(lines[6].starts_with("international"), "{t}");
    }
}
