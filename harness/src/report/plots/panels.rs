//! Small multiples: a plot split into one panel per model pair, batch size
//! and temperature that the run holds, so nothing is averaged over them
//! unseen; and the legend column shared by a figure's panels.

use super::err;
use super::style::{marker_at, SeriesStyle};
use crate::report::data::RowView;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Pixel size of one panel.
pub const PANEL: (u32, u32) = (560, 380);

/// Height of a panel's heading.
const HEADING: u32 = 26;

/// The rows one panel shows: one model pair, one batch size (or all of
/// them, `None`) and one temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// The model pair.
    pub model: String,
    /// The batch size, or `None` when the panel pools batch sizes.
    pub batch: Option<usize>,
    /// The temperature.
    pub temperature: f64,
}

impl Scope {
    /// Whether `r` belongs to this panel.
    pub fn holds(&self, r: &RowView) -> bool {
        r.model == self.model
            && self.batch.is_none_or(|b| b == r.batch)
            && r.temperature == self.temperature
    }

    /// The panel's heading: the parts that differ between `all` panels.
    pub fn label(&self, all: &[Scope]) -> String {
        let mut parts = Vec::new();
        if all.iter().any(|s| s.model != self.model) {
            parts.push(self.model.clone());
        }
        if let Some(b) = self
            .batch
            .filter(|b| all.iter().any(|s| s.batch != Some(*b)))
        {
            parts.push(format!("batch {b}"));
        }
        if all.iter().any(|s| s.temperature != self.temperature) {
            parts.push(format!("T={}", self.temperature));
        }
        parts.join(", ")
    }
}

/// The panels of `rows`, model pairs in order of appearance, then batch
/// size (when `by_batch`) and temperature ascending.
pub fn scopes(rows: &[&RowView], by_batch: bool) -> Vec<Scope> {
    let mut models: Vec<&str> = Vec::new();
    for r in rows {
        if !models.contains(&r.model.as_str()) {
            models.push(&r.model);
        }
    }
    let mut out: Vec<Scope> = Vec::new();
    for r in rows {
        let s = Scope {
            model: r.model.clone(),
            batch: by_batch.then_some(r.batch),
            temperature: r.temperature,
        };
        if !out.contains(&s) {
            out.push(s);
        }
    }
    let rank = |s: &Scope| models.iter().position(|m| *m == s.model).unwrap_or(0);
    out.sort_by(|a, b| {
        (rank(a), a.batch)
            .cmp(&(rank(b), b.batch))
            .then(a.temperature.total_cmp(&b.temperature))
    });
    out
}

/// What the panels cover, for a title: what all of them share
/// (`tiny-llama, batch 4, T=0`) and what they are split by.
pub fn describe(all: &[Scope]) -> String {
    let first = &all[0];
    let same_model = all.iter().all(|s| s.model == first.model);
    let same_batch = all.iter().all(|s| s.batch == first.batch);
    let same_t = all.iter().all(|s| s.temperature == first.temperature);
    let mut shared = Vec::new();
    let mut split = Vec::new();
    match same_model {
        true => shared.push(first.model.clone()),
        false => split.push("model pair"),
    }
    match (first.batch, same_batch) {
        (Some(b), true) => shared.push(format!("batch {b}")),
        (Some(_), false) => split.push("batch size"),
        (None, _) => {}
    }
    match same_t {
        true => shared.push(format!("T={}", first.temperature)),
        false => split.push("temperature"),
    }
    let mut text = shared.join(", ");
    if !split.is_empty() {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!("a panel per {}", split.join(" x ")));
    }
    text
}

/// Columns and rows of the grid: a column per temperature (at most three),
/// or two columns when there is one temperature.
pub fn grid(all: &[Scope]) -> (usize, usize) {
    let mut temps: Vec<f64> = all.iter().map(|s| s.temperature).collect();
    temps.sort_by(f64::total_cmp);
    temps.dedup();
    let cols = match temps.len() {
        0 | 1 => 2,
        n => n.min(3),
    };
    let cols = cols.min(all.len().max(1));
    (cols, all.len().div_ceil(cols).max(1))
}

/// Size of a figure of these panels with a legend column `legend` wide; a
/// single panel gets the width of a plain plot.
pub fn size(all: &[Scope], legend: u32) -> (u32, u32) {
    let (cols, rows) = grid(all);
    if all.len() <= 1 {
        return ((640 + legend).max(super::SIZE.0), PANEL.1 + 60);
    }
    (
        cols as u32 * PANEL.0 + legend,
        rows as u32 * (PANEL.1 + HEADING),
    )
}

/// The panels' areas and the legend column.
pub type Split<DB> = (Vec<DrawingArea<DB, Shift>>, DrawingArea<DB, Shift>);

/// Splits `area` into the panels' areas (below each panel's heading, drawn
/// here) and the legend column on the right, `legend` wide.
pub fn split<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    all: &[Scope],
    legend: u32,
) -> Result<Split<DB>, String> {
    let (w, _) = area.dim_in_pixel();
    let (body, side) = area.split_horizontally(w.saturating_sub(legend));
    let (cols, rows) = grid(all);
    let cells = body.split_evenly((rows, cols));
    let mut out = Vec::new();
    for (scope, cell) in all.iter().zip(cells) {
        let label = scope.label(all);
        if label.is_empty() {
            out.push(cell);
            continue;
        }
        let (head, inner) = cell.split_vertically(HEADING);
        let (hw, hh) = head.dim_in_pixel();
        let style = TextStyle::from(("sans-serif", 17).into_font())
            .pos(Pos::new(HPos::Center, VPos::Center));
        head.draw_text(&label, &style, (hw as i32 / 2, hh as i32 / 2 + 2))
            .map_err(err)?;
        out.push(inner);
    }
    Ok((out, side))
}

/// [`legend_width`] of the series' names.
pub fn series_legend_width(series: &[(String, SeriesStyle)]) -> u32 {
    let names: Vec<String> = series.iter().map(|s| s.0.clone()).collect();
    legend_width(&names)
}

/// The width of a legend column for these labels.
pub fn legend_width(labels: &[String]) -> u32 {
    let font = ("sans-serif", 14).into_font();
    let widest = labels
        .iter()
        .map(|l| font.box_size(l).map_or(8 * l.len() as u32, |b| b.0))
        .max()
        .unwrap_or(0);
    widest + 80
}

/// Draws a legend, one `(label, style)` a line, at the top of `area`
/// (a sample line with the marker, then the label); `title` above it.
pub fn legend_column<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[(String, SeriesStyle)],
) -> Result<(), String> {
    let text =
        TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 24;
    if !title.is_empty() {
        area.draw_text(title, &text, (8, y)).map_err(err)?;
        y += 24;
    }
    for (label, style) in entries {
        let stroke = style.color.stroke_width(2);
        match style.dash {
            Some((d, g)) => area.draw(&plotters::element::DashedPathElement::new(
                vec![(8, y), (38, y)],
                d,
                g,
                stroke,
            )),
            None => area.draw(&PathElement::new(vec![(8, y), (38, y)], stroke)),
        }
        .map_err(err)?;
        marker_at(
            area,
            (23 + area.get_base_pixel().0, y + area.get_base_pixel().1),
            *style,
        )?;
        area.draw_text(label, &text, (46, y)).map_err(err)?;
        y += 22;
    }
    Ok(())
}
