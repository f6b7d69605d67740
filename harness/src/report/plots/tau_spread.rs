//! tau per draft config, a panel per model pair, batch size and
//! temperature: the mean over repeats as a marker (a colour per prompt set),
//! the spread over repeats as a bar from min to max.

use super::panels::{self, Scope};
use super::style::{self, SeriesStyle};
use super::{category, err, upper, Chart};
use crate::report::data::{mean_by, RowView};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The tau plot (speculative rows that are results).
pub struct TauSpread<'a>(pub &'a [&'a RowView]);

impl TauSpread<'_> {
    fn scopes(&self) -> Vec<Scope> {
        panels::scopes(self.0, true)
    }

    /// The draft configs, in order of appearance.
    fn configs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.0 {
            if !out.contains(&r.config) {
                out.push(r.config.clone());
            }
        }
        out
    }

    /// The prompt sets, each with its style.
    pub fn series(&self) -> Vec<(String, SeriesStyle)> {
        let mut sets: Vec<String> = self.0.iter().map(|r| r.prompt_set.clone()).collect();
        sets.sort();
        sets.dedup();
        let styles = style::assign(sets.len(), |_| false);
        sets.into_iter().zip(styles).collect()
    }

    fn legend(&self) -> u32 {
        panels::series_legend_width(&self.series()).max(110)
    }
}

impl Chart for TauSpread<'_> {
    fn name(&self) -> &'static str {
        "tau"
    }

    fn title(&self) -> String {
        let mut repeats: Vec<usize> = self.0.iter().map(|r| r.repeat).collect();
        repeats.sort_unstable();
        repeats.dedup();
        let spread = match repeats.len() {
            0 | 1 => "one repeat, so no spread bar".to_string(),
            n => format!("bar: min to max over {n} repeats"),
        };
        format!(
            "Acceptance length tau (tokens per verify step) by draft config — {}; marker: mean over repeats (colour: prompt set), {spread}",
            panels::describe(&self.scopes())
        )
    }

    fn size(&self) -> (u32, u32) {
        panels::size(&self.scopes(), self.legend())
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let scopes = self.scopes();
        let configs = self.configs();
        let sets = self.series();
        let (cells, side) = panels::split(area, &scopes, self.legend())?;
        let key = |r: &RowView| {
            let t = r.temperature.to_bits();
            (
                r.model.clone(),
                r.batch,
                t,
                r.config.clone(),
                r.prompt_set.clone(),
            )
        };
        let stats = mean_by(self.0, key, |r| Some(r.tau));
        let xmax = stats.iter().map(|s| s.3).fold(1.0, f64::max);
        // The first config at the top.
        let row = |cfg: &str| {
            let i = configs.iter().position(|c| c == cfg).unwrap_or(0);
            (configs.len() - 1 - i) as f64
        };
        let labels: Vec<String> = configs.iter().rev().cloned().collect();
        let label_w = panels::legend_width(&labels).saturating_sub(40).max(60);
        let band = 0.6 / sets.len().max(1) as f64;
        for (scope, cell) in scopes.iter().zip(&cells) {
            let mut chart = ChartBuilder::on(cell)
                .margin(12)
                .margin_right(24)
                .x_label_area_size(40)
                .y_label_area_size(label_w)
                .build_cartesian_2d(
                    1.0f64..upper(xmax, 2.0),
                    -0.5f64..(configs.len() as f64 - 0.5),
                )
                .map_err(err)?;
            chart
                .configure_mesh()
                .y_labels(configs.len() * 2 + 1)
                .y_label_formatter(&category(&labels))
                .x_label_formatter(&|x| format!("{x:.1}"))
                .x_desc("tau (1 = no draft token accepted)")
                .disable_y_mesh()
                .label_style(("sans-serif", 14))
                .axis_desc_style(("sans-serif", 15))
                .draw()
                .map_err(err)?;
            for (si, (set, st)) in sets.iter().enumerate() {
                let offset = ((sets.len() as f64 - 1.0) / 2.0 - si as f64) * band;
                let mine: Vec<_> = stats
                    .iter()
                    .filter(|((m, b, t, _, p), ..)| {
                        *m == scope.model
                            && Some(*b) == scope.batch
                            && *t == scope.temperature.to_bits()
                            && p == set
                    })
                    .collect();
                chart
                    .draw_series(mine.iter().map(|((.., c, _), _, lo, hi)| {
                        let y = row(c) + offset;
                        PathElement::new(vec![(*lo, y), (*hi, y)], st.color.stroke_width(3))
                    }))
                    .map_err(err)?;
                let pts: Vec<(f64, f64)> = mine
                    .iter()
                    .map(|((.., c, _), m, ..)| (*m, row(c) + offset))
                    .collect();
                style::markers(&mut chart, &pts, *st)?;
                chart
                    .draw_series(mine.iter().map(|((.., c, _), m, _, hi)| {
                        Text::new(
                            format!("{m:.2}"),
                            (hi.max(*m) + xmax * 0.015, row(c) + offset + 0.12),
                            ("sans-serif", 13).into_font(),
                        )
                    }))
                    .map_err(err)?;
            }
        }
        panels::legend_column(&side, "prompt set", &sets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::test_rows::rows;

    #[test]
    fn tau_is_split_into_a_panel_per_batch_size_and_temperature_and_says_so() {
        let views = rows(
            &["tiny-llama"],
            4,
            &[1, 4],
            &[0.0, 0.7],
            &["builtin", "gsm8k"],
        );
        let spec: Vec<&RowView> = views.iter().filter(|r| r.steps > 0).collect();
        let chart = TauSpread(&spec);
        assert_eq!(chart.scopes().len(), 4);
        let svg = super::super::svg(&chart).unwrap();
        let text = crate::report::plots::svg_text::text(&svg);
        assert!(text.contains("Acceptance length tau"));
        assert!(text.contains("tiny-llama; a panel per batch size x temperature"));
        for heading in [
            "batch 1, T=0",
            "batch 1, T=0.7",
            "batch 4, T=0",
            "batch 4, T=0.7",
        ] {
            assert!(text.contains(heading), "a panel headed {heading}");
        }
        let one: Vec<&RowView> = spec
            .iter()
            .copied()
            .filter(|r| r.batch == 4 && r.temperature == 0.0)
            .collect();
        let title = TauSpread(&one).title();
        assert!(title.contains("— tiny-llama, batch 4, T=0;"), "{title}");
    }
}
