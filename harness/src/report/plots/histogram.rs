//! A histogram of the speculative rows' tau, in bins of 0.1.

use super::{color, err, Chart};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The histogram of these tau values.
pub struct TauHistogram(pub Vec<f64>);

const BIN: f64 = 0.1;

impl Chart for TauHistogram {
    fn name(&self) -> &'static str {
        "tau_histogram"
    }

    fn title(&self) -> String {
        "Histogram of tau over speculative rows (bins of 0.1)".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let bin = |t: f64| (t / BIN + 1e-9).floor() as i64;
        let lo = self.0.iter().map(|t| bin(*t)).min().unwrap_or(10);
        let hi = self.0.iter().map(|t| bin(*t)).max().unwrap_or(10);
        let mut counts = vec![0usize; (hi - lo + 1) as usize];
        for t in &self.0 {
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
            .x_desc("tau")
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
