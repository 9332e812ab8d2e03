//! What runs beside the store's connection: [`RedisListener`], the pub/sub subscriber on
//! `{ns}:wake` that the kit runs (and restarts) for wake-ups, and [`RedisFallback`], a
//! connection of its own for a clean-up that runs with no runtime of the store's.

use std::time::Duration;

use alkstore_kit::{Fallback, Job, Listener, WakeSink};
use futures_lite::StreamExt;

use crate::config::RedisConfig;
use crate::scripts::{SCRIPTS, ToRedisArgsDyn, call};
use crate::sentinel::RECHECK;
use crate::source::Source;

/// The wake-up source of a [`RedisLocks`](crate::RedisLocks): a subscription to
/// `{ns}:wake`, whose messages are the id of a waiter handed a lease, or `*` (everybody
/// re-checks: a force-release, a moved test clock). Pub/sub is at most once; the kit wakes
/// every sleeper after each (re)subscription, and each sleeper also wakes at its own bounded
/// deadline, so a lost message costs time, never a lease. If the subscription cannot be
/// made (Redis unreachable, or a user without channel permission), sleepers still wake at
/// those deadlines.
#[derive(Debug)]
pub struct RedisListener {
    source: Source,
    channel: String,
    io_timeout: Duration,
}

impl RedisListener {
    pub(crate) fn new(source: Source, channel: String, config: &RedisConfig) -> Self {
        RedisListener {
            source,
            channel,
            io_timeout: config.io_timeout(),
        }
    }
}

impl Listener for RedisListener {
    async fn listen<'a>(&'a mut self, sink: &'a dyn WakeSink) {
        let subscribed = tokio::time::timeout(self.io_timeout, async {
            // Through sentinels: the master named now (after a failover, the new one); in a
            // cluster, a node (each in turn: `PUBLISH` reaches subscribers on every node).
            let client = self.source.subscriber_client().await?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&self.channel).await?;
            let addr = client.get_connection_info().addr().to_string();
            Ok::<_, redis::RedisError>((pubsub, addr))
        })
        .await;
        let Ok(Ok((pubsub, addr))) = subscribed else {
            return;
        };
        sink.subscribed();
        let mut messages = pubsub.into_on_message();
        let Source::Sentinel(sentinels) = &self.source else {
            while let Some(message) = messages.next().await {
                deliver(sink, &message);
            }
            return;
        };
        // Through sentinels, the subscription ends once they name another master (a demoted
        // master that still answers publishes nothing of the new one's), and the kit
        // subscribes again, on the new one.
        loop {
            tokio::select! {
                message = messages.next() => match message {
                    Some(message) => deliver(sink, &message),
                    None => return,
                },
                () = tokio::time::sleep(RECHECK) => {
                    let named = tokio::time::timeout(self.io_timeout, sentinels.master()).await;
                    let moved = named.is_ok_and(|named| {
                        named.is_ok_and(|c| c.get_connection_info().addr().to_string() != addr)
                    });
                    if moved {
                        return;
                    }
                }
            }
        }
    }
}

/// Hands a message's payload (a waiter's id, or `*`) to the kit.
fn deliver(sink: &dyn WakeSink, message: &redis::Msg) {
    if let Ok(text) = std::str::from_utf8(message.get_payload_bytes()) {
        sink.deliver(text);
    }
}

/// Runs a clean-up script (a dropped lock's `release.lua`, a dropped waiter's `cancel.lua`)
/// on a connection of its own, for the kit's helper thread when the store's runtime is gone.
#[derive(Debug)]
pub struct RedisFallback {
    source: Source,
    prefix: String,
    mark_ms: u64,
}

impl RedisFallback {
    pub(crate) fn new(source: Source, prefix: String, config: &RedisConfig) -> Self {
        RedisFallback {
            source,
            prefix,
            mark_ms: config.release_mark_ms(),
        }
    }
}

impl Fallback for RedisFallback {
    async fn run(self, job: Job) -> bool {
        let cluster = matches!(self.source, Source::Cluster(_));
        let mark_ms = &self.mark_ms;
        let (script, name, args): (_, _, Vec<&dyn ToRedisArgsDyn>) = match &job {
            Job::Release { name, token, rid } => {
                (&SCRIPTS.release, name, vec![token, rid, mark_ms])
            }
            Job::Withdraw { name, id, .. } => (&SCRIPTS.cancel, name, vec![id]),
        };
        let Ok(mut conn) = self.source.connection().await else {
            return false;
        };
        call::<redis::Value>(&mut conn, script, &self.prefix, cluster, name, &args)
            .await
            .is_ok()
    }
}
