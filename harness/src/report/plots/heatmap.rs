//! Mean speedup over the same-run baseline on a grid of draft depth (steps)
//! x branching (topk): red below 1 (speculation loses), green above.

use super::{category, err, Chart};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Cells: (steps, topk, mean speedup).
pub struct Heatmap(pub Vec<(usize, usize, f64)>);

fn shade(s: f64) -> RGBColor {
    let t = (s.max(1e-6).ln().abs() / 2f64.ln()).min(1.0);
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t) as u8;
    if s < 1.0 {
        RGBColor(255, mix(255, 90), mix(255, 80))
    } else {
        RGBColor(mix(255, 60), mix(255, 170), mix(255, 90))
    }
}

impl Chart for Heatmap {
    fn name(&self) -> &'static str {
        "speedup_heatmap"
    }

    fn title(&self) -> String {
        "Mean speedup over the same-run baseline by steps x topk (red: below 1, a net loss)".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let mut steps: Vec<usize> = self.0.iter().map(|c| c.0).collect();
        let mut topks: Vec<usize> = self.0.iter().map(|c| c.1).collect();
        steps.sort_unstable();
        steps.dedup();
        topks.sort_unstable();
        topks.dedup();
        let xl: Vec<String> = topks.iter().map(|k| format!("topk {k}")).collect();
        let yl: Vec<String> = steps.iter().map(|s| format!("steps {s}")).collect();
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(
                -0.5f64..(topks.len() as f64 - 0.5),
                -0.5f64..(steps.len() as f64 - 0.5),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(topks.len() * 2 + 1)
            .y_labels(steps.len() * 2 + 1)
            .x_label_formatter(&category(&xl))
            .y_label_formatter(&category(&yl))
            .disable_mesh()
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        for (y, s) in steps.iter().enumerate() {
            for (x, k) in topks.iter().enumerate() {
                if self.0.iter().any(|c| c.0 == *s && c.1 == *k) {
                    continue;
                }
                let (x, y) = (x as f64, y as f64);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.48, y - 0.48), (x + 0.48, y + 0.48)],
                        RGBColor(235, 235, 235).filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        "not run",
                        (x - 0.08, y + 0.05),
                        ("sans-serif", 16)
                            .into_font()
                            .color(&RGBColor(120, 120, 120)),
                    )))
                    .map_err(err)?;
            }
        }
        for &(s, k, v) in &self.0 {
            let x = topks.iter().position(|t| *t == k).unwrap_or(0) as f64;
            let y = steps.iter().position(|t| *t == s).unwrap_or(0) as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.48, y - 0.48), (x + 0.48, y + 0.48)],
                    shade(v).filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{v:.2}x"),
                    (x - 0.08, y + 0.05),
                    ("sans-serif", 20).into_font(),
                )))
                .map_err(err)?;
        }
        Ok(())
    }
}
