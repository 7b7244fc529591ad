//! The dashboard's weight (issue 33): its JavaScript and CSS, the editor, the charts' library
//! and Preact included, at most 250 KB gzipped in all, as the browser fetches them.

use std::io::Write;
use std::path::Path;

const BUDGET: usize = 250 * 1024;

fn gzipped(path: &Path) -> usize {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&std::fs::read(path).unwrap()).unwrap();
    encoder.finish().unwrap().len()
}

fn walk(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, found);
        } else if path.extension().is_some_and(|e| e == "js" || e == "css") {
            found.push(path);
        }
    }
}

#[test]
fn the_dashboards_code_and_styles_weigh_at_most_250_kb_gzipped() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/dashboard");
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(files.len() > 20, "the dashboard's files: {files:?}");
    let total: usize = files.iter().map(|f| gzipped(f)).sum();
    eprintln!("dashboard: {} files, {} bytes gzipped (budget {BUDGET})", files.len(), total);
    assert!(total <= BUDGET, "{total} bytes gzipped, over the budget of {BUDGET}");
}
