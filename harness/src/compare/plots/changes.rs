//! The change from A to B of each matched row's headline measure (speedup
//! for speculative rows, decode throughput for baselines), a line per row:
//! the change as a marker (its shape names the measure), its bootstrap
//! interval as a bar, the noise threshold as a grey band around 0.

use super::{band_color, legend, pct, verdict_color, verdict_keys, Key, LEGEND};
use crate::compare::matching::{Change, RowChange};
use crate::compare::Settings;
use crate::report::plots::{category, err, Chart, SIZE};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The headline change per row with its interval.
pub struct Changes<'a> {
    /// The matched row groups.
    pub rows: &'a [RowChange],
    /// The noise threshold and bootstrap settings of the comparison.
    pub settings: &'a Settings,
}

/// Height of one row of the plot.
const ROW: u32 = 24;

impl Changes<'_> {
    fn lines(&self) -> Vec<(&RowChange, &Change)> {
        self.rows
            .iter()
            .filter_map(|r| Some((r, r.headline()?)))
            .collect()
    }
}

impl Chart for Changes<'_> {
    fn name(&self) -> &'static str {
        "changes"
    }

    fn title(&self) -> String {
        format!(
            "Change from A to B, mean(B) / mean(A) - 1, of each matched row's headline measure: speedup for speculative rows (dot), decode throughput for baselines (square); bar: the {:.0}% bootstrap interval where both runs have repeats; grey band: the ±{}% noise threshold",
            100.0 * (1.0 - self.settings.bootstrap.alpha),
            pct(self.settings.noise)
        )
    }

    fn size(&self) -> (u32, u32) {
        (SIZE.0 + 100, 100 + ROW * self.lines().len().max(6) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (w, _) = area.dim_in_pixel();
        let (body, side) = area.split_horizontally(w - LEGEND);
        let lines = self.lines();
        let n = lines.len();
        // The first row at the top.
        let labels: Vec<String> = lines.iter().rev().map(|(r, _)| r.label.clone()).collect();
        let font = ("sans-serif", 12).into_font();
        let label_w = labels
            .iter()
            .map(|l| font.box_size(l).map_or(7 * l.len() as u32, |b| b.0))
            .max()
            .unwrap_or(60)
            + 16;
        let span = lines
            .iter()
            .map(|(_, c)| {
                let i = c.interval.map_or(0.0, |i| i.lower.abs().max(i.upper.abs()));
                i.max(c.relative.abs())
            })
            .fold(self.settings.noise * 1.5, f64::max)
            .max(0.05)
            * 110.0;
        let mut chart = ChartBuilder::on(&body)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(label_w)
            .build_cartesian_2d(-span..span, -0.5f64..(n as f64 - 0.5))
            .map_err(err)?;
        chart
            .configure_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&category(&labels))
            .y_label_style(("sans-serif", 12))
            .x_label_style(("sans-serif", 14))
            .x_desc("change of speedup (dot) or decode throughput (square), %")
            .x_label_formatter(&|x| format!("{x:+.0}%"))
            .disable_y_mesh()
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        let band = 100.0 * self.settings.noise;
        chart
            .draw_series([Rectangle::new(
                [(-band, -0.5), (band, n as f64 - 0.5)],
                band_color().filled(),
            )])
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, -0.5), (0.0, n as f64 - 0.5)],
                BLACK.mix(0.5),
            ))
            .map_err(err)?;
        for (i, (r, c)) in lines.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let col = verdict_color(r.verdict);
            if let Some(iv) = c.interval {
                chart
                    .draw_series([PathElement::new(
                        vec![(100.0 * iv.lower, y), (100.0 * iv.upper, y)],
                        col.stroke_width(3),
                    )])
                    .map_err(err)?;
            }
            let at = (100.0 * c.relative, y);
            let done = if c.measure == "speedup" {
                chart.draw_series([Circle::new(at, 6, col.filled())])
            } else {
                chart.draw_series([
                    EmptyElement::at(at) + Rectangle::new([(-5, -5), (5, 5)], col.filled())
                ])
            };
            done.map_err(err)?;
        }
        let grey = RGBColor(90, 90, 90);
        let mut keys = vec![
            (Key::Dot(grey), "speedup (speculative row)".into()),
            (Key::Square(grey), "throughput (baseline)".into()),
            (Key::Text, String::new()),
        ];
        keys.extend(verdict_keys(
            self.settings.noise,
            self.settings.bootstrap.alpha,
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
    fn the_changes_plot_names_each_measure_and_draws_the_noise_band() {
        let (rows, s) = (rows(), settings());
        let chart = Changes {
            rows: &rows,
            settings: &s,
        };
        let svg = svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains(
            "speedup for speculative rows (dot), decode throughput for baselines (square)"
        ));
        assert!(text.contains("change of speedup (dot) or decode throughput (square), %"));
        assert!(text.contains("±5% noise threshold") && text.contains("noise band: ±5%"));
        assert!(text.contains("95% bootstrap interval"));
        for r in &rows {
            assert!(text.contains(&r.label), "row {} is named", r.label);
        }
        assert!(svg.contains("fill=\"#787878\""), "the band's fill");
    }
}
