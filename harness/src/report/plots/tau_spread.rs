//! tau per draft config and prompt set: the mean as a dot, the spread over
//! repeats, batch sizes and temperatures as a bar from min to max.

use super::{category, color, err, legend, upper, Chart};
use crate::report::data::{mean_by, RowView};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The tau plot (speculative rows that are results).
pub struct TauSpread<'a>(pub &'a [&'a RowView]);

impl Chart for TauSpread<'_> {
    fn name(&self) -> &'static str {
        "tau"
    }

    fn title(&self) -> String {
        "Acceptance length tau per draft config and prompt set (dot: mean; bar: min to max over repeats, batch sizes, temperatures)".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let stats = mean_by(
            self.0,
            |r| (r.config.clone(), r.prompt_set.clone()),
            |r| Some(r.tau),
        );
        let mut configs: Vec<String> = stats.iter().map(|s| s.0 .0.clone()).collect();
        configs.dedup();
        let mut sets: Vec<String> = stats.iter().map(|s| s.0 .1.clone()).collect();
        sets.sort();
        sets.dedup();
        let ymax = stats.iter().map(|s| s.3).fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..(configs.len() as f64 - 0.5), 0.0..upper(ymax, 2.0))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(configs.len() * 2 + 1)
            .x_label_formatter(&category(&configs))
            .x_desc("draft config (steps s, topk k, draft tokens n)")
            .y_desc("tau (tokens per verify step)")
            .disable_x_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        let width = 0.6 / sets.len().max(1) as f64;
        for (si, set) in sets.iter().enumerate() {
            let c = color(si);
            let offset = (si as f64 - (sets.len() as f64 - 1.0) / 2.0) * width;
            let mine: Vec<_> = stats.iter().filter(|s| &s.0 .1 == set).collect();
            let at = |cfg: &str| configs.iter().position(|c| c == cfg).unwrap_or(0) as f64 + offset;
            chart
                .draw_series(mine.iter().map(|s| {
                    let x = at(&s.0 .0);
                    PathElement::new(vec![(x, s.2), (x, s.3)], c.stroke_width(3))
                }))
                .map_err(err)?;
            chart
                .draw_series(
                    mine.iter()
                        .map(|s| Circle::new((at(&s.0 .0), s.1), 6, c.filled())),
                )
                .map_err(err)?
                .label(set.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, c.filled()));
            chart
                .draw_series(mine.iter().map(|s| {
                    Text::new(
                        format!("{:.2}", s.1),
                        (at(&s.0 .0) + 0.04, s.1),
                        ("sans-serif", 14).into_font(),
                    )
                }))
                .map_err(err)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
