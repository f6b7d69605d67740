//! Where a decode step's time goes: stacked bars of microseconds per step by
//! span, one bar per row, with the break-even line marked on speculative
//! bars: a speculative step may cost at most tau x the baseline step, the
//! cost at which tau = break-even tau.

use super::{category, color, err, legend, upper, Chart};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use specula_engine::timing::Span;

/// The spans stacked, bottom to top: every span of a decode step, in step
/// order (all but the target's and the drafter's prefill).
pub const SPANS: [Span; 6] = {
    let [prefill, draft_prefill, draft, tree_build, verify, accept, kv_commit, sample] = Span::ALL;
    assert!(
        matches!(prefill, Span::Prefill) && matches!(draft_prefill, Span::DraftPrefill),
        "the prefills come first"
    );
    [draft, tree_build, verify, accept, kv_commit, sample]
};

/// One bar.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Label on the axis.
    pub label: String,
    /// Microseconds per decode step, per span of [`SPANS`].
    pub us: [f64; 6],
    /// Measured tau and break-even tau (speculative rows).
    pub tau: Option<(f64, f64)>,
    /// The baseline's step, microseconds.
    pub baseline_step: Option<f64>,
}

/// The breakdown plot of one baseline group.
pub struct Kernels {
    /// One bar per row of the group.
    pub bars: Vec<Bar>,
    /// Which group: model pair, batch size, prompt set, temperature, repeat.
    pub scope: String,
}

impl Chart for Kernels {
    fn name(&self) -> &'static str {
        "kernels"
    }

    fn title(&self) -> String {
        format!(
            "Time per decode step by span (microseconds) — {}; black tick: tau x the baseline's step, a bar above its tick is a net loss (tau below break-even tau)",
            self.scope
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let labels: Vec<String> = self.bars.iter().map(|b| b.label.clone()).collect();
        let ymax = self
            .bars
            .iter()
            .map(|b| {
                let line = b.tau.zip(b.baseline_step).map_or(0.0, |((t, _), s)| t * s);
                b.us.iter().sum::<f64>().max(line)
            })
            .fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(
                -0.5f64..(labels.len() as f64 - 0.5),
                0.0..upper(ymax * 1.1, 1.0),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(labels.len() * 2 + 1)
            .x_label_formatter(&category(&labels))
            .x_desc("draft config")
            .y_desc("microseconds per decode step")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .disable_x_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        for (si, span) in SPANS.iter().enumerate() {
            let c = color(si);
            chart
                .draw_series(self.bars.iter().enumerate().map(|(i, b)| {
                    let y0: f64 = b.us[..si].iter().sum();
                    let x = i as f64;
                    Rectangle::new([(x - 0.3, y0), (x + 0.3, y0 + b.us[si])], c.filled())
                }))
                .map_err(err)?
                .label(span.name())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        for (i, b) in self.bars.iter().enumerate() {
            let x = i as f64;
            let top: f64 = b.us.iter().sum();
            if let (Some((tau, be)), Some(base)) = (b.tau, b.baseline_step) {
                let line = tau * base;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x - 0.4, line), (x + 0.4, line)],
                        BLACK.stroke_width(3),
                    )))
                    .map_err(err)?;
                let above = TextStyle::from(("sans-serif", 13).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Bottom));
                let y = top.max(line) + ymax * 0.02;
                for (i, text) in [format!("break-even {be:.2}"), format!("tau {tau:.2}")]
                    .into_iter()
                    .enumerate()
                {
                    let at = (x, y + i as f64 * ymax * 0.05);
                    chart
                        .draw_series([Text::new(text, at, above.clone())])
                        .map_err(err)?;
                }
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
