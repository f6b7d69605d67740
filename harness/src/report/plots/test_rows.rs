//! Made-up rows for the plots' tests: a baseline and `configs` draft
//! configs per model pair, batch size, temperature and prompt set.

use crate::report::data::RowView;

/// Rows of every combination, with tau, throughput and speedup varying
/// with the config, batch and temperature so no two points coincide.
pub fn rows(
    models: &[&str],
    configs: usize,
    batches: &[usize],
    temps: &[f64],
    sets: &[&str],
) -> Vec<RowView> {
    let mut out = Vec::new();
    for m in models {
        for &b in batches {
            for &t in temps {
                for s in sets {
                    for c in 0..=configs {
                        let (steps, topk) = if c == 0 {
                            (0, 1)
                        } else {
                            (1 + c % 5, 1 + c / 5)
                        };
                        let config = if c == 0 {
                            "base".to_string()
                        } else {
                            format!("s{steps}k{topk}n{}", c + 1)
                        };
                        let x = c as f64 * 0.1 + b as f64 * 0.01 + t * 0.3;
                        out.push(RowView {
                            key: format!("{m}.{config}.b{b}.{s}.t{t}.r0"),
                            model: m.to_string(),
                            config,
                            steps,
                            topk,
                            batch: b,
                            prompt_set: s.to_string(),
                            temperature: t,
                            repeat: 0,
                            tau: if c == 0 { 1.0 } else { 1.2 + x },
                            accept_rate: 0.5,
                            throughput: 100.0 + 50.0 * x,
                            speedup: (c > 0).then_some(0.6 + x),
                            cpu_speedup: (c > 0).then_some(0.6 + x),
                            lossless: "true".into(),
                            flagged: false,
                        });
                    }
                }
            }
        }
    }
    out
}
