//! How series are told apart: every series of a plot gets its own colour
//! (the Okabe-Ito colour-blind-safe set, then Paul Tol's muted set, then
//! generated hues), a marker shape that changes from one series to the next,
//! and a dash pattern past the first eight; the baseline is always black and
//! dashed with a hollow square.

use super::err;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Series colours in the order they are handed out; neither black nor grey,
/// which belong to baselines.
pub const PALETTE: [RGBColor; 15] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(51, 34, 136),
    RGBColor(136, 34, 85),
    RGBColor(153, 153, 51),
    RGBColor(68, 170, 153),
    RGBColor(204, 102, 119),
    RGBColor(17, 119, 51),
    RGBColor(170, 68, 153),
    RGBColor(221, 204, 119),
    RGBColor(240, 228, 66),
];

/// Colours of baselines: black, then greys (a plot rarely has two).
const BASELINES: [RGBColor; 3] = [
    RGBColor(0, 0, 0),
    RGBColor(115, 115, 115),
    RGBColor(170, 170, 170),
];

/// A point marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A filled square.
    Square,
    /// A filled triangle.
    Triangle,
    /// A filled diamond.
    Diamond,
    /// A hollow square (baselines).
    HollowSquare,
}

const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
];

/// How one series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesStyle {
    /// Line and marker colour.
    pub color: RGBColor,
    /// Dash and gap length in pixels; `None` for a solid line.
    pub dash: Option<(u32, u32)>,
    /// The marker at each point.
    pub marker: Marker,
}

/// The colour of series `i` of a chart that is not a line plot (bars, spans).
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The `i`th generated colour past the palette: hues a golden angle apart,
/// at three lightness levels.
fn generated(i: usize) -> RGBColor {
    let h = (i as f64 * 137.508) % 360.0;
    let l = [0.42, 0.30, 0.55][i % 3];
    let c = (1.0 - (2.0 * l - 1.0f64).abs()) * 0.75;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let v = |u: f64| ((u + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(v(r), v(g), v(b))
}

/// Styles for `n` series of which those where `baseline(i)` holds are
/// baselines: no two share a colour.
pub fn assign(n: usize, baseline: impl Fn(usize) -> bool) -> Vec<SeriesStyle> {
    let mut used: Vec<RGBColor> = Vec::new();
    let (mut next, mut extra, mut bases) = (0usize, 0usize, 0usize);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if baseline(i) {
            let color = BASELINES
                .get(bases)
                .copied()
                .unwrap_or_else(|| RGBColor(200, 200, 200 - bases.min(150) as u8));
            bases += 1;
            used.push(color);
            out.push(SeriesStyle {
                color,
                dash: Some((8, 5)),
                marker: Marker::HollowSquare,
            });
            continue;
        }
        let mut color = PALETTE.get(next).copied();
        while color.is_none_or(|c| used.contains(&c)) {
            color = Some(generated(extra));
            extra += 1;
        }
        let color = color.unwrap_or(PALETTE[0]);
        used.push(color);
        out.push(SeriesStyle {
            color,
            dash: (next >= 8).then_some((3, 3)),
            marker: MARKERS[next % MARKERS.len()],
        });
        next += 1;
    }
    out
}

/// Styles for series named `names`; a name that is `base` or ends in
/// ` base` is a baseline.
pub fn for_names(names: &[String]) -> Vec<SeriesStyle> {
    assign(names.len(), |i| is_baseline(&names[i]))
}

/// `names` with their styles ([`for_names`]), in the order given.
pub fn styled(names: Vec<String>) -> Vec<(String, SeriesStyle)> {
    let styles = for_names(&names);
    names.into_iter().zip(styles).collect()
}

/// The distinct `names`, in the order they first appear.
pub fn first_seen<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Whether a series name is a baseline's.
pub fn is_baseline(name: &str) -> bool {
    name == "base" || name.ends_with(" base") || name.starts_with("base ")
}

/// Draws `style`'s marker at `p` on a chart.
pub fn markers<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    pts: &[(f64, f64)],
    style: SeriesStyle,
) -> Result<(), String> {
    let area = chart.plotting_area();
    for p in pts {
        marker_at(area, area.map_coordinate(p), style)?;
    }
    Ok(())
}

/// Draws `style`'s marker centred at pixel `at` of `area` (in its own pixels
/// when the area is a chart's plotting area).
pub fn marker_at<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    at: (i32, i32),
    style: SeriesStyle,
) -> Result<(), String> {
    let (x0, y0) = area.get_base_pixel();
    let root = area.strip_coord_spec();
    let (x, y) = (at.0 - x0, at.1 - y0);
    let c = style.color;
    match style.marker {
        Marker::Circle => root.draw(&Circle::new((x, y), 5, c.filled())),
        Marker::Square => root.draw(&Rectangle::new(
            [(x - 4, y - 4), (x + 4, y + 4)],
            c.filled(),
        )),
        Marker::Triangle => root.draw(&TriangleMarker::new((x, y), 6, c.filled())),
        Marker::Diamond => root.draw(&Polygon::new(
            vec![(x, y - 6), (x + 6, y), (x, y + 6), (x - 6, y)],
            c.filled(),
        )),
        Marker::HollowSquare => root.draw(&Rectangle::new(
            [(x - 4, y - 4), (x + 4, y + 4)],
            c.stroke_width(2),
        )),
    }
    .map_err(err)
}

/// Draws `pts` as a line in `style` with its marker at each point.
pub fn line<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    pts: Vec<(f64, f64)>,
    style: SeriesStyle,
) -> Result<(), String> {
    let stroke = style.color.stroke_width(2);
    match style.dash {
        Some((d, g)) => chart
            .draw_series(DashedLineSeries::new(pts.clone(), d, g, stroke))
            .map(|_| ()),
        None => chart
            .draw_series(LineSeries::new(pts.clone(), stroke))
            .map(|_| ()),
    }
    .map_err(err)?;
    markers(chart, &pts, style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_series_share_a_colour_and_baselines_are_black_or_grey_and_dashed() {
        for n in [1, 8, 10, 16, 40, 120] {
            let styles = assign(n, |i| i == 0 || i == 7);
            let mut colors: Vec<RGBColor> = styles.iter().map(|s| s.color).collect();
            colors.sort_by_key(|c| (c.0, c.1, c.2));
            colors.dedup();
            assert_eq!(colors.len(), n, "{n} series, {} colours", colors.len());
            if n > 7 {
                assert_eq!(styles[7].color, RGBColor(115, 115, 115));
            }
            assert_eq!(styles[0].color, RGBColor(0, 0, 0));
            assert!(styles[0].dash.is_some() && styles[0].marker == Marker::HollowSquare);
        }
    }

    #[test]
    fn the_baseline_and_the_eighth_config_differ_where_the_old_palette_repeated() {
        let names: Vec<String> = [
            "base",
            "s1k1n2",
            "s3k1n4",
            "s5k1n6",
            "s4k2n8",
            "a",
            "b",
            "c",
            "s5k1n6 T=0.7",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let styles = for_names(&names);
        assert_eq!(styles[0].color, RGBColor(0, 0, 0));
        assert!(styles[1..].iter().all(|s| s.color != styles[0].color));
        assert_ne!(styles[1].color, styles[8].color);
    }
}
