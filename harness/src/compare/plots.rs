//! A-vs-B plots: throughput of B against A per row group (the diagonal is
//! "no change"), and the change of each row's headline measure with its interval.

use super::matching::RowChange;
use crate::report::plots::{category, err, Chart};
use crate::stats::Verdict;
use plotters::coord::Shift;
use plotters::prelude::*;

fn verdict_color(v: Verdict) -> RGBColor {
    match v {
        Verdict::Improved => RGBColor(0, 158, 115),
        Verdict::Regressed => RGBColor(213, 94, 0),
        Verdict::WithinNoise => RGBColor(90, 90, 90),
    }
}

/// Throughput of B against A.
pub struct Scatter<'a>(pub &'a [RowChange]);

impl Chart for Scatter<'_> {
    fn name(&self) -> &'static str {
        "throughput_a_vs_b"
    }

    fn title(&self) -> String {
        "Throughput (tokens/s) of B against A per row group; grey line: no change; colour: the row's verdict (green improved, orange regressed, grey within noise)".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let pts: Vec<(f64, f64, Verdict)> = self
            .0
            .iter()
            .filter_map(|r| {
                let c = r.changes.iter().find(|c| c.measure == "throughput_tok_s")?;
                Some((c.a, c.b, r.verdict))
            })
            .collect();
        let max = pts.iter().map(|p| p.0.max(p.1)).fold(1.0, f64::max) * 1.1;
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..max, 0.0..max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("A: tokens / s")
            .y_desc("B: tokens / s")
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, 0.0), (max, max)],
                BLACK.mix(0.3).stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_series(
                pts.iter()
                    .map(|p| Circle::new((p.0, p.1), 6, verdict_color(p.2).filled())),
            )
            .map_err(err)?;
        Ok(())
    }
}

/// The headline change per row with its interval.
pub struct Changes<'a>(pub &'a [RowChange]);

impl Chart for Changes<'_> {
    fn name(&self) -> &'static str {
        "changes"
    }

    fn title(&self) -> String {
        "Change from A to B per row (%): speedup for speculative rows, throughput for baselines; bar: the bootstrap interval where both runs have repeats".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let rows: Vec<(&RowChange, &super::matching::Change)> = self
            .0
            .iter()
            .filter_map(|r| Some((r, r.headline()?)))
            .collect();
        let labels: Vec<String> = rows
            .iter()
            .map(|(r, _)| {
                r.label
                    .split('.')
                    .skip(1)
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect();
        let span = rows
            .iter()
            .map(|(_, c)| {
                let i = c
                    .interval
                    .map_or(c.relative.abs(), |i| i.lower.abs().max(i.upper.abs()));
                i.max(c.relative.abs())
            })
            .fold(0.05, f64::max)
            * 110.0;
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..(rows.len() as f64 - 0.5), -span..span)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(rows.len() * 2 + 1)
            .x_label_formatter(&category(&labels))
            .label_style(("sans-serif", 14))
            .x_label_style(("sans-serif", 12))
            .y_desc("change (%)")
            .y_label_formatter(&|y| format!("{y:+.0}%"))
            .disable_x_mesh()
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                vec![(-0.5, 0.0), (rows.len() as f64 - 0.5, 0.0)],
                BLACK.mix(0.5),
            ))
            .map_err(err)?;
        for (i, (r, c)) in rows.iter().enumerate() {
            let x = i as f64;
            let col = verdict_color(r.verdict);
            if let Some(iv) = c.interval {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, 100.0 * iv.lower), (x, 100.0 * iv.upper)],
                        col.stroke_width(3),
                    )))
                    .map_err(err)?;
            }
            chart
                .draw_series(std::iter::once(Circle::new(
                    (x, 100.0 * c.relative),
                    6,
                    col.filled(),
                )))
                .map_err(err)?;
        }
        Ok(())
    }
}
