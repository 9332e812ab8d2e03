//! One transaction: its event handler, its body (decode, decide, write) and its future.

use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::rc::Rc;

use alkstore_mem::LockError;
use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Event, IdbRequest, IdbTransaction};

use super::basics::{Handler, LOCKS, META, describe};
use super::channel::Channel;
use super::clock::EngineClock;
use super::codec;
use super::presence::Presence;
use super::slot::Slot;
use super::watchdog::Watched;
use crate::sys::{Answer, OnCommit, Reading, Rows, Scope, TxError};
use crate::tx::ops::{Ctx, Notice};
use crate::tx::row::Meta;
use crate::{codec_err, unavailable};

pub(crate) type Body<R> = Box<dyn FnOnce(&mut Rows, &mut Ctx<'_>) -> R>;

/// A transaction to run: its rows, its body, what runs once it committed.
pub(crate) struct Job<R> {
    pub(crate) scope: Scope,
    pub(crate) body: Body<R>,
    pub(crate) on_commit: Option<OnCommit<R>>,
}

/// What the success handler needs: the job and the reads it decides on.
struct Sent<R> {
    job: Job<R>,
    requests: Vec<IdbRequest>,
}

/// What the body decided, kept until the commit: the answer, the clock it read, what to post,
/// what to run on the answer.
type Decided<R> = (R, Reading, Vec<Notice>, Option<OnCommit<R>>);

/// What a transaction tells the database it runs on as it ends: this context runs one
/// transaction at a time (see `idb.rs`), so the next one may start.
pub(crate) trait Pipeline {
    /// The transaction ended (committed or aborted): start the next one.
    fn finished(&self);
    /// The transaction ran out of its `io_timeout` (the database is stalled): the ones
    /// queued behind it in this context fail with the same error rather than wait too.
    fn timed_out(&self, error: &TxError);
}

/// One transaction's state, shared by its handler, its future and the watchdog.
pub(crate) struct TxState<R> {
    slot: Rc<Slot<Answer<R>>>,
    /// Told when the transaction ends; holds the database open until then.
    pipeline: Rc<dyn Pipeline>,
    tx: IdbTransaction,
    io: Duration,
    clock: Rc<EngineClock>,
    presence: Rc<Presence>,
    sent: RefCell<Option<Sent<R>>>,
    /// The body's answer, handed out once the transaction committed.
    pending: RefCell<Option<Decided<R>>>,
    /// Why the body refused to write (a malformed row, a refusal): reported instead of the
    /// abort.
    failed: RefCell<Option<LockError>>,
    finished: Cell<bool>,
    handler: RefCell<Option<Handler>>,
}

impl<R> Watched for TxState<R> {
    fn finished(&self) -> bool {
        self.finished.get()
    }

    fn expire(&self) {
        // Aborting a transaction that has not committed guarantees it changed nothing; one
        // that is already committing cannot be aborted, and its answer is about to come.
        if !self.finished.get() && self.tx.abort().is_ok() {
            let error = TxError::timed_out(unavailable(format!(
                "IndexedDB did not finish a transaction within {:?} (another context of this \
                 origin may be stalled inside one)",
                self.io
            )));
            self.pipeline.timed_out(&error);
            self.slot.fill(Err(error));
        }
    }

    fn abandon(&self) {
        if !self.finished.get() && self.tx.abort().is_ok() {
            self.slot.fill(Err(TxError::failed(unavailable(
                "the page is unloading: its transaction was aborted",
            ))));
        }
    }
}

/// What a transaction takes from its database: the channel its notices go out on, the
/// clock it reads and records, the presence it checks, and its `io_timeout`.
pub(crate) struct TxEnv<'a> {
    pub(crate) pipeline: Rc<dyn Pipeline>,
    pub(crate) channel: &'a Channel,
    pub(crate) clock: &'a Rc<EngineClock>,
    pub(crate) presence: &'a Rc<Presence>,
    pub(crate) io: Duration,
}

/// Wires the handler of `tx`, whose reads are `requests`; its answer goes to `slot`.
pub(crate) fn run<R: 'static>(
    tx: IdbTransaction,
    job: Job<R>,
    requests: Vec<IdbRequest>,
    slot: Rc<Slot<Answer<R>>>,
    env: TxEnv<'_>,
) -> Rc<TxState<R>> {
    let TxEnv {
        pipeline,
        channel,
        clock,
        presence,
        io,
    } = env;
    let last = requests.last().cloned();
    let state = Rc::new(TxState {
        slot,
        pipeline,
        tx: tx.clone(),
        io,
        clock: Rc::clone(clock),
        presence: Rc::clone(presence),
        sent: RefCell::new(Some(Sent { job, requests })),
        pending: RefCell::new(None),
        failed: RefCell::new(None),
        finished: Cell::new(false),
        handler: RefCell::new(None),
    });
    let handler = {
        let state = Rc::clone(&state);
        let channel = channel.clone();
        Closure::<dyn FnMut(Event)>::new(move |event: Event| {
            on_event(&state, &channel, &event.type_());
        })
    };
    let f = handler.as_ref().unchecked_ref();
    if let Some(last) = last {
        last.set_onsuccess(Some(f));
    }
    tx.set_oncomplete(Some(f));
    tx.set_onabort(Some(f));
    *state.handler.borrow_mut() = Some(handler);
    state
}

