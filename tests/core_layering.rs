//! The core builds without tokio or hyper: no source file under src/core may mention them.

use std::path::Path;

fn scan(dir: &Path, hits: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            scan(&path, hits);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.contains("tokio") || line.contains("hyper") {
                    hits.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
}

#[test]
fn core_has_no_tokio_or_hyper() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut hits = Vec::new();
    scan(&root, &mut hits);
    assert!(
        hits.is_empty(),
        "runtime-specific references in src/core:\n{}",
        hits.join("\n")
    );
    // The scan itself must see the core's files.
    assert!(root.join("registry.rs").exists());
}
