//! The text an SVG shows, for the plots' tests: plotters writes each text
//! element's content on its own line.

/// Every text element's content, in drawing order.
pub fn texts(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = svg.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("<text") {
            let mut t = Vec::new();
            for l in lines.by_ref() {
                if l.starts_with("</text>") {
                    break;
                }
                t.push(l);
            }
            out.push(t.join(" "));
        }
    }
    out
}

/// All the text, one space between elements (so a wrapped title reads whole).
pub fn text(svg: &str) -> String {
    texts(svg).join(" ")
}
