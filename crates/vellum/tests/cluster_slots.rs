//! Every Redis script of the stores touches one hash slot: each store operation is run
//! against a real Redis Cluster (where a script reaching a key of another slot, or running
//! on a node that does not own its keys, fails with CROSSSLOT or MOVED), and afterwards every
//! key the session left is checked to hash to the session's slot (`CLUSTER KEYSLOT`).
//!
//! The cluster is `VELLUM_TEST_REDIS_CLUSTER` (`scripts/test.sh` starts one); outside CI the
//! test starts its own when that is unset.

#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use vellum::protocol::{ClientCapabilities, ProtocolVersion, RequestId};
use vellum::store::redis::{Redis, RedisOptions};
use vellum::store::{EventId, EventStore, MessageBus, SessionRecord, SessionStore, StreamId};
use vellum_testkit::redis::RedisCluster;

fn slot(port: u16, key: &str) -> u64 {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "cluster", "keyslot", key])
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_script_touches_one_slot() {
    let cluster = RedisCluster::get();
    let mut options = RedisOptions::default();
    let mut raw = [0u8; 4];
    getrandom::fill(&mut raw).unwrap();
    options.prefix = format!("vslot{}", u32::from_le_bytes(raw));
    let prefix = options.prefix.clone();
    let redis = Redis::connect(&cluster.url(), options).await.unwrap();
    assert!(redis.is_cluster());
    let sessions = redis.session_store();
    let events = redis.event_store();

    // Sessions spread over the slots (and so over the three masters).
    for n in 0..12 {
        let sid = format!("session-{n}");
        let record = SessionRecord::new(
            ProtocolVersion::DEFAULT_LEGACY,
            ClientCapabilities::default(),
        );
        sessions
            .create(&sid, &record, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(sessions.load(&sid).await.unwrap().is_some());
        assert!(sessions.save(&sid, &record).await.unwrap());
        let s = events
            .open_stream(&sid, &[RequestId::Number(1)])
            .await
            .unwrap();
        let first = events
            .append(&sid, s, Bytes::from_static(b"one"))
            .await
            .unwrap();
        events
            .append(&sid, s, Bytes::from_static(b"two"))
            .await
            .unwrap();
        events
            .append(
                &sid,
                StreamId::STANDALONE,
                Bytes::from_static(b"standalone"),
            )
            .await
            .unwrap();
        let replayed = events.replay_after(&sid, first).await.unwrap();
        assert_eq!(replayed.len(), 1, "{n}");
        events.close_stream(&sid, s).await.unwrap();
        // Following a complete stream reads it and checks its state (two slots: the
        // writer's heartbeat is not the session's).
        let mut follow = events
            .follow(&sid, EventId { stream: s, seq: 0 })
            .expect("Redis follows");
        use futures_util::StreamExt as _;
        let mut got = 0;
        while let Some(ev) = follow.next().await {
            ev.unwrap();
            got += 1;
        }
        assert_eq!(got, 2);
        assert!(sessions.touch(&sid, Duration::from_secs(60)).await.unwrap());

        // Every key the session has hashes to one slot.
        let port = cluster.ports()[0];
        let tag = slot(port, &sid);
        let keys = cluster.keys(&format!("{prefix}:{{{sid}}}*"));
        assert!(keys.len() >= 5, "{keys:?}");
        for k in &keys {
            assert_eq!(slot(port, k), tag, "{k} is outside the session's slot");
        }
        events.session_closed(&sid).await.unwrap();
        assert!(sessions.delete(&sid).await.unwrap());
        assert!(cluster.keys(&format!("{prefix}:{{{sid}}}*")).is_empty());
    }

    // The bus (sharded pub/sub) reaches a second connection.
    let other = Redis::connect(&cluster.url(), {
        let mut o = RedisOptions::default();
        o.prefix = prefix.clone();
        o
    })
    .await
    .unwrap();
    let mut rx = other.bus().subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        redis
            .bus()
            .publish(vellum::store::BusMessage::SessionChanged {
                session: "bus-check".into(),
            })
            .await
            .unwrap();
        // The subscription may still be on its way: publish again until it is heard.
        match tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
            Ok(Ok(m)) => {
                assert_eq!(m.session(), "bus-check");
                break;
            }
            _ => assert!(tokio::time::Instant::now() < deadline, "the bus is silent"),
        }
    }
}
