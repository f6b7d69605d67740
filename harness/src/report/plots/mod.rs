//! The report's plots, each a [`Chart`] drawn once per backend: SVG (inline
//! in report.html) and PNG (beside report.md). PNG text is drawn with DejaVu
//! Sans, built into the binary (Bitstream Vera licence, see
//! `harness/assets/fonts/`), so no system fonts are needed.

pub mod heatmap;
pub mod histogram;
pub mod kernels;
pub mod positions;
pub mod tau_spread;
pub mod throughput;

use crate::doc::Figure;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// Pixel size of every plot.
pub const SIZE: (u32, u32) = (900, 520);

/// Colours of successive series (colour-blind friendly).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(90, 90, 90),
];

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Draws `pts` as a line labelled `name` with a dot at each point, in `c`.
pub fn line_with_dots<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    pts: Vec<(f64, f64)>,
    name: String,
    c: RGBColor,
) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
        .map_err(err)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    chart
        .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
        .map_err(err)?;
    Ok(())
}

/// The legend every plot draws: at `position`, on a translucent white box.
pub fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(err)
}

/// A plotting failure, as text.
pub fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// One plot.
pub trait Chart {
    /// File stem (`throughput`, ...).
    fn name(&self) -> &'static str;
    /// Caption.
    fn title(&self) -> String;
    /// Draws the plot on `area` (already white).
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
        // The font is built in and known to parse; a failure would only lose PNG text.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, font);
    });
}

/// A plot that could not be drawn or written (the PNG is written as it is
/// drawn, so a full disk shows here too).
#[derive(Debug, thiserror::Error)]
#[error("plot {name}: {message}")]
pub struct PlotError {
    /// The plot's file stem.
    pub name: &'static str,
    /// What went wrong.
    pub message: String,
}

/// Draws `chart` as `dir/NAME.svg` and `dir/NAME.png`; the figure refers to
/// the PNG as `prefix/NAME.png`.
pub fn render<C: Chart>(chart: &C, dir: &Path, prefix: &str) -> Result<Figure, PlotError> {
    register_font();
    let fail = |message: String| PlotError {
        name: chart.name(),
        message,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err).map_err(fail)?;
        chart.draw(&root).map_err(fail)?;
        root.present().map_err(err).map_err(fail)?;
    }
    let png = dir.join(format!("{}.png", chart.name()));
    {
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err).map_err(fail)?;
        chart.draw(&root).map_err(fail)?;
        root.present().map_err(err).map_err(fail)?;
    }
    let svg_path = dir.join(format!("{}.svg", chart.name()));
    std::fs::write(&svg_path, &svg).map_err(|e| fail(format!("{}: {e}", svg_path.display())))?;
    Ok(Figure {
        title: chart.title(),
        svg,
        png: format!("{prefix}/{}.png", chart.name()),
    })
}

/// A label formatter for category axes drawn on `0..n` with one tick per category.
pub fn category<'a>(labels: &'a [String]) -> impl Fn(&f64) -> String + 'a {
    move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
            labels[i as usize].clone()
        } else {
            String::new()
        }
    }
}

/// `0..max` padded by 10% (at least `0..floor`).
pub fn upper(max: f64, floor: f64) -> f64 {
    (max * 1.1).max(floor)
}
