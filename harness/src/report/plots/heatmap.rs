//! Mean speedup over the same-run baseline on a grid of draft depth (steps)
//! x branching (topk), a panel per model pair, batch size and temperature,
//! with a colour bar: red below 1 (speculation loses), green above. Configs
//! that share a cell (other draft token counts or aux layers) split it
//! into strips, each named.

use super::colorbar::{self, shade};
use super::panels::{self, Scope};
use super::{category, err, Chart};
use crate::report::data::{mean_by, RowView};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The heatmap of these speculative rows (those with a speedup).
pub struct Heatmap<'a>(pub &'a [&'a RowView]);

/// One config's mean speedup in one panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Draft depth.
    pub steps: usize,
    /// Branching.
    pub topk: usize,
    /// The config's label.
    pub config: String,
    /// Mean speedup over repeats and prompt sets.
    pub speedup: f64,
}

impl Heatmap<'_> {
    fn rows(&self) -> Vec<&RowView> {
        self.0
            .iter()
            .copied()
            .filter(|r| r.speedup.is_some())
            .collect()
    }

    fn scopes(&self) -> Vec<Scope> {
        panels::scopes(&self.rows(), true)
    }

    /// The cells of one panel, in order of appearance.
    pub fn cells(&self, scope: &Scope) -> Vec<Cell> {
        let rows: Vec<&RowView> = self.rows().into_iter().filter(|r| scope.holds(r)).collect();
        mean_by(
            &rows,
            |r| (r.steps, r.topk, r.config.clone()),
            |r| r.speedup,
        )
        .into_iter()
        .map(|((steps, topk, config), speedup, ..)| Cell {
            steps,
            topk,
            config,
            speedup,
        })
        .collect()
    }
}

impl Chart for Heatmap<'_> {
    fn name(&self) -> &'static str {
        "speedup_heatmap"
    }

    fn title(&self) -> String {
        format!(
            "Wall-clock speedup over the same-run baseline by steps x topk — {}; mean over repeats and prompt sets; red below 1x is a net loss",
            panels::describe(&self.scopes())
        )
    }

    fn size(&self) -> (u32, u32) {
        panels::size(&self.scopes(), colorbar::WIDTH)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let rows = self.rows();
        let scopes = self.scopes();
        let mut steps: Vec<usize> = rows.iter().map(|r| r.steps).collect();
        let mut topks: Vec<usize> = rows.iter().map(|r| r.topk).collect();
        steps.sort_unstable();
        steps.dedup();
        topks.sort_unstable();
        topks.dedup();
        let xl: Vec<String> = topks.iter().map(|k| format!("topk {k}")).collect();
        let yl: Vec<String> = steps.iter().map(|s| format!("steps {s}")).collect();
        let (cells, side) = panels::split(area, &scopes, colorbar::WIDTH)?;
        let centre = |size: u32| {
            TextStyle::from(("sans-serif", size).into_font())
                .pos(Pos::new(HPos::Center, VPos::Center))
        };
        for (scope, cell) in scopes.iter().zip(&cells) {
            let mut chart = ChartBuilder::on(cell)
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(70)
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
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(err)?;
            let mine = self.cells(scope);
            for (y, s) in steps.iter().enumerate() {
                for (x, k) in topks.iter().enumerate() {
                    let here: Vec<&Cell> = mine
                        .iter()
                        .filter(|c| c.steps == *s && c.topk == *k)
                        .collect();
                    let (x, y) = (x as f64, y as f64);
                    if here.is_empty() {
                        chart
                            .draw_series([Rectangle::new(
                                [(x - 0.48, y - 0.48), (x + 0.48, y + 0.48)],
                                RGBColor(235, 235, 235).filled(),
                            )])
                            .map_err(err)?;
                        let grey = centre(14).color(&RGBColor(120, 120, 120));
                        chart
                            .draw_series([Text::new("not run", (x, y), grey)])
                            .map_err(err)?;
                        continue;
                    }
                    let h = 0.96 / here.len() as f64;
                    for (i, c) in here.iter().enumerate() {
                        let y0 = y + 0.48 - (i + 1) as f64 * h;
                        chart
                            .draw_series([Rectangle::new(
                                [(x - 0.48, y0), (x + 0.48, y0 + h)],
                                shade(c.speedup).filled(),
                            )])
                            .map_err(err)?;
                        let text = format!("{}  {:.2}x", c.config, c.speedup);
                        let size = if here.len() == 1 { 16 } else { 13 };
                        chart
                            .draw_series([Text::new(text, (x, y0 + h / 2.0), centre(size))])
                            .map_err(err)?;
                    }
                }
            }
        }
        colorbar::draw(&side)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::test_rows::rows;

    #[test]
    fn the_heatmap_has_a_panel_per_batch_and_temperature_and_a_colour_bar() {
        let views = rows(&["a", "b"], 6, &[1, 4], &[0.0, 0.7], &["builtin"]);
        let spec: Vec<&RowView> = views.iter().filter(|r| r.steps > 0).collect();
        let chart = Heatmap(&spec);
        assert_eq!(chart.scopes().len(), 8);
        let svg = super::super::svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains("Wall-clock speedup over the same-run baseline by steps x topk"));
        assert!(text.contains("a panel per model pair x batch size x temperature"));
        assert!(
            text.contains("b, batch 4, T=0.7"),
            "panel headings name the split"
        );
        assert!(text.contains(colorbar::CAPTION), "the colour bar's caption");
        for tick in ["2x or more", "1x (no change)", "0.5x or less"] {
            assert!(text.contains(tick), "colour bar tick {tick}");
        }
        let one = chart.cells(&chart.scopes()[0]);
        assert!(one.iter().all(|c| c.speedup > 0.0));
    }

    #[test]
    fn configs_that_share_a_cell_are_each_shown_not_averaged() {
        let views = rows(&["m"], 6, &[1], &[0.0], &["builtin"]);
        let spec: Vec<&RowView> = views.iter().filter(|r| r.steps > 0).collect();
        // A second config at the steps and topk of the first (another draft
        // token count), much faster.
        let mut twin = (*spec[0]).clone();
        twin.config = "s2k1n9".into();
        twin.speedup = Some(3.0);
        let mut all = spec.clone();
        all.push(&twin);
        let chart = Heatmap(&all);
        let cells = chart.cells(&chart.scopes()[0]);
        let shared: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.steps == spec[0].steps && c.topk == spec[0].topk)
            .collect();
        assert_eq!(shared.len(), 2);
        let svg = super::super::svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains("s2k1n9  3.00x"));
    }
}
