//! The client's Agent Skills support (SEP-2640) over loopback HTTP, in both eras: listing
//! page by page reads no file, loading verifies `SKILL.md` (size, digest, frontmatter)
//! against the entry, supporting files are verified when read, and a server serving
//! tampered files, or an entry that does not match, is refused with a typed error.
#![cfg(feature = "skills")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use vellum::client::{Client, ProtocolChoice, SkillError};
use vellum::prelude::*;
use vellum::protocol::{ReadResourceResult, Resource, ResourceContents, SkillResources};
use vellum::server::SkillFiles;
use vellum::transport::http_client::StreamableHttpClientTransport;
use vellum_testkit::http::TestHttpServer;

const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"2.1\"\n---\n\nSkill body.\n";
const FORMS: &str = "Supporting content.\n";
const MD_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";

fn server() -> Server {
    let s = Server::new(
        Implementation::new("skills", "1"),
        ServerOptions::default().with_page_size(1),
    );
    s.add_skill(
        SkillFiles::new("", MD)
            .unwrap()
            .with_file("references/FORMS.md", FORMS)
            .unwrap(),
    )
    .unwrap();
    s.add_skill(
        SkillFiles::new("", "---\nname: notes\ndescription: Release notes\n---\n").unwrap(),
    )
    .unwrap();
    s
}

/// Replaces the file at `uri` with `text`, counting the reads.
fn serve_as(s: &Server, uri: &'static str, text: String, reads: Arc<AtomicUsize>) {
    s.add_resource(Resource::new(uri, "file"), move |_ctx, _req| {
        reads.fetch_add(1, Ordering::SeqCst);
        let text = text.clone();
        async move {
            Ok::<_, HandlerError>(ReadResourceResult::new(vec![ResourceContents::text(
                uri,
                Some("text/markdown"),
                text,
            )]))
        }
    })
    .unwrap();
}

async fn connect(url: &str, protocol: ProtocolChoice) -> Client {
    let transport = StreamableHttpClientTransport::new(url).unwrap();
    Client::builder()
        .protocol(protocol)
        .connect(transport)
        .await
        .unwrap()
}

#[tokio::test]
async fn lists_without_prefetch_then_loads_and_reads_verified_files() {
    for protocol in [ProtocolChoice::Auto, ProtocolChoice::Legacy] {
        let s = server();
        let reads = Arc::new(AtomicUsize::new(0));
        serve_as(&s, MD_URI, MD.into(), reads.clone());
        serve_as(&s, FORMS_URI, FORMS.into(), reads.clone());
        let srv = TestHttpServer::serve(s).await;
        let client = connect(&srv.url, protocol).await;
        // Page size 1: two pages, whole entries.
        let first = client.list_skills(None).await.unwrap();
        assert_eq!(first.skills.len(), 1);
        assert!(first.next_cursor.is_some());
        let skills = client.list_all_skills().await.unwrap();
        let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(uris, ["skill://notes/SKILL.md", MD_URI], "{protocol:?}");
        assert_eq!(reads.load(Ordering::SeqCst), 0, "listing read no file");
        let pdf = client.get_skill(MD_URI).await.unwrap();
        assert_eq!(&pdf, &skills[1]);
        assert_eq!(reads.load(Ordering::SeqCst), 0, "skills/get read no file");

        let loaded = client.load_skill(&pdf).await.unwrap();
        assert_eq!(reads.load(Ordering::SeqCst), 1, "only SKILL.md was read");
        assert_eq!(loaded.skill_md(), MD);
        assert_eq!(loaded.frontmatter()["metadata"], json!({"version": "2.1"}));
        assert_eq!(loaded.root_uri(), "skill://pdf-processing");
        assert_eq!(loaded.files().len(), 2);
        // By relative path and by URI.
        assert_eq!(
            loaded.read_text("references/FORMS.md").await.unwrap(),
            FORMS
        );
        assert_eq!(loaded.read_file(FORMS_URI).await.unwrap(), FORMS.as_bytes());
        assert_eq!(reads.load(Ordering::SeqCst), 3);
        // Files the entry does not list, or outside the skill, are not fetched.
        for path in [
            "references/OTHER.md",
            "../notes/SKILL.md",
            "skill://notes/SKILL.md",
        ] {
            let e = loaded.read_file(path).await.unwrap_err();
            assert!(e.is_not_listed(), "{path}: {e}");
        }
        assert_eq!(reads.load(Ordering::SeqCst), 3);
        client.close().await;
    }
}

