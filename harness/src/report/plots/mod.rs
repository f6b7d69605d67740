//! The report's plots, each a [`Chart`] drawn once per backend: SVG (inline
//! in report.html) and PNG (beside report.md). PNG text is drawn with DejaVu
//! Sans, built into the binary (Bitstream Vera licence, see
//! `harness/assets/fonts/`), so no system fonts are needed.

pub mod colorbar;
pub mod heatmap;
pub mod histogram;
pub mod kernels;
pub mod panels;
pub mod positions;
pub mod style;
#[cfg(test)]
pub mod svg_text;
pub mod tau_spread;
#[cfg(test)]
pub mod test_rows;
pub mod throughput;

use crate::doc::Figure;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::Once;

/// Pixel size of a plot of one panel, below its title.
pub const SIZE: (u32, u32) = (900, 480);

pub use style::color;

/// The legend every single-panel plot draws: at `position`, on a translucent white box.
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
    /// Title, drawn above the plot and used as its caption: what it shows
    /// and over which rows (what is split, what is pooled).
    fn title(&self) -> String;
    /// Pixel size of the plot below its title.
    fn size(&self) -> (u32, u32) {
        SIZE
    }
    /// Draws the plot on `area` (already white).
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Font size of titles.
const TITLE_FONT: f64 = 18.0;
/// Height of a title line.
const TITLE_LINE: u32 = 24;

/// `text` cut at spaces into lines at most `width` pixels wide in the title font.
fn wrap(text: &str, width: u32) -> Vec<String> {
    let font = ("sans-serif", TITLE_FONT).into_font();
    let fits = |s: &str| font.box_size(s).map_or(s.len() as u32 * 10, |b| b.0) <= width;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if fits(&candidate) || line.is_empty() {
            line = candidate;
        } else {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        }
    }
    lines.push(line);
    lines
}

/// The figure's full size and its title lines.
fn layout<C: Chart>(chart: &C) -> ((u32, u32), Vec<String>) {
    let (w, h) = chart.size();
    let lines = wrap(&chart.title(), w - 30);
    let title_h = 12 + lines.len() as u32 * TITLE_LINE;
    ((w, h + title_h), lines)
}

/// Draws the title lines, then the chart below them.
fn draw_figure<DB: DrawingBackend, C: Chart>(
    root: &DrawingArea<DB, Shift>,
    chart: &C,
    lines: &[String],
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let style = TextStyle::from(("sans-serif", TITLE_FONT).into_font())
        .pos(Pos::new(HPos::Left, VPos::Top));
    for (i, l) in lines.iter().enumerate() {
        root.draw_text(l, &style, (15, 8 + (i as u32 * TITLE_LINE) as i32))
            .map_err(err)?;
    }
    let (_, body) = root.split_vertically(12 + lines.len() as u32 * TITLE_LINE);
    chart.draw(&body)?;
    root.present().map_err(err)
}

/// `chart` as SVG text.
pub fn svg<C: Chart>(chart: &C) -> Result<String, String> {
    register_font();
    let (size, lines) = layout(chart);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_figure(&root, chart, &lines)?;
    }
    Ok(svg)
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
    let svg = svg(chart).map_err(fail)?;
    let png = dir.join(format!("{}.png", chart.name()));
    {
        let (size, lines) = layout(chart);
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw_figure(&root, chart, &lines).map_err(fail)?;
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
