//! The snapshot of a namespace: its names found by `SCAN`, then read in batches, each batch
//! one script on the server's clock. Each name is a consistent view; the whole is not one
//! instant, as with the in-memory engine's shards. Every step is bounded by the `io_timeout`.

use std::collections::BTreeSet;
use std::future::Future;

use alkstore_kit::unavailable;
use alkstore_mem::{LockError, Snapshot, Waiting};

use crate::scripts::{SCRIPTS, ToRedisArgsDyn, failed, field, from_us};
use crate::store::Redis;

/// How many keys one `SCAN` step asks for, and how many names one script reads.
const BATCH: usize = 200;

/// `step` within the `io_timeout` of `store`.
async fn bounded<T>(
    store: &Redis,
    step: impl Future<Output = Result<T, LockError>>,
) -> Result<T, LockError> {
    let io = alkstore_kit::Protocol::config(store).io_timeout();
    tokio::time::timeout(io, step)
        .await
        .unwrap_or_else(|_| Err(unavailable(format!("redis did not answer within {io:?}"))))
}

impl Redis {
    /// The snapshot of this namespace.
    pub(crate) async fn read_snapshot(&self) -> Result<Snapshot, LockError> {
        snapshot(self).await
    }
}

/// The snapshot of `store`'s namespace.
async fn snapshot(store: &Redis) -> Result<Snapshot, LockError> {
    let names = names(store).await?;
    let mut snapshot = Snapshot::default();
    let names: Vec<String> = names.into_iter().collect();
    for batch in names.chunks(BATCH) {
        let args: Vec<&dyn ToRedisArgsDyn> =
            batch.iter().map(|n| n as &dyn ToRedisArgsDyn).collect();
        let reply: Vec<String> = bounded(store, store.run(&SCRIPTS.snapshot, "", &args)).await?;
        read_batch(&reply, &mut snapshot)?;
    }
    // Names come sorted (a `BTreeSet`), and each name's waiters in queue order.
    Ok(snapshot)
}

/// Every name that has a lock or a queue key in the namespace, sorted.
async fn names(store: &Redis) -> Result<BTreeSet<String>, LockError> {
    let prefix = store.prefix();
    let mut conn = store.connection();
    let mut names = BTreeSet::new();
    for kind in ["lock:", "queue:"] {
        let keys = format!("{prefix}{kind}");
        let pattern = format!("{}*", glob_escape(&keys));
        let mut cursor = 0u64;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(BATCH);
            // In a cluster, on the master of the namespace's slot (a keyless SCAN would go
            // to any node).
            let step = async {
                let step = conn.on_slot_of::<(u64, Vec<String>)>(prefix, &scan).await;
                step.map_err(|e| failed(&e))
            };
            let (next, found) = bounded(store, step).await?;
            names.extend(
                found
                    .iter()
                    .filter_map(|key| key.strip_prefix(&keys))
                    .map(String::from),
            );
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(names)
}

/// `text` with Redis glob's special characters escaped, for a `MATCH` pattern.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        if matches!(ch, '*' | '?' | '[' | ']' | '\\' | '^') {
            escaped.push('\\');
        }
        escaped.push(ch);
    }
    escaped
}

/// Appends one batch's reply (see `snapshot.lua`) to `snapshot`.
fn read_batch(reply: &[String], snapshot: &mut Snapshot) -> Result<(), LockError> {
    let bad = || {
        unavailable(format!(
            "unexpected reply from the snapshot script: {reply:?}"
        ))
    };
    let mut at = 0;
    while at < reply.len() {
        let name = reply.get(at).ok_or_else(bad)?;
        let owner = reply.get(at + 1).ok_or_else(bad)?;
        let (token, deadline, waiting) = (
            field(reply, at + 2)?,
            field(reply, at + 3)?,
            field(reply, at + 4)?,
        );
        if !owner.is_empty() {
            let info = alkstore_mem::LeaseInfo::new(name, owner, token, from_us(deadline));
            snapshot.held.push(info);
        }
        let waiting = usize::try_from(waiting).map_err(|_| bad())?;
        let owners = reply.get(at + 5..at + 5 + waiting).ok_or_else(bad)?;
        snapshot
            .waiting
            .extend(owners.iter().map(|owner| Waiting::new(name, owner)));
        at += 5 + waiting;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_escape_leaves_plain_text_and_escapes_specials() {
        assert_eq!(glob_escape("{alk}:lock:"), "{alk}:lock:");
        assert_eq!(glob_escape("{a*b?[c]\\^}:"), "{a\\*b\\?\\[c\\]\\\\\\^}:");
    }

    #[test]
    fn batches_read_leases_and_waiters_in_order() {
        let reply: Vec<String> = [
            "a", "w1", "7", "9000", "2", "x", "y", "b", "", "0", "0", "1", "z",
        ]
        .map(String::from)
        .to_vec();
        let mut snapshot = Snapshot::default();
        read_batch(&reply, &mut snapshot).unwrap();
        assert_eq!(snapshot.held.len(), 1);
        assert_eq!(
            (snapshot.held[0].name(), snapshot.held[0].token()),
            ("a", 7)
        );
        let waiting: Vec<_> = snapshot
            .waiting
            .iter()
            .map(|w| (w.name.as_str(), w.owner.as_str()))
            .collect();
        assert_eq!(waiting, [("a", "x"), ("a", "y"), ("b", "z")]);
        let truncated = &reply[..6];
        assert!(read_batch(truncated, &mut Snapshot::default()).is_err());
    }
}
