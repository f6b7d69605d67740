//! Per-position acceptance a_k against depth k, one curve per draft config
//! (mean over its rows).

use super::{color, err, legend, line_with_dots, Chart};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The acceptance curves: (config, a_1..a_steps averaged).
pub struct Positions(pub Vec<(String, Vec<f64>)>);

impl Chart for Positions {
    fn name(&self) -> &'static str {
        "positions"
    }

    fn title(&self) -> String {
        "Per-position acceptance a_k: share of verify steps whose accepted path reaches depth k"
            .into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let kmax = self.0.iter().map(|c| c.1.len()).max().unwrap_or(1).max(1);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5f64..(kmax as f64 + 0.5), 0.0f64..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(kmax * 2 + 1)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 && *x >= 1.0 {
                    format!("{}", x.round() as usize)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
            .x_desc("draft depth k")
            .y_desc("a_k")
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        for (i, (name, a)) in self.0.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = a
                .iter()
                .enumerate()
                .map(|(k, v)| ((k + 1) as f64, *v))
                .collect();
            line_with_dots(&mut chart, pts, name.clone(), c)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
