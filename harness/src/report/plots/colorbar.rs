//! The speedup colour scale: red below 1 (speculation loses), white at 1,
//! green above; log scale, saturated at 0.5x and 2x; and the colour bar
//! that shows it beside the heatmap.

use super::err;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The speedup at which the scale saturates (and its inverse below 1).
pub const SATURATES: f64 = 2.0;

/// The colour of speedup `s`.
pub fn shade(s: f64) -> RGBColor {
    let t = (s.max(1e-6).ln().abs() / SATURATES.ln()).min(1.0);
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t) as u8;
    if s < 1.0 {
        RGBColor(255, mix(255, 90), mix(255, 80))
    } else {
        RGBColor(mix(255, 60), mix(255, 170), mix(255, 90))
    }
}

/// Width of the colour bar's column.
pub const WIDTH: u32 = 170;

/// The bar's caption, drawn above it.
pub const CAPTION: &str = "speedup (log scale)";

/// Draws the colour bar, 2x at the top to 0.5x at the bottom, with its
/// ticks, in the `area` column.
pub fn draw<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let (_, h) = area.dim_in_pixel();
    let (x0, x1) = (14, 40);
    let (top, bottom) = (50, (h as i32 - 40).clamp(120, 480));
    let left =
        TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    area.draw_text(CAPTION, &left, (8, 24)).map_err(err)?;
    let ln = SATURATES.ln();
    let y_of = |s: f64| {
        let u = (s.ln() + ln) / (2.0 * ln);
        bottom - ((bottom - top) as f64 * u).round() as i32
    };
    for y in top..bottom {
        let u = (bottom - y) as f64 / (bottom - top) as f64;
        let s = (u * 2.0 * ln - ln).exp();
        area.draw(&Rectangle::new([(x0, y), (x1, y + 1)], shade(s).filled()))
            .map_err(err)?;
    }
    area.draw(&Rectangle::new(
        [(x0, top), (x1, bottom)],
        BLACK.stroke_width(1),
    ))
    .map_err(err)?;
    let ticks = [
        (SATURATES, format!("{SATURATES}x or more")),
        (SATURATES.sqrt(), format!("{:.2}x", SATURATES.sqrt())),
        (1.0, "1x (no change)".to_string()),
        (
            1.0 / SATURATES.sqrt(),
            format!("{:.2}x", 1.0 / SATURATES.sqrt()),
        ),
        (1.0 / SATURATES, format!("{}x or less", 1.0 / SATURATES)),
    ];
    for (s, label) in ticks {
        let y = y_of(s);
        area.draw(&PathElement::new(
            vec![(x1, y), (x1 + 6, y)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
        area.draw_text(&label, &left, (x1 + 10, y)).map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_is_red_below_one_white_at_one_green_above_and_saturates() {
        assert_eq!(shade(1.0), RGBColor(255, 255, 255));
        assert_eq!(shade(0.5), shade(0.1));
        assert_eq!(shade(2.0), shade(9.0));
        let (r, g) = (shade(0.7), shade(1.4));
        assert!(r.0 > r.1 && g.1 > g.0);
    }
}
