//! The Skills extension (SEP-2640) on the client: our client against our server in memory
//! (list with pagination, get, directory pages, load and read with verification), and
//! against a scripted server that tampers with content or omits the declaration: nothing is
//! sent before the declaration (N15), listing reads no file (N28), size before digest (N29),
//! frontmatter field by field (N30), only listed files are read (N31), typed errors.

#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use strict_mcp::client::skills::{
    check_entry, verify_bytes, verify_frontmatter, LoadedSkill, SkillError,
};
use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientError, ClientOptions, Inbound, Transport, TransportError,
};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::core::{Caller, RegistryBuilder, SkillTree};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::testing::InMemoryTransport;
use strict_mcp::wire::jsonrpc::Message;
use strict_mcp::wire::skills::{digest, FileEntry, SkillEntry, SkillResources};
use tokio::sync::mpsc;

const PDF: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS: &str = "Supporting content.\n";
const PDF_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";

fn plain() -> CallOptions {
    CallOptions::default()
}

async fn own(page_size: usize, skills: usize) -> Client {
    let mut tree = SkillTree::new()
        .file("pdf-processing/SKILL.md", PDF.as_bytes())
        .file("pdf-processing/references/FORMS.md", FORMS.as_bytes());
    for i in 0..skills {
        tree = tree.file(
            &format!("extra/s{i}/SKILL.md"),
            format!("---\nname: s{i}\ndescription: d\n---\n").as_bytes(),
        );
    }
    let registry = RegistryBuilder::new()
        .page_size(page_size)
        .skills(tree.directory_read(true).build().unwrap())
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new()).unwrap();
    let transport = Arc::new(InMemoryTransport::new(server, Caller::new("t")));
    Client::connect(transport, ClientOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn own_server_list_get_load_read() {
    let client = own(2, 3).await;
    assert!(client.skills_capability().unwrap().directory_read);
    let skills = client.list_skills(&plain()).await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://extra/s0/SKILL.md",
            "skill://extra/s1/SKILL.md",
            "skill://extra/s2/SKILL.md",
            PDF_URI
        ]
    );
    let first = client.list_skills_page(None, &plain()).await.unwrap();
    assert_eq!(first.skills.len(), 2);
    assert!(first.next_cursor.is_some());

    let entry = client.get_skill(PDF_URI, &plain()).await.unwrap();
    assert_eq!(&entry, skills.last().unwrap());
    let loaded = client.load_skill(&entry, &plain()).await.unwrap();
    assert_eq!(loaded.manifest, PDF);
    assert_eq!(loaded.root(), "skill://pdf-processing");
    let forms = loaded.resolve("references/FORMS.md").unwrap();
    assert_eq!(forms, FORMS_URI);
    assert_eq!(
        client
            .read_skill_file(&loaded, &forms, &plain())
            .await
            .unwrap(),
        FORMS.as_bytes()
    );
    // N31: an unlisted file is never read.
    let e = client
        .read_skill_file(&loaded, "skill://pdf-processing/other.md", &plain())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Skill(SkillError::NotListed { .. })),
        "{e}"
    );

    let dir = client
        .read_directory_page("skill://pdf-processing", None, &plain())
        .await
        .unwrap();
    let names: Vec<(&str, bool)> = dir
        .resources
        .iter()
        .map(|c| (c.name.as_str(), c.is_directory()))
        .collect();
    assert_eq!(names, [("SKILL.md", false), ("references", true)]);

    // N25: a skill the server does not serve is -32602.
    let e = client
        .get_skill("skill://nope/SKILL.md", &plain())
        .await
        .unwrap_err();
    assert!(matches!(&e, ClientError::Rpc(r) if r.code == -32602), "{e}");
}

#[test]
fn n32_relative_references_stay_inside_the_skill() {
    let loaded = LoadedSkill {
        entry: entry(PDF, FORMS),
        manifest: PDF.to_owned(),
        frontmatter: serde_json::Map::new(),
    };
    assert_eq!(
        loaded.resolve("./references/FORMS.md").as_deref(),
        Some(FORMS_URI)
    );
    for bad in [
        "../x",
        "references/../../x",
        "/etc/passwd",
        "",
        "a//b",
        "https://x/y",
    ] {
        assert_eq!(loaded.resolve(bad), None, "{bad}");
    }
}

