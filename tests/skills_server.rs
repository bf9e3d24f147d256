//! The Skills extension (SEP-2640) on the server, through [`Server::serve`] with exact wire
//! bytes: the declaration while a catalogue is served and only then (N13, N14, O119),
//! `skills/list` pages and cache hints (N20), entries (N21, N22), `skills/get` (N25), skill
//! files through plain `resources/read` (N19, N26), `resources/directory/read` (N27), the
//! per-caller policy, and loading a directory tree that refuses traversal and symlink escape.

#![forbid(unsafe_code)]

mod support;

use serde_json::{json, Value};
use strict_mcp::core::{
    Access, Caller, Policy, RegistryBuilder, ResourceDef, SkillError, SkillTree, Skills,
};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::wire::skills::digest;
use support::harness::InMemory;

const PDF: &str = "---\nname: pdf-processing\ndescription: PDFs\nmetadata:\n  version: \"1.0\"\n---\nUse references/FORMS.md.\n";
const FORMS: &str = "forms\n";
const REVIEW: &str = "---\nname: code-review\ndescription: Reviews\n---\n";

fn tree() -> SkillTree {
    SkillTree::new()
        .file("pdf-processing/SKILL.md", PDF.as_bytes())
        .file("pdf-processing/references/FORMS.md", FORMS.as_bytes())
        .file("acme/code-review/SKILL.md", REVIEW.as_bytes())
}

fn server_with(builder: RegistryBuilder) -> InMemory {
    InMemory::new(Server::new(builder.build().unwrap(), ServerOptions::new()).unwrap())
}

fn skills_server(directory_read: bool) -> InMemory {
    server_with(
        RegistryBuilder::new().skills(tree().directory_read(directory_read).build().unwrap()),
    )
}

fn pdf_entry() -> Value {
    json!({
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"description": "PDFs", "metadata": {"version": "1.0"}, "name": "pdf-processing"},
        "resources": [
            {"uri": "skill://pdf-processing/SKILL.md", "digest": digest(PDF.as_bytes()), "size": PDF.len()},
            {"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest(FORMS.as_bytes()), "size": FORMS.len()},
        ],
    })
}

fn review_entry() -> Value {
    json!({
        "uri": "skill://acme/code-review/SKILL.md",
        "frontmatter": {"description": "Reviews", "name": "code-review"},
        "resources": [
            {"uri": "skill://acme/code-review/SKILL.md", "digest": digest(REVIEW.as_bytes()), "size": REVIEW.len()},
        ],
    })
}

fn result(reply: &Value) -> &Value {
    reply
        .get("result")
        .unwrap_or_else(|| panic!("no result: {reply}"))
}

fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error: {reply}"))
}

fn without_meta(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("_meta");
    }
    v
}

#[tokio::test]
async fn n13_n14_o119_declared_only_while_a_catalogue_is_served() {
    let served = skills_server(false);
    let (reply, _) = served.request("a", "server/discover", json!({})).await;
    let caps = &result(&reply)["capabilities"];
    assert_eq!(
        caps["extensions"],
        json!({"io.modelcontextprotocol/skills": {}})
    );
    assert!(caps["resources"].is_object(), "N14: resources declared too");

    let with_dirs = skills_server(true);
    let (reply, _) = with_dirs.request("a", "server/discover", json!({})).await;
    assert_eq!(
        result(&reply)["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/skills": {"directoryRead": true}})
    );

    let plain = server_with(RegistryBuilder::new().resource(ResourceDef::new(
        "mem://a",
        "a",
        |_inv, uri| async move {
            Ok(strict_mcp::core::ReadReply::new(vec![
                strict_mcp::core::descriptor::ResourceContents::text(uri, "a"),
            ]))
        },
    )));
    let (reply, _) = plain.request("a", "server/discover", json!({})).await;
    assert!(result(&reply)["capabilities"].get("extensions").is_none());
    // N15: a server that did not declare it answers its methods as unknown.
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let (reply, _) = plain
            .request(
                "a",
                method,
                json!({"uri": "skill://pdf-processing/SKILL.md"}),
            )
            .await;
        assert_eq!(error_code(&reply), -32601, "{method}");
    }
    // directoryRead off: the directory method does not exist, the others do.
    let (reply, _) = served
        .request(
            "a",
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
        )
        .await;
    assert_eq!(error_code(&reply), -32601);
}

#[tokio::test]
async fn n20_n21_n22_list_is_exact_with_cache_hints() {
    let server = skills_server(false);
    let (reply, _) = server.request("a", "skills/list", json!({})).await;
    let expected = json!({
        "resultType": "complete",
        "skills": [review_entry(), pdf_entry()],
        "ttlMs": 0,
        "cacheScope": "private",
    });
    assert_eq!(without_meta(result(&reply).clone()), expected);
    assert!(result(&reply).get("nextCursor").is_none());
}

