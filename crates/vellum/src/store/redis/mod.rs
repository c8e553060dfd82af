//! Redis behind the stores and the bus, so several server instances share sessions (no
//! sticky routing needed) and sessions survive restarts.
//!
//! One [`Redis`] handle per process gives the [`EventStore`](crate::store::EventStore), the
//! [`SessionStore`](crate::store::SessionStore) and the [`MessageBus`](crate::store::MessageBus):
//! [`Redis::event_store`], [`Redis::session_store`], [`Redis::bus`]. Layout (all keys of a session share the hash tag `{session}`):
//!
//! | key | type | what |
//! |---|---|---|
//! | `P:{S}:session` | string | the session record (JSON), expiring after the session TTL |
//! | `P:{S}:s:N` | stream | events of stream N (`0` = standalone), ids `0-seq`, capped |
//! | `P:{S}:m:N` | hash | stream N's writer instance, requests, last seq, done flag |
//! | `P:{S}:streams`, `P:{S}:next` | list, counter | the session's streams (capped) |
//! | `P:i:INSTANCE` | string | an instance's heartbeat (expires when it dies) |
//! | `P:bus` | pub/sub | the bus between instances |
//!
//! Every key expires with its session, so an abandoned session leaves nothing behind.
//! Events are kept in Redis Streams; pub/sub only carries the bus (messages are small and
//! re-sent by design where it matters: a lost `SessionChanged` is repaired by the next).
//!
//! One URL names one node (`redis://`), a Redis Cluster (`redis-cluster://`) or the master
//! that Redis Sentinels name (`redis-sentinel://`): `target.rs` parses them all. Failovers
//! and partitions are survived: the connection's supervisor replaces the link when the
//! topology changes or the link stays broken, every operation is bounded by the store
//! timeout ([`RedisOptions::command_timeout`]) and retried on the fresh link.
//!
//! Where the code is: the handle (`connection.rs`), the URLs and links (`target.rs`,
//! `link.rs`), the supervisor (`supervisor.rs`), running operations (`call.rs`), the Lua
//! scripts (`scripts.rs`), and each store beside its trait (`store/event_store/redis.rs`, `store/session_store/redis.rs`,
//! `store/bus/redis.rs`).

mod call;
mod connection;
mod link;
pub(in crate::store) mod scripts;
mod supervisor;
mod target;

pub(in crate::store) use call::{Call, backend, retrying};
pub(in crate::store) use connection::Envelope;
pub use connection::{Redis, RedisOptions};
pub(in crate::store) use link::{Conn, Link};
pub use target::{CLUSTER_SCHEME, SENTINEL_SCHEME, URL_FORMS, is_redis_url};

pub use super::bus::redis::RedisBus;
pub use super::event_store::redis::RedisEventStore;
pub use super::session_store::redis::RedisSessionStore;
pub use super::task_store::redis::RedisTaskStore;