fn entry(manifest: &str, forms: &str) -> SkillEntry {
    SkillEntry {
        uri: PDF_URI.to_owned(),
        frontmatter: serde_json::from_value(
            json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"}),
        )
        .unwrap(),
        resources: SkillResources::Files(vec![
            FileEntry {
                uri: PDF_URI.to_owned(),
                digest: digest(manifest.as_bytes()),
                size: manifest.len() as u64,
            },
            FileEntry {
                uri: FORMS_URI.to_owned(),
                digest: digest(forms.as_bytes()),
                size: forms.len() as u64,
            },
        ]),
        meta: None,
    }
}

#[test]
fn n29_size_is_checked_before_the_digest() {
    let e = entry(PDF, FORMS);
    let SkillResources::Files(files) = &e.resources else {
        unreachable!()
    };
    assert_eq!(verify_bytes(&files[0], PDF.as_bytes()), Ok(()));
    let longer = format!("{PDF}x");
    assert_eq!(
        verify_bytes(&files[0], longer.as_bytes()),
        Err(SkillError::SizeMismatch {
            uri: PDF_URI.into(),
            expected: PDF.len() as u64,
            actual: PDF.len() as u64 + 1
        })
    );
    let same_length = PDF.replace("Skill body.", "Evil body!!");
    assert!(matches!(
        verify_bytes(&files[0], same_length.as_bytes()),
        Err(SkillError::DigestMismatch { .. })
    ));
}

#[test]
fn n30_frontmatter_is_compared_field_by_field() {
    let e = entry(PDF, FORMS);
    assert!(verify_frontmatter(&e, PDF).is_ok());
    let changed = PDF.replace("assemble PDF documents", "Exfiltrate credentials");
    assert_eq!(
        verify_frontmatter(&e, &changed),
        Err(SkillError::FrontmatterMismatch {
            uri: PDF_URI.into(),
            field: "description".into()
        })
    );
    let extra = PDF.replace("---\n\n", "allowed-tools: Bash\n---\n\n");
    assert_eq!(
        verify_frontmatter(&e, &extra),
        Err(SkillError::FrontmatterMismatch {
            uri: PDF_URI.into(),
            field: "allowed-tools".into()
        })
    );
    assert!(matches!(
        verify_frontmatter(&e, "no frontmatter"),
        Err(SkillError::Frontmatter { .. })
    ));
}

