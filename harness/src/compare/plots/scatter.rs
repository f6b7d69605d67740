//! Decode throughput of B against A per matched row group: the diagonal is
//! no change, the grey band around it the noise threshold, each point
//! coloured by its throughput verdict with its bootstrap interval (on B's
//! scale) where both runs have repeats.

use super::{band_color, legend, pct, verdict_color, verdict_keys, Key, LEGEND};
use crate::compare::matching::{Change, RowChange};
use crate::compare::Settings;
use crate::report::plots::{err, Chart, SIZE};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Throughput of B against A.
pub struct Scatter<'a> {
    /// The matched row groups.
    pub rows: &'a [RowChange],
    /// The noise threshold and bootstrap settings of the comparison.
    pub settings: &'a Settings,
}

impl Scatter<'_> {
    fn changes(&self) -> Vec<&Change> {
        self.rows
            .iter()
            .filter_map(|r| r.changes.iter().find(|c| c.measure == "throughput_tok_s"))
            .collect()
    }
}

impl Chart for Scatter<'_> {
    fn name(&self) -> &'static str {
        "throughput_a_vs_b"
    }

    fn title(&self) -> String {
        format!(
            "Decode throughput (throughput_tok_s, tokens/s) of B against A, a point per matched row group (mean over repeats); diagonal: no change; grey band: the ±{}% noise threshold; colour: the throughput verdict",
            pct(self.settings.noise)
        )
    }

    fn size(&self) -> (u32, u32) {
        (SIZE.0 + 60, SIZE.1 + 80)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (w, _) = area.dim_in_pixel();
        let (body, side) = area.split_horizontally(w - LEGEND);
        let changes = self.changes();
        let n = self.settings.noise.min(0.9);
        let ends = |c: &Change| match c.interval {
            Some(i) => [c.a * (1.0 + i.lower), c.a * (1.0 + i.upper)],
            None => [c.b, c.b],
        };
        let values = || {
            changes
                .iter()
                .flat_map(|c| [c.a, c.b].into_iter().chain(ends(c)))
        };
        let max = values().fold(1.0, f64::max) * 1.08;
        let min = (values().fold(f64::INFINITY, f64::min) * 0.92).clamp(0.0, max * 0.9);
        let mut chart = ChartBuilder::on(&body)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(min..max, min..max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("A: decode tokens / s")
            .y_desc("B: decode tokens / s")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        chart
            .draw_series([Polygon::new(
                vec![
                    (min, min * (1.0 + n)),
                    (min, min),
                    (min / (1.0 - n), min),
                    (max, max * (1.0 - n)),
                    (max, max),
                    (max / (1.0 + n), max),
                ],
                band_color().filled(),
            )])
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                vec![(min, min), (max, max)],
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(err)?;
        chart
            .draw_series(changes.iter().filter_map(|c| {
                let i = c.interval?;
                let y = |r: f64| c.a * (1.0 + r);
                Some(PathElement::new(
                    vec![(c.a, y(i.lower)), (c.a, y(i.upper))],
                    verdict_color(c.verdict).stroke_width(3),
                ))
            }))
            .map_err(err)?;
        chart
            .draw_series(
                changes
                    .iter()
                    .map(|c| Circle::new((c.a, c.b), 6, verdict_color(c.verdict).filled())),
            )
            .map_err(err)?;
        let mut keys = verdict_keys(n, self.settings.bootstrap.alpha);
        keys.push((
            Key::Line(RGBColor(128, 128, 128)),
            "no change (B = A)".into(),
        ));
        legend(&side, &keys)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rows::{rows, settings};
    use super::*;
    use crate::report::plots::svg;

    #[test]
    fn the_scatter_names_its_measure_and_draws_the_noise_band_and_intervals() {
        let (rows, s) = (rows(), settings());
        let chart = Scatter {
            rows: &rows,
            settings: &s,
        };
        let svg = svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains("Decode throughput (throughput_tok_s, tokens/s) of B against A"));
        assert!(text.contains("±5% noise threshold") && text.contains("noise band: ±5%"));
        assert!(text.contains("95% bootstrap interval"));
        assert!(text.contains("A: decode tokens / s") && text.contains("B: decode tokens / s"));
        assert!(svg.contains("<polygon"), "the band is drawn");
    }
}