fn on_event<R>(state: &TxState<R>, channel: &Channel, kind: &str) {
    match kind {
        "success" => {
            let Some(sent) = state.sent.borrow_mut().take() else {
                return;
            };
            if let Err(err) = decide(state, sent) {
                *state.failed.borrow_mut() = Some(err);
                let _ = state.tx.abort();
            }
        }
        "complete" => {
            state.finished.set(true);
            let done = state.pending.borrow_mut().take();
            match done {
                Some((answer, reading, notices, on_commit)) => {
                    for notice in &notices {
                        channel.post(notice);
                    }
                    if let Some(on_commit) = on_commit {
                        on_commit(&answer);
                    }
                    state.slot.fill(Ok((answer, reading)));
                }
                None => state.slot.fill(Err(TxError::failed(unavailable(
                    "IndexedDB committed a transaction without an answer",
                )))),
            }
            // Dropped while it runs: wasm-bindgen frees it when this call returns.
            state.handler.borrow_mut().take();
            state.pipeline.finished();
        }
        "abort" => {
            state.finished.set(true);
            let err = state.failed.borrow_mut().take().unwrap_or_else(|| {
                let why = state
                    .tx
                    .error()
                    .map_or_else(|| "aborted".into(), |e| describe(&e));
                unavailable(format!("IndexedDB transaction failed: {why}"))
            });
            state.slot.fill(Err(TxError::failed(err)));
            state.handler.borrow_mut().take();
            state.pipeline.finished();
        }
        _ => {}
    }
}

/// The body of the transaction: decodes what was read, decides, writes what changed.
fn decide<R>(state: &TxState<R>, sent: Sent<R>) -> Result<(), LockError> {
    let Sent { job, requests } = sent;
    let result = |r: &IdbRequest| {
        r.result()
            .map_err(|e| unavailable(format!("IndexedDB read failed: {}", describe(&e))))
    };
    let mut meta =
        codec::decode_meta(&result(&requests[0])?).map_err(|e| codec_err("clock", &e))?;
    let mut rows: Rows = Vec::new();
    match &job.scope {
        Scope::Row(name) => {
            let value = result(&requests[1])?;
            let row = codec::decode_row(&value).map_err(|e| codec_err(name, &e))?;
            rows.push((name.clone(), row));
        }
        Scope::All => {
            let values: Array = result(&requests[1])?.unchecked_into();
            for value in values.iter() {
                let name = codec::row_name(&value).map_err(|e| codec_err("(unnamed)", &e))?;
                let row = codec::decode_row(&value).map_err(|e| codec_err(&name, &e))?;
                rows.push((name, row));
            }
        }
        Scope::Meta => {}
    }
    let before_meta = meta;
    let before_rows = rows.clone();
    let (clocks, mono) = state.clock.read();
    let refusal = |why: String| match &job.scope {
        Scope::Row(name) => unavailable(format!("lock {name:?}: {why}")),
        _ => unavailable(why),
    };
    let dead = state.presence.dead();
    let mut cx = Ctx::new(&mut meta, clocks)
        .map_err(refusal)?
        .with_contexts(state.presence.me(), &dead);
    let answer = (job.body)(&mut rows, &mut cx);
    if let Some(why) = cx.refused.take() {
        return Err(refusal(why));
    }
    let notices = core::mem::take(&mut cx.notices);
    let (now, lapse_seen) = (cx.now, cx.lapse_seen);
    drop(cx);
    drop(dead);
    state.clock.record(now, mono, meta.offset);
    let write_clock = meta.token != before_meta.token
        || meta.offset != before_meta.offset
        || (meta.floor != before_meta.floor && lapse_seen);
    write(&state.tx, &before_rows, &rows, write_clock.then_some(&meta))?;
    *state.pending.borrow_mut() = Some((answer, Reading { now }, notices, job.on_commit));
    Ok(())
}

/// Puts (or deletes) the rows that changed, and the clock row when asked to.
fn write(
    tx: &IdbTransaction,
    before: &Rows,
    after: &Rows,
    clock: Option<&Meta>,
) -> Result<(), LockError> {
    let fail = |e: JsValue| unavailable(format!("IndexedDB write failed: {}", describe(&e)));
    let mut locks = None;
    for (i, (name, row)) in after.iter().enumerate() {
        if before.get(i).map(|(_, r)| r) == Some(row) {
            continue;
        }
        if locks.is_none() {
            locks = Some(tx.object_store(LOCKS).map_err(fail)?);
        }
        let Some(locks) = &locks else { continue };
        if row.is_empty() {
            locks.delete(&JsValue::from_str(name)).map_err(fail)?;
        } else {
            locks.put(&codec::encode_row(name, row)).map_err(fail)?;
        }
    }
    if let Some(clock) = clock {
        let meta = tx.object_store(META).map_err(fail)?;
        meta.put(&codec::encode_meta(clock)).map_err(fail)?;
    }
    Ok(())
}

/// The future of one transaction: its body's answer once it committed, or why it gave
/// none. The transaction is sent when it is made (or, while the connection is being opened
/// again, as soon as it is open), whether or not this is polled: dropping it leaves the
/// transaction to finish on its own.
#[must_use = "the transaction runs anyway; the future only waits for its answer"]
pub(crate) struct TxFuture<R: 'static>(pub(crate) Rc<Slot<Answer<R>>>);

impl<R> Future for TxFuture<R> {
    type Output = Answer<R>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.poll(cx)
    }
}
