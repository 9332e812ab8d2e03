//! Granting a lease: [`LockTable::grant`] and what it is given ([`LeaseSource`]: a
//! borrowed name and owner, or a waiting request's own text) and answers ([`Grant`]).

use core::time::Duration;

use super::pool::take_token;
use super::{LockTable, Slot};
use crate::error::LockError;
use crate::lease::{LeaseInfo, Text};
use crate::time::{Timestamp, live};

impl LockTable {
    /// Grants the lease described by `source` (its name and owner, checked already) if the
    /// name is free; `hash` is the name's hash in this table. A refused source is handed
    /// back, so that a waiting request keeps its text. The lookup and the busy answer are
    /// inlined into the caller; the grant itself is not.
    #[inline]
    pub(crate) fn grant<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        ttl: Duration,
        now: Timestamp,
    ) -> Grant<S> {
        // Clamped, but remembered only once the request passed its checks: a refused request
        // changes nothing, not even the table's notion of now.
        let now = self.clamp(now);
        let name = source.name();
        let found = self
            .entries
            .find_bucket_index(hash, |e| e.hash == hash && e.text.has_name(name));
        if let Some(index) = found {
            if (self.entries.get_bucket(index)).is_some_and(|e| live(e.deadline, now)) {
                self.latest = now;
                self.tick(now);
                return Grant::Busy(source);
            }
        }
        self.grant_free(hash, source, ttl, now, found)
    }

    /// `grant` of a name that is free at `now`: reuses its lapsed slot (at bucket `found`)
    /// or inserts a new one.
    #[inline(never)]
    fn grant_free<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        ttl: Duration,
        now: Timestamp,
        found: Option<usize>,
    ) -> Grant<S> {
        self.latest = now;
        // Never lapsed on grant: `ttl` is not zero, and a deadline that saturates at `MAX`
        // never lapses.
        let deadline = now.saturating_add(ttl);
        match found.and_then(|index| self.entries.get_bucket_mut(index)) {
            // The previous lease lapsed: reuse its slot.
            Some(slot) => {
                let token = take_token(&self.pool, &mut self.next_token);
                let name_len = source.name().len();
                let text = source.into_text();
                slot.token = token;
                slot.deadline = deadline;
                // The old text goes (inline: nothing to free; shared: perhaps still a handle's).
                let lease = LeaseInfo::from_text(text.clone(), name_len, hash, token, deadline);
                slot.text = text;
                self.earliest_deadline = self.earliest_deadline.min(deadline);
                self.tick(now);
                Grant::Granted(lease)
            }
            None => {
                if self.entries.len() >= self.sweep_at {
                    self.sweep(now);
                }
                if !self.reserve_entry() {
                    return self.grant_when_full(hash, source, deadline, now);
                }
                Grant::Granted(self.insert_new(hash, source, deadline))
            }
        }
    }

    /// Inserts the lease of a name known to be absent, its entry counted already.
    fn insert_new<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        deadline: Timestamp,
    ) -> LeaseInfo {
        let token = take_token(&self.pool, &mut self.next_token);
        let name_len = source.name().len();
        let text = source.into_text();
        let lease = LeaseInfo::from_text(text.clone(), name_len, hash, token, deadline);
        let slot = Slot {
            text,
            hash,
            token,
            deadline,
        };
        self.entries.insert_unique(hash, slot, |e| e.hash);
        self.earliest_deadline = self.earliest_deadline.min(deadline);
        lease
    }

    /// `grant` of a new name while [`Config::max_locks`](crate::Config::max_locks) entries
    /// exist: sweep if a lease may have lapsed since the last sweep, then insert, or refuse if
    /// the table is still full.
    #[cold]
    fn grant_when_full<S: LeaseSource>(
        &mut self,
        hash: u64,
        source: S,
        deadline: Timestamp,
        now: Timestamp,
    ) -> Grant<S> {
        if now >= self.earliest_deadline {
            self.sweep(now);
        }
        if !self.reserve_entry() {
            let err = LockError::CapacityExceeded {
                name: source.name().into(),
                max: self.config.max_locks().unwrap_or(usize::MAX),
            };
            return Grant::Refused(err, source);
        }
        Grant::Granted(self.insert_new(hash, source, deadline))
    }
}

/// Where a grant's name and owner come from.
pub(crate) trait LeaseSource {
    /// The lock's name.
    fn name(&self) -> &str;
    /// The lease's `name\0owner` text, built or handed over only when granted.
    fn into_text(self) -> Text;
}

/// A checked name and owner borrowed from the caller: the text is built only if granted.
pub(crate) struct Joined<'a> {
    pub(crate) name: &'a str,
    pub(crate) owner: &'a str,
}

impl LeaseSource for Joined<'_> {
    #[inline]
    fn name(&self) -> &str {
        self.name
    }

    #[inline]
    fn into_text(self) -> Text {
        Text::join(self.name, self.owner)
    }
}

/// A lease text made in advance (by a waiting request), the name being its first
/// `name_len` bytes.
#[derive(Debug)]
pub(crate) struct OwnedText {
    pub(crate) text: Text,
    pub(crate) name_len: usize,
}

impl OwnedText {
    /// No text: what a waiter keeps while the table holds its text.
    pub(crate) fn empty() -> Self {
        OwnedText {
            text: Text::empty(),
            name_len: 0,
        }
    }

    /// The owner part of the text.
    pub(crate) fn owner(&self) -> &str {
        self.text
            .as_str()
            .get(self.name_len + 1..)
            .unwrap_or_default()
    }
}

impl LeaseSource for OwnedText {
    fn name(&self) -> &str {
        self.text.as_str().get(..self.name_len).unwrap_or_default()
    }

    fn into_text(self) -> Text {
        self.text
    }
}

/// What [`LockTable::grant`] did.
pub(crate) enum Grant<S> {
    /// Granted; the table owns the text now.
    Granted(LeaseInfo),
    /// A live lease holds the name; the source is handed back.
    Busy(S),
    /// The name is free but the grant is refused (a full table, or a name that fails the
    /// checks its source left to the grant); the source is handed back.
    Refused(LockError, S),
}

impl<S> Grant<S> {
    /// `try_lock`'s answer: granted, busy (`None`) or the error.
    pub(crate) fn into_result(self) -> Result<Option<LeaseInfo>, LockError> {
        match self {
            Grant::Granted(lease) => Ok(Some(lease)),
            Grant::Busy(_) => Ok(None),
            Grant::Refused(err, _) => Err(err),
        }
    }
}
