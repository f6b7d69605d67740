//! Per-position acceptance a_k against depth k, a curve per draft config, a
//! panel per model pair and temperature; each curve the mean over batch
//! sizes, prompt sets and repeats.

use super::panels::{self, Scope};
use super::style::{self, SeriesStyle};
use super::{err, Chart};
use crate::report::data::RowView;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::HashMap;

/// The acceptance curves of these rows, from a_k by row key.
pub struct Positions<'a> {
    /// Speculative rows that are results.
    pub rows: &'a [&'a RowView],
    /// a_1..a_steps by row key (positions.csv).
    pub positions: &'a HashMap<String, Vec<f64>>,
}

/// One curve: a config in one panel.
#[derive(Debug, Clone)]
pub struct Curve {
    /// The panel.
    pub scope: Scope,
    /// The config.
    pub config: String,
    /// Mean a_k, k = 1..
    pub a: Vec<f64>,
}

impl Positions<'_> {
    fn with_positions(&self) -> Vec<&RowView> {
        let has = |r: &&RowView| self.positions.get(&r.key).is_some_and(|a| !a.is_empty());
        self.rows.iter().copied().filter(has).collect()
    }

    fn scopes(&self) -> Vec<Scope> {
        panels::scopes(&self.with_positions(), false)
    }

    /// The mean curve per panel and config.
    pub fn curves(&self) -> Vec<Curve> {
        let mut out: Vec<(Curve, usize)> = Vec::new();
        for scope in self.scopes() {
            for r in self.with_positions().into_iter().filter(|r| scope.holds(r)) {
                let a = &self.positions[&r.key];
                match out
                    .iter_mut()
                    .find(|c| c.0.scope == scope && c.0.config == r.config)
                {
                    Some((c, n)) if c.a.len() == a.len() => {
                        c.a.iter_mut().zip(a).for_each(|(s, x)| *s += x);
                        *n += 1;
                    }
                    Some(_) => {}
                    None => out.push((
                        Curve {
                            scope: scope.clone(),
                            config: r.config.clone(),
                            a: a.clone(),
                        },
                        1,
                    )),
                }
            }
        }
        out.into_iter()
            .map(|(mut c, n)| {
                c.a.iter_mut().for_each(|x| *x /= n as f64);
                c
            })
            .collect()
    }

    /// The configs, each with its style (the same in every panel).
    pub fn series(&self) -> Vec<(String, SeriesStyle)> {
        style::styled(style::first_seen(
            self.with_positions().into_iter().map(|r| &r.config),
        ))
    }

    fn legend(&self) -> u32 {
        panels::series_legend_width(&self.series())
    }
}

impl Chart for Positions<'_> {
    fn name(&self) -> &'static str {
        "positions"
    }

    fn title(&self) -> String {
        format!(
            "Per-position acceptance a_k (share of verify steps whose accepted path reaches depth k) by draft config — {}; mean over batch sizes, prompt sets and repeats",
            panels::describe(&self.scopes())
        )
    }

    fn size(&self) -> (u32, u32) {
        panels::size(&self.scopes(), self.legend())
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let scopes = self.scopes();
        let series = self.series();
        let curves = self.curves();
        let kmax = curves.iter().map(|c| c.a.len()).max().unwrap_or(1).max(1);
        let (cells, side) = panels::split(area, &scopes, self.legend())?;
        for (scope, cell) in scopes.iter().zip(&cells) {
            let mut chart = ChartBuilder::on(cell)
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(55)
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
                .label_style(("sans-serif", 14))
                .axis_desc_style(("sans-serif", 15))
                .draw()
                .map_err(err)?;
            for (name, st) in &series {
                let Some(c) = curves
                    .iter()
                    .find(|c| &c.scope == scope && &c.config == name)
                else {
                    continue;
                };
                let pts =
                    c.a.iter()
                        .enumerate()
                        .map(|(k, v)| ((k + 1) as f64, *v))
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
    fn curves_are_split_by_temperature_and_pooled_over_batch_sizes_saying_so() {
        let views = rows(&["tiny-llama"], 10, &[1, 4], &[0.0, 0.7], &["builtin"]);
        let spec: Vec<&RowView> = views.iter().filter(|r| r.steps > 0).collect();
        let positions: HashMap<String, Vec<f64>> = spec
            .iter()
            .map(|r| {
                (
                    r.key.clone(),
                    vec![0.5 + r.temperature / 4.0 + r.batch as f64 / 100.0; r.steps],
                )
            })
            .collect();
        let chart = Positions {
            rows: &spec,
            positions: &positions,
        };
        let curves = chart.curves();
        assert_eq!(curves.len(), 20, "10 configs x 2 temperatures");
        let hot = curves.iter().find(|c| c.scope.temperature == 0.7).unwrap();
        assert!(
            (hot.a[0] - (0.5 + 0.175 + 0.025)).abs() < 1e-9,
            "the mean of batch 1 and 4"
        );
        let svg = super::super::svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains("a panel per temperature; mean over batch sizes"));
        let colors: Vec<RGBColor> = chart.series().iter().map(|s| s.1.color).collect();
        assert!((1..colors.len()).all(|i| !colors[..i].contains(&colors[i])));
    }
}
