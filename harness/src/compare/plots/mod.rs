//! A-vs-B plots, each naming its measure and drawing the noise band (the
//! relative change within `--noise-threshold` of none) and the bootstrap
//! intervals the comparison computed:
//!
//! - [`scatter`]: decode throughput of B against A per row group;
//! - [`changes`]: the change of each row's headline measure.

pub mod changes;
pub mod scatter;

use crate::report::plots::err;
use crate::stats::Verdict;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub use changes::Changes;
pub use scatter::Scatter;

/// The colour of a verdict.
pub fn verdict_color(v: Verdict) -> RGBColor {
    match v {
        Verdict::Improved => RGBColor(0, 158, 115),
        Verdict::Regressed => RGBColor(213, 94, 0),
        Verdict::WithinNoise => RGBColor(90, 90, 90),
    }
}

/// The fill of the noise band.
pub fn band_color() -> RGBAColor {
    RGBColor(120, 120, 120).mix(0.18)
}

/// Width of the legend column.
pub const LEGEND: u32 = 220;

/// One legend line.
pub enum Key {
    /// A dot in this colour.
    Dot(RGBColor),
    /// A square in this colour.
    Square(RGBColor),
    /// A line in this colour.
    Line(RGBColor),
    /// A filled patch (the noise band).
    Band,
    /// A text line without a sample.
    Text,
}

/// Draws `entries` down the `area` column.
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(Key, String)],
) -> Result<(), String> {
    let text =
        TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 24;
    for (key, label) in entries {
        match key {
            Key::Dot(c) => area.draw(&Circle::new((20, y), 5, c.filled())),
            Key::Square(c) => area.draw(&Rectangle::new([(15, y - 5), (25, y + 5)], c.filled())),
            Key::Line(c) => area.draw(&PathElement::new(vec![(8, y), (32, y)], c.stroke_width(3))),
            Key::Band => area.draw(&Rectangle::new(
                [(8, y - 7), (32, y + 7)],
                band_color().filled(),
            )),
            Key::Text => Ok(()),
        }
        .map_err(err)?;
        let x = if matches!(key, Key::Text) { 8 } else { 40 };
        area.draw_text(label, &text, (x, y)).map_err(err)?;
        y += 24;
    }
    Ok(())
}

/// The legend lines of the verdicts, the band and the intervals.
pub fn verdict_keys(noise: f64, alpha: f64) -> Vec<(Key, String)> {
    vec![
        (
            Key::Dot(verdict_color(Verdict::Improved)),
            "improved".into(),
        ),
        (
            Key::Dot(verdict_color(Verdict::Regressed)),
            "regressed".into(),
        ),
        (
            Key::Dot(verdict_color(Verdict::WithinNoise)),
            "within noise".into(),
        ),
        (Key::Band, format!("noise band: ±{}%", pct(noise))),
        (
            Key::Line(RGBColor(90, 90, 90)),
            format!("{:.0}% bootstrap interval", 100.0 * (1.0 - alpha)),
        ),
    ]
}

/// `x` (a fraction) in percent, without needless decimals.
pub fn pct(x: f64) -> String {
    let p = 100.0 * x;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

#[cfg(test)]
mod test_rows;