#[tokio::test]
async fn n20_pages_keep_entries_whole_and_cursors_are_bound() {
    let mut tree = SkillTree::new();
    let names: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    for n in &names {
        tree = tree.file(
            &format!("{n}/SKILL.md"),
            format!("---\nname: {n}\ndescription: d\n---\n").as_bytes(),
        );
    }
    let server = server_with(
        RegistryBuilder::new()
            .page_size(2)
            .skills(tree.build().unwrap()),
    );
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 5, "terminates");
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (reply, _) = server.request("a", "skills/list", params).await;
        let r = result(&reply);
        assert_eq!(r["ttlMs"], json!(0));
        assert_eq!(r["cacheScope"], json!("private"));
        for s in r["skills"].as_array().unwrap() {
            assert_eq!(s["resources"].as_array().unwrap().len(), 1);
            seen.push(s["frontmatter"]["name"].as_str().unwrap().to_owned());
        }
        match r.get("nextCursor") {
            Some(Value::String(c)) => cursor = Some(c.clone()),
            None => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, names);
    // A cursor from another caller, or tampered with, is -32602.
    let (first, _) = server.request("a", "skills/list", json!({})).await;
    let c = result(&first)["nextCursor"].as_str().unwrap().to_owned();
    let (reply, _) = server
        .request("b", "skills/list", json!({"cursor": c}))
        .await;
    assert_eq!(error_code(&reply), -32602);
    let (reply, _) = server
        .request("a", "skills/list", json!({"cursor": "x"}))
        .await;
    assert_eq!(error_code(&reply), -32602);
    let (reply, _) = server
        .request("a", "skills/list", json!({"cursor": 7}))
        .await;
    assert_eq!(error_code(&reply), -32602);
}

#[tokio::test]
async fn n25_get_echoes_the_uri_with_cache_hints_and_no_cursor() {
    let server = skills_server(false);
    let (reply, _) = server
        .request(
            "a",
            "skills/get",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
        )
        .await;
    assert_eq!(
        without_meta(result(&reply).clone()),
        json!({"resultType": "complete", "skill": pdf_entry(), "ttlMs": 0, "cacheScope": "private"})
    );
    for uri in [
        json!("skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"),
        json!("skill://pdf-processing/references/FORMS.md"),
        json!("skill://pdf-processing"),
    ] {
        let (reply, _) = server.request("a", "skills/get", json!({"uri": uri})).await;
        assert_eq!(error_code(&reply), -32602, "{uri}");
    }
    let (reply, _) = server.request("a", "skills/get", json!({})).await;
    assert_eq!(error_code(&reply), -32602);
    assert_eq!(reply["error"]["message"], json!("uri must be a string"));
}

#[tokio::test]
async fn n19_n26_files_are_plain_resources() {
    let server = skills_server(false);
    let (reply, _) = server.request("a", "resources/list", json!({})).await;
    assert_eq!(
        result(&reply)["resources"],
        json!([
            {"uri": "skill://acme/code-review/SKILL.md", "name": "code-review", "description": "Reviews", "mimeType": "text/markdown", "size": REVIEW.len()},
            {"uri": "skill://pdf-processing/SKILL.md", "name": "pdf-processing", "description": "PDFs", "mimeType": "text/markdown", "size": PDF.len()},
            {"uri": "skill://pdf-processing/references/FORMS.md", "name": "pdf-processing/references/FORMS.md", "mimeType": "text/markdown", "size": FORMS.len()},
        ])
    );
    let (reply, _) = server
        .request(
            "a",
            "resources/read",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
        )
        .await;
    assert_eq!(
        result(&reply)["contents"],
        json!([{"uri": "skill://pdf-processing/SKILL.md", "mimeType": "text/markdown", "text": PDF}])
    );
    let (reply, _) = server
        .request(
            "a",
            "resources/read",
            json!({"uri": "skill://pdf-processing/nope.md"}),
        )
        .await;
    assert_eq!(error_code(&reply), -32602);
}

#[tokio::test]
async fn n27_directory_read_lists_direct_children() {
    let server = skills_server(true);
    let (reply, _) = server
        .request(
            "a",
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
        )
        .await;
    assert_eq!(
        without_meta(result(&reply).clone()),
        json!({
            "resultType": "complete",
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": PDF.len()},
                {"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"},
            ],
            "ttlMs": 0,
            "cacheScope": "private",
        })
    );
    let (reply, _) = server
        .request(
            "a",
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing/references"}),
        )
        .await;
    assert_eq!(
        result(&reply)["resources"],
        json!([{"uri": "skill://pdf-processing/references/FORMS.md", "name": "FORMS.md", "mimeType": "text/markdown", "size": FORMS.len()}])
    );
    for uri in [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/",
        "skill://acme",
        "skill://nowhere",
    ] {
        let (reply, _) = server
            .request("a", "resources/directory/read", json!({"uri": uri}))
            .await;
        assert_eq!(error_code(&reply), -32602, "{uri}");
    }
}

