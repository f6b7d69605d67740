//! Throughput against batch size, one line per draft config (and temperature),
//! averaged over repeats and prompt sets.

use super::{category, color, err, legend, line_with_dots, upper, Chart};
use crate::report::data::{mean_by, RowView};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The throughput plot.
pub struct Throughput<'a>(pub &'a [&'a RowView]);

impl Chart for Throughput<'_> {
    fn name(&self) -> &'static str {
        "throughput"
    }

    fn title(&self) -> String {
        "Throughput vs batch size per draft config (decode tokens/s, mean over repeats)".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let mut batches: Vec<usize> = self.0.iter().map(|r| r.batch).collect();
        batches.sort_unstable();
        batches.dedup();
        let labels: Vec<String> = batches.iter().map(|b| b.to_string()).collect();
        let points = mean_by(self.0, |r| (r.series(), r.batch), |r| Some(r.throughput));
        let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(batches.len() as f64 - 0.5), 0.0..upper(ymax, 1.0))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(batches.len() * 2 + 1)
            .x_label_formatter(&category(&labels))
            .x_desc("batch size")
            .y_desc("tokens / s")
            .disable_x_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        let mut series: Vec<String> = points.iter().map(|p| p.0 .0.clone()).collect();
        series.dedup();
        series.sort_by_key(|s| (s != "base", s.clone()));
        series.dedup();
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| &p.0 .0 == s)
                .map(|p| {
                    let x = batches.iter().position(|b| *b == p.0 .1).unwrap_or(0);
                    (x as f64, p.1)
                })
                .collect();
            line_with_dots(&mut chart, pts, s.clone(), c)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
