//! Where a decode step's time goes: stacked bars of microseconds per step by
//! span, one bar per row, with the break-even line marked on speculative
//! bars: a speculative step may cost at most tau x the baseline step, the
//! cost at which tau = break-even tau.

use super::{category, color, err, legend, upper, Chart};
use plotters::coord::Shift;
use plotters::prelude::*;
use specula_engine::timing::Span;

/// The spans stacked, bottom to top: every span of a decode step, in step
/// order (all but the prefill).
pub const SPANS: [Span; 6] = {
    let [prefill, draft, tree_build, verify, accept, kv_commit, sample] = Span::ALL;
    assert!(matches!(prefill, Span::Prefill), "the prefill comes first");
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

/// The breakdown plot.
pub struct Kernels(pub Vec<Bar>);

impl Chart for Kernels {
    fn name(&self) -> &'static str {
        "kernels"
    }

    fn title(&self) -> String {
        "Time per decode step by span (microseconds); the black tick is tau x baseline step: a bar above it is a net loss (tau < break-even tau)".into()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let labels: Vec<String> = self.0.iter().map(|b| b.label.clone()).collect();
        let ymax = self
            .0
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
            .x_desc("row")
            .y_desc("microseconds per decode step")
            .disable_x_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        for (si, span) in SPANS.iter().enumerate() {
            let c = color(si);
            chart
                .draw_series(self.0.iter().enumerate().map(|(i, b)| {
                    let y0: f64 = b.us[..si].iter().sum();
                    let x = i as f64;
                    Rectangle::new([(x - 0.3, y0), (x + 0.3, y0 + b.us[si])], c.filled())
                }))
                .map_err(err)?
                .label(span.name())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        for (i, b) in self.0.iter().enumerate() {
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
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("tau {tau:.2} / break-even {be:.2}"),
                        (x - 0.38, top.max(line) + ymax * 0.06),
                        ("sans-serif", 13).into_font(),
                    )))
                    .map_err(err)?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