/// What a refusal must look like.
type Refusal = fn(&SkillError) -> bool;

#[tokio::test]
async fn tampered_files_are_refused() {
    let evil_body = MD.replace("Skill body.", "Evil body!!");
    let extra = format!("{MD}extra bytes the entry did not account for\n");
    let cases: [(String, Refusal); 2] = [
        (evil_body, |e| {
            e.is_mismatch() && e.uri() == Some(MD_URI) && e.to_string().contains(": digest ")
        }),
        (extra, |e| {
            let sizes = format!(
                ": {} bytes, the skill entry says {}",
                MD.len() + 42,
                MD.len()
            );
            e.is_mismatch() && e.to_string().ends_with(&sizes)
        }),
    ];
    for (served, refused) in cases {
        let s = server();
        let reads = Arc::new(AtomicUsize::new(0));
        serve_as(&s, MD_URI, served, reads.clone());
        let srv = TestHttpServer::serve(s).await;
        let client = connect(&srv.url, ProtocolChoice::Auto).await;
        let entry = client.get_skill(MD_URI).await.unwrap();
        let e = client.load_skill(&entry).await.unwrap_err();
        assert!(refused(&e), "{e}");
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        client.close().await;
    }

    // A supporting file tampered after the skill loaded is refused when read.
    let s = server();
    serve_as(
        &s,
        FORMS_URI,
        "Supporting content!\n".into(),
        Arc::default(),
    );
    let srv = TestHttpServer::serve(s).await;
    let client = connect(&srv.url, ProtocolChoice::Auto).await;
    let loaded = client
        .load_skill(&client.get_skill(MD_URI).await.unwrap())
        .await
        .unwrap();
    let e = loaded.read_file("references/FORMS.md").await.unwrap_err();
    assert!(
        e.is_mismatch() && e.to_string().contains(": digest "),
        "{e}"
    );
    client.close().await;
}

#[tokio::test]
async fn entries_that_disagree_with_the_file_are_refused() {
    let srv = TestHttpServer::serve(server()).await;
    let client = connect(&srv.url, ProtocolChoice::Auto).await;
    let good = client.get_skill(MD_URI).await.unwrap();

    // The entry's frontmatter says something the file does not (the file's digest and size
    // match, so only the comparison catches it).
    let mut fm = good.clone();
    fm.frontmatter
        .insert("description".into(), json!("Exfiltrate credentials"));
    let e = client.load_skill(&fm).await.unwrap_err();
    assert!(e.is_mismatch(), "{e}");
    assert_eq!(e.field(), Some("description"));
    let mut extra_field = good.clone();
    extra_field
        .frontmatter
        .insert("license".into(), json!("MIT"));
    let e = client.load_skill(&extra_field).await.unwrap_err();
    assert_eq!(e.field(), Some("license"), "{e}");

    let with_file = |f: &dyn Fn(&mut vellum::protocol::SkillResource)| {
        let mut e = good.clone();
        if let SkillResources::Files(files) = &mut e.resources {
            files.iter_mut().filter(|r| r.uri == MD_URI).for_each(f);
        }
        e
    };
    let digest = with_file(&|r| r.digest = format!("sha256:{}", "0".repeat(64)));
    let e = client.load_skill(&digest).await.unwrap_err();
    assert!(
        e.is_mismatch() && e.to_string().contains(": digest "),
        "{e}"
    );
    let size = with_file(&|r| r.size += 1);
    let e = client.load_skill(&size).await.unwrap_err();
    assert!(e.is_mismatch() && e.to_string().contains(" bytes, "), "{e}");
    let mut unlisted = good.clone();
    unlisted.resources = SkillResources::Files(Vec::new());
    assert!(
        client
            .load_skill(&unlisted)
            .await
            .unwrap_err()
            .is_not_listed()
    );
    // A dynamic skill has no digests, but its frontmatter is still compared.
    let mut dynamic = good.clone();
    dynamic.resources = SkillResources::Dynamic;
    assert!(client.load_skill(&dynamic).await.is_ok());
    dynamic
        .frontmatter
        .insert("name".into(), json!("something-else"));
    let e = client.load_skill(&dynamic).await.unwrap_err();
    assert_eq!(e.field(), Some("name"), "{e}");
    // The unchanged entry loads.
    assert!(client.load_skill(&good).await.is_ok());
    client.close().await;
}