#[test]
fn n31_entries_that_cannot_be_loaded() {
    let mut e = entry(PDF, FORMS);
    assert!(check_entry(&e).is_ok());
    e.resources = SkillResources::Dynamic;
    assert_eq!(
        check_entry(&e),
        Err(SkillError::Dynamic {
            uri: PDF_URI.into()
        })
    );
    let with = |files: Vec<FileEntry>| {
        let mut e = entry(PDF, FORMS);
        e.resources = SkillResources::Files(files);
        check_entry(&e).map(<[FileEntry]>::len)
    };
    let file = |uri: &str, d: &str| FileEntry {
        uri: uri.into(),
        digest: d.into(),
        size: 1,
    };
    let good = digest(b"x");
    for (files, why) in [
        (
            vec![file(FORMS_URI, &good)],
            "no entry for the SKILL.md itself",
        ),
        (
            vec![file(PDF_URI, &good), file(PDF_URI, &good)],
            "listed twice",
        ),
        (
            vec![file(PDF_URI, &good), file("skill://other/x", &good)],
            "outside",
        ),
        (vec![file(PDF_URI, "sha256:AB")], "malformed digest"),
    ] {
        match with(files) {
            Err(SkillError::InvalidEntry { reason, .. }) => {
                assert!(reason.contains(why), "{reason}")
            }
            other => panic!("{why}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A scripted server

type Answer = Box<dyn Fn(&str, &Value) -> Value + Send + Sync>;

struct Scripted {
    answer: Answer,
    methods: Mutex<Vec<String>>,
    tx: mpsc::UnboundedSender<Result<Inbound, TransportError>>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<Inbound, TransportError>>>,
}

impl Scripted {
    fn new(answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static) -> Arc<Scripted> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Scripted {
            answer: Box::new(answer),
            methods: Mutex::new(Vec::new()),
            tx,
            rx: tokio::sync::Mutex::new(rx),
        })
    }

    fn methods(&self) -> Vec<String> {
        self.methods.lock().unwrap().clone()
    }
}

impl Transport for Scripted {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if let Message::Request(r) = message {
                let params: Value = r
                    .params
                    .as_deref()
                    .map(|p| serde_json::from_str(p.get()).unwrap())
                    .unwrap_or(Value::Null);
                let label = match params.get("uri").and_then(Value::as_str) {
                    Some(uri) => format!("{} {uri}", r.method),
                    None => r.method.clone(),
                };
                self.methods.lock().unwrap().push(label);
                let result = (self.answer)(&r.method, &params);
                let line = json!({"jsonrpc": "2.0", "id": r.id, "result": result}).to_string();
                let inbound =
                    Inbound::Message(decode(line.as_bytes(), &IngressLimits::CLIENT).unwrap());
                let _ = self.tx.send(Ok(inbound));
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            match self.rx.lock().await.recv().await {
                Some(r) => r,
                None => Err(TransportError::Closed),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

fn discover(declared: bool) -> Value {
    let mut caps = json!({"resources": {}});
    if declared {
        caps["extensions"] = json!({"io.modelcontextprotocol/skills": {}});
    }
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": caps,
        "serverInfo": {"name": "scripted", "version": "1"},
        "ttlMs": 0,
        "cacheScope": "private",
    })
}

/// A server listing `entry` and serving `manifest` / `forms` as the files' contents.
fn tampering(manifest: String, forms: &'static str, listed: SkillEntry) -> Arc<Scripted> {
    Scripted::new(move |method, params| match method {
        "server/discover" => discover(true),
        "skills/list" => json!({
            "resultType": "complete", "skills": [listed], "ttlMs": 0, "cacheScope": "private"
        }),
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap();
            let text = if uri == FORMS_URI {
                forms
            } else {
                manifest.as_str()
            };
            json!({
                "resultType": "complete",
                "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}],
                "ttlMs": 0, "cacheScope": "private"
            })
        }
        _ => json!({"resultType": "complete"}),
    })
}

async fn connect(transport: &Arc<Scripted>) -> Client {
    Client::connect(
        Arc::clone(transport) as Arc<dyn Transport>,
        ClientOptions::default(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn n15_nothing_is_sent_without_the_declaration() {
    let fake = Scripted::new(|method, _| match method {
        "server/discover" => discover(false),
        _ => panic!("nothing else is sent"),
    });
    let client = connect(&fake).await;
    assert_eq!(client.skills_capability(), None);
    for e in [
        client.list_skills(&plain()).await.unwrap_err(),
        client.get_skill(PDF_URI, &plain()).await.unwrap_err(),
        client
            .read_directory_page("skill://pdf-processing", None, &plain())
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(e, ClientError::Skill(SkillError::NotDeclared)),
            "{e}"
        );
    }
    assert_eq!(fake.methods(), ["server/discover"]);
}

#[tokio::test]
async fn n15_directory_read_needs_its_flag() {
    let fake = tampering(PDF.to_owned(), FORMS, entry(PDF, FORMS));
    let client = connect(&fake).await;
    let e = client
        .read_directory_page("skill://pdf-processing", None, &plain())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Skill(SkillError::DirectoryReadNotDeclared)),
        "{e}"
    );
    assert_eq!(fake.methods(), ["server/discover"]);
}

#[tokio::test]
async fn n28_listing_reads_no_file_and_n29_tampered_content_is_refused() {
    // Intact: load then read, in that order, nothing before the load.
    let fake = tampering(PDF.to_owned(), FORMS, entry(PDF, FORMS));
    let client = connect(&fake).await;
    let listed = client.list_skills(&plain()).await.unwrap();
    assert_eq!(fake.methods(), ["server/discover", "skills/list"]);
    let loaded = client.load_skill(&listed[0], &plain()).await.unwrap();
    client
        .read_skill_file(&loaded, FORMS_URI, &plain())
        .await
        .unwrap();
    assert_eq!(
        fake.methods(),
        [
            "server/discover".to_owned(),
            "skills/list".to_owned(),
            format!("resources/read {PDF_URI}"),
            format!("resources/read {FORMS_URI}"),
        ]
    );

    // Same length, other bytes: the digest fails.
    let fake = tampering(
        PDF.replace("Skill body.", "Evil body!!"),
        FORMS,
        entry(PDF, FORMS),
    );
    let client = connect(&fake).await;
    let listed = client.list_skills(&plain()).await.unwrap();
    let e = client.load_skill(&listed[0], &plain()).await.unwrap_err();
    assert!(
        matches!(e, ClientError::Skill(SkillError::DigestMismatch { .. })),
        "{e}"
    );

    // Appended bytes: the size fails.
    let fake = tampering(format!("{PDF}extra\n"), FORMS, entry(PDF, FORMS));
    let client = connect(&fake).await;
    let listed = client.list_skills(&plain()).await.unwrap();
    let e = client.load_skill(&listed[0], &plain()).await.unwrap_err();
    assert!(
        matches!(e, ClientError::Skill(SkillError::SizeMismatch { .. })),
        "{e}"
    );

    // Digest and size match a manifest whose frontmatter differs from the entry's.
    let evil = PDF.replace(
        "Extract, fill, and assemble PDF documents",
        "Exfiltrate credentials",
    );
    let fake = tampering(evil.clone(), FORMS, entry(&evil, FORMS));
    let client = connect(&fake).await;
    let listed = client.list_skills(&plain()).await.unwrap();
    let e = client.load_skill(&listed[0], &plain()).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Skill(SkillError::FrontmatterMismatch { field, .. }) if field == "description"),
        "{e}"
    );

    // A tampered supporting file is refused after a good load.
    let fake = tampering(PDF.to_owned(), "Evil content.\n", entry(PDF, FORMS));
    let client = connect(&fake).await;
    let listed = client.list_skills(&plain()).await.unwrap();
    let loaded = client.load_skill(&listed[0], &plain()).await.unwrap();
    let e = client
        .read_skill_file(&loaded, FORMS_URI, &plain())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Skill(SkillError::SizeMismatch { .. })),
        "{e}"
    );
}

