//! Decode throughput against batch size, a line per draft config (the
//! baseline black and dashed), a panel per model pair and temperature;
//! points are means over repeats and prompt sets.

use super::panels::{self, Scope};
use super::style::{self, SeriesStyle};
use super::{category, err, upper, Chart};
use crate::report::data::{mean_by, RowView};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The throughput plot.
pub struct Throughput<'a>(pub &'a [&'a RowView]);

impl Throughput<'_> {
    fn scopes(&self) -> Vec<Scope> {
        panels::scopes(self.0, false)
    }

    /// The draft configs, the baseline first, each with its style (the same
    /// in every panel).
    pub fn series(&self) -> Vec<(String, SeriesStyle)> {
        let mut names = style::first_seen(self.0.iter().map(|r| &r.config));
        names.sort_by_key(|n| !style::is_baseline(n));
        style::styled(names)
    }

    fn legend(&self) -> u32 {
        panels::series_legend_width(&self.series())
    }
}

impl Chart for Throughput<'_> {
    fn name(&self) -> &'static str {
        "throughput"
    }

    fn title(&self) -> String {
        format!(
            "Decode throughput (tokens/s) against batch size by draft config — {}; mean over repeats and prompt sets",
            panels::describe(&self.scopes())
        )
    }

    fn size(&self) -> (u32, u32) {
        panels::size(&self.scopes(), self.legend())
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let scopes = self.scopes();
        let series = self.series();
        let (cells, side) = panels::split(area, &scopes, self.legend())?;
        let mut batches: Vec<usize> = self.0.iter().map(|r| r.batch).collect();
        batches.sort_unstable();
        batches.dedup();
        let labels: Vec<String> = batches.iter().map(|b| b.to_string()).collect();
        let key = |r: &RowView| {
            (
                r.model.clone(),
                r.temperature.to_bits(),
                r.config.clone(),
                r.batch,
            )
        };
        let points = mean_by(self.0, key, |r| Some(r.throughput));
        let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max);
        for (scope, cell) in scopes.iter().zip(&cells) {
            let mut chart = ChartBuilder::on(cell)
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(-0.5f64..(batches.len() as f64 - 0.5), 0.0..upper(ymax, 1.0))
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_labels(batches.len() * 2 + 1)
                .x_label_formatter(&category(&labels))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .x_desc("batch size")
                .y_desc("tokens / s")
                .disable_x_mesh()
                .label_style(("sans-serif", 14))
                .axis_desc_style(("sans-serif", 15))
                .draw()
                .map_err(err)?;
            for (name, st) in &series {
                let pts: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|((m, t, c, _), ..)| {
                        *m == scope.model && *t == scope.temperature.to_bits() && c == name
                    })
                    .map(|((.., b), v, ..)| {
                        let x = batches.iter().position(|x| x == b).unwrap_or(0);
                        (x as f64, *v)
                    })
                    .collect();
                style::line(&mut chart, pts, *st)?;
            }
        }
        panels::legend_column(&side, "draft config", &series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::test_rows::rows;

    #[test]
    fn twelve_configs_get_twelve_colours_and_the_baseline_is_black_and_dashed() {
        let views = rows(&["tiny-llama"], 11, &[1, 4], &[0.0, 0.7], &["builtin"]);
        let refs: Vec<&RowView> = views.iter().collect();
        let chart = Throughput(&refs);
        let series = chart.series();
        assert_eq!(series.len(), 12);
        assert_eq!(series[0].0, "base");
        assert_eq!(series[0].1.color, RGBColor(0, 0, 0));
        assert!(series[0].1.dash.is_some());
        let svg = super::super::svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        let mut seen: Vec<String> = Vec::new();
        for (_, s) in &series {
            let hex = format!("#{:02X}{:02X}{:02X}", s.color.0, s.color.1, s.color.2);
            assert!(svg.contains(&hex), "{hex} is drawn");
            assert!(!seen.contains(&hex), "{hex} is used once");
            seen.push(hex);
        }
        assert!(text.contains("Decode throughput (tokens/s) against batch size"));
        assert!(
            text.contains("a panel per temperature"),
            "split by temperature"
        );
        assert!(
            crate::report::plots::svg_text::texts(&svg)
                .iter()
                .any(|t| t == "T=0.7")
                && crate::report::plots::svg_text::texts(&svg)
                    .iter()
                    .any(|t| t == "T=0"),
            "panel headings"
        );
    }
}
