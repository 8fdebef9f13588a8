//! The registry (`coalesce::kernels::registry`) against what it describes:
//! `docs/registry.json` (which the doc scripts read), the kernel files, the
//! PTX modules and the doc pages. `COALESCE_BLESS=1 cargo test --test
//! registry` rewrites `docs/registry.json` after a registry change.

use coalesce::kernels::ops::{OPS, steps};
use coalesce::kernels::registry::Step;
use serde_json::{Value, json};
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Whether the sources this test checks are where it was built from (a test
/// binary carried to another machine, as the GPU runs do, finds none).
fn sources_here(test: &str) -> bool {
    let here = Path::new(ROOT).join("kernels/src").is_dir();
    if !here {
        eprintln!("skipping {test}: no sources at {ROOT}");
    }
    here
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// A ladder step's geometry as JSON, read from its `Debug` text (`Geometry
/// { field: value, .. }`), so that the docs take a field by name: numbers,
/// `true` and `false`, unit variants as strings, tuples as arrays, `None`
/// as null, `Some(x)` as `x`, structs and struct variants as objects (their
/// name under `type`). A utility's geometry, in words, has none (null).
fn fields(text: &str) -> Value {
    type Tokens = std::iter::Peekable<std::vec::IntoIter<String>>;
    fn next_is(t: &mut Tokens, s: &str) -> bool {
        t.peek().is_some_and(|p| p == s)
    }
    fn value(t: &mut Tokens) -> Value {
        let tok = t.next().expect("a value");
        if tok == "(" {
            let mut items = Vec::new();
            while !next_is(t, ")") {
                items.push(value(t));
                if next_is(t, ",") {
                    t.next();
                }
            }
            t.next();
            return Value::Array(items);
        }
        if let Ok(n) = tok.parse::<i64>() {
            return n.into();
        }
        match tok.as_str() {
            "true" => true.into(),
            "false" => false.into(),
            "None" => Value::Null,
            "Some" if next_is(t, "(") => {
                t.next();
                let v = value(t);
                t.next();
                v
            }
            _ if next_is(t, "{") => {
                t.next();
                let mut object = serde_json::Map::from_iter([("type".to_string(), Value::from(tok))]);
                while !next_is(t, "}") {
                    let key = t.next().expect("a field");
                    assert_eq!(t.next().as_deref(), Some(":"), "{key} in a geometry's Debug text");
                    object.insert(key, value(t));
                    if next_is(t, ",") {
                        t.next();
                    }
                }
                t.next();
                Value::Object(object)
            }
            _ => tok.into(),
        }
    }
    if !text.ends_with('}') {
        return Value::Null;
    }
    let spaced: String =
        text.chars().flat_map(|c| if "{}(),:".contains(c) { vec![' ', c, ' '] } else { vec![c] }).collect();
    let tokens: Vec<String> = spaced.split_whitespace().map(str::to_string).collect();
    value(&mut tokens.into_iter().peekable())
}

/// The registry as JSON: `[{"op": .., "steps": [..]}, ..]` in teaching order.
fn registry_json() -> Value {
    let ops = OPS.iter().map(|(op, steps)| {
        let steps: Vec<Value> = steps
            .iter()
            .map(|s| {
                json!({
                    "step": s.step, "name": s.name, "entry": s.entry, "body": s.body,
                    "file": format!("kernels/src/{}", s.file), "idea": s.idea, "geometry": format!("{:?}", s.geometry),
                    "needs": s.needs, "opt_in_shared": s.opt_in_shared,
                    "fields": fields(&format!("{:?}", s.geometry)),
                })
            })
            .collect();
        json!({ "op": op, "steps": steps })
    });
    Value::Array(ops.collect())
}

#[test]
fn docs_registry_json_is_the_registry() {
    if !sources_here("docs_registry_json_is_the_registry") {
        return;
    }
    let want = serde_json::to_string_pretty(&registry_json()).unwrap() + "\n";
    let path = Path::new(ROOT).join("docs/registry.json");
    if std::env::var_os("COALESCE_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/registry.json is stale: run `COALESCE_BLESS=1 cargo test --test registry`");
}

#[test]
fn each_step_lives_in_its_file_and_the_file_is_numbered_by_its_step() {
    if !sources_here("each_step_lives_in_its_file_and_the_file_is_numbered_by_its_step") {
        return;
    }
    for s in steps() {
        let text = read(&format!("kernels/src/{}", s.file));
        // A ladder step's `.entry` is the registry's; its file holds the
        // body. A utility kernel's file holds its `.entry` too.
        let defines = if s.step == "-" {
            ["(", ",", " =>"].iter().any(|end| text.contains(&format!("{}{end}", s.entry)))
        } else {
            let body = s.body.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap();
            text.contains(&format!("fn {body}<"))
        };
        assert!(defines, "{}: kernels/src/{} defines neither its body nor its `.entry` {}", s.name, s.file, s.entry);
        if s.step != "-" {
            let file = Path::new(s.file).file_name().unwrap().to_str().unwrap();
            let number: String = s.step.chars().take_while(char::is_ascii_digit).collect();
            assert!(file.starts_with(&format!("{number:0>2}_")), "{}: step {} in {file}", s.name, s.step);
        }
    }
}

#[test]
fn names_and_entries_are_unique_and_every_entry_is_in_every_module() {
    let all: Vec<&Step> = steps().collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a.entry, b.entry, "two steps share an entry");
            assert!(a.op != b.op || a.name != b.name, "{}: two steps named {}", a.op, a.name);
        }
    }
    for m in coalesce::MODULES {
        for s in &all {
            let found = m.text.contains(&format!(".visible .entry {}(", s.entry));
            assert_eq!(
                found,
                s.in_module(&m.name()),
                "{}: {} in {}",
                s.entry,
                s.needs.unwrap_or("every module"),
                m.name()
            );
        }
    }
}

/// Each op's page names every step, and each ladder file links to the page.
#[test]
fn the_docs_teach_every_step() {
    if !sources_here("the_docs_teach_every_step") {
        return;
    }
    // A utility list (GEMM's operand pass) is taught on its op's page.
    for (_, steps) in OPS.iter().filter(|(op, _)| !matches!(*op, "copy" | "probe")) {
        for s in steps.iter() {
            let op = s.op;
            let page = read(&format!("docs/{op}.md"));
            assert!(page.contains(&format!("`{}`", s.name)), "docs/{op}.md does not mention `{}`", s.name);
            let text = read(&format!("kernels/src/{}", s.file));
            assert!(text.contains(&format!("docs/{op}.md")), "kernels/src/{} does not link docs/{op}.md", s.file);
        }
    }
}
