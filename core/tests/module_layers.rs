//! The module layers docs/ARCHITECTURE.md draws: each module of the crate
//! uses only its own layer and the layers above it. Read from the source,
//! so a new `use` that points the wrong way (a probe importing the engine)
//! fails here.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// The layers, first to last, as docs/ARCHITECTURE.md lists them.
const LAYERS: &[&[&str]] = &[
    &[
        "error",
        "input",
        "duration",
        "cancel",
        "sync",
        "keyed",
        "memory",
        "file_id",
        "fold_cost",
    ],
    &["spec", "pattern", "resume", "result", "pane_id"],
    &["observation"],
    &["condition", "view"],
    &["grants", "policy", "process", "limits"],
    &["probe", "tmux", "probes"],
    &["machine"],
    &["engine"],
    &["simulate", "sampler"],
    &["ouro", "profiles"],
    &["vectors"],
];

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer of docs/ARCHITECTURE.md"))
}

/// Which module each name the crate root re-exports comes from.
fn root_exports(lib: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        for name in rest.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && name != "as" {
                names.push((name.to_string(), module.to_string()));
            }
        }
    }
    names
}

/// The modules a source file's code (not its comments or unit tests) uses
/// through `crate::`.
fn uses(source: &str, exports: &[(String, String)]) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let code: String = code
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut used = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let items = match rest.strip_prefix('{') {
            Some(group) => top_level_items(group),
            None => vec![rest],
        };
        for item in items {
            let name: String = item
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // A name the root re-exports counts for its module; another
            // lowercase name is a module, or an item inside a nested group.
            let module = match exports.iter().find(|(export, _)| *export == name) {
                Some((_, module)) => module.clone(),
                None => name,
            };
            if LAYERS.iter().any(|layer| layer.contains(&module.as_str())) {
                used.insert(module);
            }
        }
    }
    used
}

/// The items of a `{...}` group (given after its `{`), split at its own
/// commas, up to its closing brace.
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

fn sources(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn every_module_uses_only_its_layer_and_the_layers_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let exports = root_exports(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_str().unwrap().trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        let layer = layer_of(module);
        for used in uses(&fs::read_to_string(&file).unwrap(), &exports) {
            if used != module && layer_of(&used) > layer {
                wrong.push(format!("{} uses `{used}`", relative.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses against docs/ARCHITECTURE.md's layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_use_through_a_root_export_counts_for_its_module() {
    let exports = root_exports("pub use engine::{Engine, WaitHandle};\npub use probe::Waker;");
    let used = uses(
        "use crate::Engine;\nuse crate::{probe::{Probe, ProbeMode}, Waker};\n// crate::spec here\n",
        &exports,
    );
    assert_eq!(used, BTreeSet::from(["engine".into(), "probe".into()]));
}