#[tokio::test]
async fn n27_directory_pages_bind_their_cursor_to_the_directory() {
    let mut tree = SkillTree::new()
        .file(
            "big/SKILL.md",
            &b"---\nname: big\ndescription: d\n---\n"[..],
        )
        .file(
            "other/SKILL.md",
            &b"---\nname: other\ndescription: d\n---\n"[..],
        )
        .file("other/a", &b"a"[..])
        .file("other/b", &b"b"[..]);
    for i in 0..4 {
        tree = tree.file(&format!("big/f{i}"), &b"x"[..]);
    }
    let server = server_with(
        RegistryBuilder::new()
            .page_size(2)
            .skills(tree.directory_read(true).build().unwrap()),
    );
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = json!({"uri": "skill://big"});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let (reply, _) = server
            .request("a", "resources/directory/read", params)
            .await;
        for r in result(&reply)["resources"].as_array().unwrap() {
            names.push(r["name"].as_str().unwrap().to_owned());
        }
        match result(&reply).get("nextCursor") {
            Some(Value::String(c)) => cursor = Some(c.clone()),
            _ => break,
        }
    }
    assert_eq!(names, ["SKILL.md", "f0", "f1", "f2", "f3"]);
    let (first, _) = server
        .request(
            "a",
            "resources/directory/read",
            json!({"uri": "skill://big"}),
        )
        .await;
    let c = result(&first)["nextCursor"].clone();
    let (reply, _) = server
        .request(
            "a",
            "resources/directory/read",
            json!({"uri": "skill://other", "cursor": c}),
        )
        .await;
    assert_eq!(error_code(&reply), -32602, "a cursor of another directory");
}

struct HidePdf;

impl Policy for HidePdf {
    fn skill(&self, caller: &Caller, uri: &str) -> Access {
        if caller.principal() == Some("guest") && uri.contains("pdf-processing") {
            Access::Hidden
        } else {
            Access::Allowed
        }
    }
}

#[tokio::test]
async fn skills_policy_is_per_caller() {
    let server = server_with(
        RegistryBuilder::new()
            .policy(HidePdf)
            .skills(tree().directory_read(true).build().unwrap()),
    );
    let (reply, _) = server.request("guest", "skills/list", json!({})).await;
    assert_eq!(result(&reply)["skills"], json!([review_entry()]));
    let (reply, _) = server
        .request(
            "guest",
            "skills/get",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
        )
        .await;
    assert_eq!(error_code(&reply), -32602);
    let (reply, _) = server
        .request(
            "guest",
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
        )
        .await;
    assert_eq!(error_code(&reply), -32602);
    let (reply, _) = server.request("admin", "skills/list", json!({})).await;
    assert_eq!(result(&reply)["skills"].as_array().unwrap().len(), 2);
}

#[test]
fn skill_files_clash_with_other_resources_at_build() {
    let skills: Skills = tree().build().unwrap();
    let clash = ResourceDef::new(
        "skill://pdf-processing/SKILL.md",
        "x",
        |_inv, uri| async move {
            Ok(strict_mcp::core::ReadReply::new(vec![
                strict_mcp::core::descriptor::ResourceContents::text(uri, "x"),
            ]))
        },
    );
    let e = RegistryBuilder::new()
        .resource(clash)
        .skills(skills)
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "duplicate resource `skill://pdf-processing/SKILL.md`"
    );
}

// ---------------------------------------------------------------------------------------------
// Loading a directory tree

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "strict-mcp-skills-{tag}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, path: &str, bytes: &[u8]) {
        let full = self.0.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, bytes).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn load_dir_serves_the_tree_as_built_in_memory() {
    let dir = TempDir::new("load");
    dir.write("pdf-processing/SKILL.md", PDF.as_bytes());
    dir.write("pdf-processing/references/FORMS.md", FORMS.as_bytes());
    dir.write("acme/code-review/SKILL.md", REVIEW.as_bytes());
    let loaded = SkillTree::load_dir(&dir.0).unwrap().build().unwrap();
    let built = tree().build().unwrap();
    assert_eq!(loaded.entries(), built.entries());
}