#[tokio::test]
async fn n25_get_must_echo_the_uri_and_carry_no_cursor() {
    let fake = Scripted::new(|method, params| match method {
        "server/discover" => discover(true),
        "skills/get" if params["uri"] == json!(PDF_URI) => json!({
            "resultType": "complete",
            "skill": serde_json::to_value(entry(PDF, FORMS)).unwrap(),
            "nextCursor": "c", "ttlMs": 0, "cacheScope": "private"
        }),
        _ => json!({
            "resultType": "complete",
            "skill": serde_json::to_value(entry(PDF, FORMS)).unwrap(),
            "ttlMs": 0, "cacheScope": "private"
        }),
    });
    let client = connect(&fake).await;
    let e = client.get_skill(PDF_URI, &plain()).await.unwrap_err();
    assert!(matches!(e, ClientError::Invalid(_)), "{e}");
    let e = client
        .get_skill("skill://other/SKILL.md", &plain())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("does not echo"), "{e}");
}

#[tokio::test]
async fn n20_a_repeated_cursor_ends_the_walk() {
    let fake = Scripted::new(|method, _| match method {
        "server/discover" => discover(true),
        _ => json!({
            "resultType": "complete", "skills": [], "nextCursor": "same",
            "ttlMs": 0, "cacheScope": "private"
        }),
    });
    let client = connect(&fake).await;
    let e = client.list_skills(&plain()).await.unwrap_err();
    assert!(matches!(e, ClientError::Pagination(_)), "{e}");
    assert_eq!(
        fake.methods(),
        ["server/discover", "skills/list", "skills/list"]
    );
}
