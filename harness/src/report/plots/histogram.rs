//! A histogram of the speculative rows' tau, in bins of 0.1, every draft
//! config, model pair, batch size and temperature pooled (the title says
//! which).

use super::{color, err, Chart};
use crate::report::data::RowView;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The histogram of these rows' tau.
pub struct TauHistogram<'a>(pub &'a [&'a RowView]);

/// The distinct values of `f` over `rows`, in order, as text.
fn values<T: PartialOrd + ToString>(rows: &[&RowView], f: impl Fn(&RowView) -> T) -> String {
    let mut v: Vec<T> = rows.iter().map(|r| f(r)).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.dedup_by(|a, b| a == b);
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

const BIN: f64 = 0.1;

impl Chart for TauHistogram<'_> {
    fn name(&self) -> &'static str {
        "tau_histogram"
    }

    fn title(&self) -> String {
        let rows = self.0;
        let mut models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        format!(
            "Histogram of tau (bins of 0.1) over all {} speculative rows, pooled: every draft config, model pair ({}), batch size ({}), temperature ({}) and repeat",
            rows.len(),
            models.join(", "),
            values(rows, |r| r.batch),
            values(rows, |r| r.temperature),
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let taus: Vec<f64> = self.0.iter().map(|r| r.tau).collect();
        let bin = |t: f64| (t / BIN + 1e-9).floor() as i64;
        let lo = taus.iter().map(|t| bin(*t)).min().unwrap_or(10);
        let hi = taus.iter().map(|t| bin(*t)).max().unwrap_or(10);
        let mut counts = vec![0usize; (hi - lo + 1) as usize];
        for t in &taus {
            counts[(bin(*t) - lo) as usize] += 1;
        }
        let cmax = counts.iter().copied().max().unwrap_or(1);
        let (x0, x1) = ((lo - 1) as f64 * BIN, (hi + 2) as f64 * BIN);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, 0.0f64..(cmax as f64 + 1.0))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("tau (tokens per verify step)")
            .y_desc("rows")
            .y_label_formatter(&|y| {
                if (y - y.round()).abs() < 1e-6 {
                    format!("{}", y.round() as i64)
                } else {
                    String::new()
                }
            })
            .x_label_formatter(&|x| format!("{x:.1}"))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        let c = color(0);
        chart
            .draw_series(
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(i, n)| {
                        let x = (lo + i as i64) as f64 * BIN;
                        Rectangle::new([(x + 0.005, 0.0), (x + BIN - 0.005, *n as f64)], c.filled())
                    }),
            )
            .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::test_rows::rows;

    #[test]
    fn the_histogram_title_says_what_it_pools() {
        let views = rows(&["tiny-llama"], 3, &[1, 4], &[0.0, 0.7], &["builtin"]);
        let spec: Vec<&RowView> = views.iter().filter(|r| r.steps > 0).collect();
        let svg = super::super::svg(&TauHistogram(&spec)).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains("over all 12 speculative rows, pooled"));
        assert!(text.contains("batch size (1, 4), temperature (0, 0.7)"));
    }
}