#[cfg(unix)]
#[test]
fn load_dir_refuses_symlink_escape_and_follows_links_inside() {
    let outside = TempDir::new("outside");
    outside.write("secret.txt", b"secret");
    let dir = TempDir::new("links");
    dir.write("pdf-processing/SKILL.md", PDF.as_bytes());
    dir.write("pdf-processing/references/FORMS.md", FORMS.as_bytes());
    std::os::unix::fs::symlink(
        dir.0.join("pdf-processing/references/FORMS.md"),
        dir.0.join("pdf-processing/alias.md"),
    )
    .unwrap();
    let skills = SkillTree::load_dir(&dir.0).unwrap().build().unwrap();
    let entry = skills.entry("skill://pdf-processing/SKILL.md").unwrap();
    let alias = entry.file("skill://pdf-processing/alias.md").unwrap();
    assert_eq!(alias.digest, digest(FORMS.as_bytes()));

    std::os::unix::fs::symlink(
        outside.0.join("secret.txt"),
        dir.0.join("pdf-processing/leak.txt"),
    )
    .unwrap();
    assert_eq!(
        SkillTree::load_dir(&dir.0).unwrap_err(),
        SkillError::SymlinkEscape {
            path: "pdf-processing/leak.txt".into()
        }
    );
    std::fs::remove_file(dir.0.join("pdf-processing/leak.txt")).unwrap();
    // A link to a directory outside, and a `..` link, leave the root too.
    std::os::unix::fs::symlink(&outside.0, dir.0.join("pdf-processing/up")).unwrap();
    assert_eq!(
        SkillTree::load_dir(&dir.0).unwrap_err(),
        SkillError::SymlinkEscape {
            path: "pdf-processing/up".into()
        }
    );
    std::fs::remove_file(dir.0.join("pdf-processing/up")).unwrap();
    std::os::unix::fs::symlink("../..", dir.0.join("pdf-processing/dotdot")).unwrap();
    assert_eq!(
        SkillTree::load_dir(&dir.0).unwrap_err(),
        SkillError::SymlinkEscape {
            path: "pdf-processing/dotdot".into()
        }
    );
}

#[cfg(unix)]
#[test]
fn load_dir_stops_a_symlink_loop_at_the_depth_bound() {
    let dir = TempDir::new("loop");
    dir.write("pdf-processing/SKILL.md", PDF.as_bytes());
    std::os::unix::fs::symlink(".", dir.0.join("pdf-processing/again")).unwrap();
    let e = SkillTree::load_dir(&dir.0).unwrap_err();
    assert!(
        matches!(e, SkillError::TooDeep { .. } | SkillError::TooManyEntries),
        "{e:?}"
    );
}

#[test]
fn load_dir_refuses_a_file_over_the_skill_bound_before_reading_it() {
    let dir = TempDir::new("big");
    dir.write("pdf-processing/SKILL.md", PDF.as_bytes());
    let file = std::fs::File::create(dir.0.join("pdf-processing/huge.bin")).unwrap();
    file.set_len(strict_mcp::core::MAX_SKILL_BYTES + 1).unwrap();
    assert_eq!(
        SkillTree::load_dir(&dir.0).unwrap_err(),
        SkillError::TooLarge {
            skill: "pdf-processing/huge.bin".into()
        }
    );
}

#[test]
fn load_dir_of_a_missing_root_is_an_io_error() {
    let e = SkillTree::load_dir("/nonexistent/strict-mcp-skills").unwrap_err();
    assert!(matches!(e, SkillError::Io { .. }), "{e:?}");
}

#[tokio::test]
async fn n25_n13_exact_bytes_of_get_and_the_declaration() {
    let manifest = "---\nname: a\ndescription: d\n---\n";
    let registry = RegistryBuilder::new()
        .skills(
            SkillTree::new()
                .file("x/a/SKILL.md", manifest.as_bytes())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new().server_info("s", "1")).unwrap();
    let meta: Value = serde_json::from_str(support::harness::META).unwrap();
    let (_, reply) = support::harness::serve_one(
        &server,
        "a",
        1,
        "skills/get",
        json!({"uri": "skill://x/a/SKILL.md", "_meta": meta}),
    )
    .await;
    assert_eq!(
        reply.line,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"s","version":"1"}}}},"cacheScope":"private","resultType":"complete","skill":{{"frontmatter":{{"description":"d","name":"a"}},"resources":[{{"digest":"{}","size":{},"uri":"skill://x/a/SKILL.md"}}],"uri":"skill://x/a/SKILL.md"}},"ttlMs":0}}}}"#,
            digest(manifest.as_bytes()),
            manifest.len()
        )
    );
    let (_, reply) =
        support::harness::serve_one(&server, "a", 2, "server/discover", json!({"_meta": meta}))
            .await;
    assert!(
        reply
            .line
            .contains(r#""extensions":{"io.modelcontextprotocol/skills":{}}"#),
        "{}",
        reply.line
    );
}
