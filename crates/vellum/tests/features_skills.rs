//! Agent Skills (the skills extension, SEP-2640) served over loopback HTTP on the 2026-07-28
//! wire: the extension in `server/discover`, `skills/list` page by page, `skills/get`, the
//! files as `skill://` resources (digests and sizes of their bytes), and
//! `resources/directory/read`.
#![cfg(feature = "skills")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use vellum::prelude::*;
use vellum::server::SkillFiles;
use vellum_testkit::http::{Modern, TestHttpServer};

const SKILL: &str = "---\nname: refunds\ndescription: Process refunds per policy\n---\n# Refunds\n";

fn server() -> Server {
    let s = Server::new(
        Implementation::new("skills", "1"),
        ServerOptions::default().with_page_size(1),
    );
    let refunds = SkillFiles::new("acme", SKILL)
        .unwrap()
        .with_file("references/policy.md", "30 days.\n")
        .unwrap()
        .with_file("logo.png", vec![0x89, b'P', b'N', b'G', 0xff])
        .unwrap();
    s.add_skill(refunds).unwrap();
    s.add_skill(
        SkillFiles::new("", "---\nname: notes\ndescription: Release notes\n---\n").unwrap(),
    )
    .unwrap();
    s
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test]
async fn skills_are_listed_fetched_read_and_browsed() {
    let srv = TestHttpServer::serve(server()).await;
    let c = Modern::new(&srv.url);
    let d = c.request(1, "server/discover", json!({})).await;
    let caps = &d.result()["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{caps}"
    );
    assert!(caps["resources"].is_object(), "{caps}");

    // skills/list, one whole entry per page (page size 1).
    let mut entries = Vec::new();
    let mut params = json!({});
    for _ in 0..5 {
        let page = c.request(2, "skills/list", params.clone()).await;
        let r = page.result().clone();
        assert!(r["ttlMs"].is_u64(), "cacheable: {r}");
        entries.extend(r["skills"].as_array().unwrap().iter().cloned());
        match r.get("nextCursor") {
            Some(Value::String(next)) => params = json!({"cursor": next}),
            _ => break,
        }
    }
    let uris: Vec<&str> = entries.iter().map(|e| e["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        ["skill://acme/refunds/SKILL.md", "skill://notes/SKILL.md"]
    );
    let refunds = &entries[0];
    assert_eq!(refunds["frontmatter"]["name"], "refunds");
    let files = refunds["resources"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{refunds}");
    let manifest = files
        .iter()
        .find(|f| f["uri"] == "skill://acme/refunds/SKILL.md")
        .unwrap();
    assert_eq!(manifest["digest"], sha256(SKILL.as_bytes()));
    assert_eq!(manifest["size"], SKILL.len());

    // skills/get: the same entry; an unknown URI is -32602.
    let got = c
        .request(
            3,
            "skills/get",
            json!({"uri": "skill://acme/refunds/SKILL.md"}),
        )
        .await;
    assert_eq!(&got.result()["skill"], refunds);
    let unknown = c
        .request(4, "skills/get", json!({"uri": "skill://nope/SKILL.md"}))
        .await;
    assert_eq!((unknown.status, unknown.error_code()), (400, -32602));

    // The files are resources: text as text, other bytes as Base64 of the digested bytes.
    let md = c
        .request(
            5,
            "resources/read",
            json!({"uri": "skill://acme/refunds/SKILL.md"}),
        )
        .await;
    let content = &md.result()["contents"][0];
    assert_eq!(content["mimeType"], "text/markdown");
    assert_eq!(content["text"], SKILL);
    let png = c
        .request(
            6,
            "resources/read",
            json!({"uri": "skill://acme/refunds/logo.png"}),
        )
        .await;
    assert_eq!(png.result()["contents"][0]["blob"], "iVBOR/8=");
    let listed = c.request(7, "resources/list", json!({})).await;
    assert!(listed.result()["resources"].is_array());

    // Directories: direct children, sub-directories typed inode/directory, paginated.
    let mut children = Vec::new();
    let mut params = json!({"uri": "skill://acme/refunds"});
    for _ in 0..5 {
        let page = c
            .request(8, "resources/directory/read", params.clone())
            .await;
        let r = page.result().clone();
        children.extend(r["resources"].as_array().unwrap().iter().cloned());
        match r.get("nextCursor") {
            Some(Value::String(next)) => {
                params = json!({"uri": "skill://acme/refunds", "cursor": next})
            }
            _ => break,
        }
    }
    let kinds: Vec<(&str, &str)> = children
        .iter()
        .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("skill://acme/refunds/SKILL.md", "text/markdown"),
            ("skill://acme/refunds/logo.png", "image/png"),
            ("skill://acme/refunds/references", "inode/directory"),
        ]
    );
    let sub = c
        .request(
            9,
            "resources/directory/read",
            json!({"uri": "skill://acme/refunds/references"}),
        )
        .await;
    assert_eq!(
        sub.result()["resources"][0]["uri"],
        "skill://acme/refunds/references/policy.md"
    );
    for not_dir in ["skill://acme/refunds/SKILL.md", "skill://acme", "test://x"] {
        let a = c
            .request(10, "resources/directory/read", json!({"uri": not_dir}))
            .await;
        assert_eq!((a.status, a.error_code()), (400, -32602), "{not_dir}");
    }
}

#[tokio::test]
async fn removing_a_skill_withdraws_its_files() {
    let s = server();
    assert!(s.remove_skill("skill://acme/refunds/SKILL.md"));
    assert!(!s.remove_skill("skill://acme/refunds/SKILL.md"));
    let srv = TestHttpServer::serve(s).await;
    let c = Modern::new(&srv.url);
    let list = c.request(1, "skills/list", json!({})).await;
    assert_eq!(list.result()["skills"][0]["uri"], "skill://notes/SKILL.md");
    let gone = c
        .request(
            2,
            "resources/read",
            json!({"uri": "skill://acme/refunds/SKILL.md"}),
        )
        .await;
    assert_eq!(gone.status, 400);
}
