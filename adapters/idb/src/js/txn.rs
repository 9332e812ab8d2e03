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

use super::channel::Channel;
use super::codec;
use super::idb::{Handler, LOCKS, META, Slot, date_now_us, describe};
use super::watchdog::Watched;
use crate::sys::{Reading, Rows, Scope};
use crate::tx::ops::{Ctx, Notice};
use crate::tx::row::Meta;
use crate::{codec_err, unavailable};

/// A transaction's answer: the body's, with the clock it read.
pub(crate) type Answer<R> = Result<(R, Reading), LockError>;

pub(crate) type Body<R> = Box<dyn FnOnce(&mut Rows, &mut Ctx<'_>) -> R>;

/// What the success handler needs: the body and the reads it decides on.
pub(crate) struct Job<R> {
    pub(crate) body: Body<R>,
    pub(crate) scope: Scope,
    pub(crate) requests: Vec<IdbRequest>,
}

/// One transaction's state, shared by its handler, its future and the watchdog.
pub(crate) struct TxState<R> {
    slot: Rc<Slot<Result<(R, Reading), LockError>>>,
    tx: IdbTransaction,
    io: Duration,
    job: RefCell<Option<Job<R>>>,
    /// The body's answer, handed out once the transaction committed.
    pending: RefCell<Option<(R, Reading, Vec<Notice>)>>,
    /// Why the body refused to write (a malformed row): reported instead of the abort.
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
            self.slot.fill(Err(unavailable(format!(
                "IndexedDB did not finish a transaction within {:?} (another context of this \
                 origin may be stalled inside one)",
                self.io
            ))));
        }
    }
}

/// Wires the handler of `tx`, whose reads are `job.requests`; the future of its answer.
pub(crate) fn run<R: 'static>(
    tx: IdbTransaction,
    job: Job<R>,
    channel: &Channel,
    io: Duration,
) -> (TxFuture<R>, Rc<TxState<R>>) {
    let last = job.requests.last().cloned();
    let state = Rc::new(TxState {
        slot: Slot::new(),
        tx: tx.clone(),
        io,
        job: RefCell::new(Some(job)),
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
    (TxFuture::Running(Rc::clone(&state.slot)), state)
}

fn on_event<R>(state: &TxState<R>, channel: &Channel, kind: &str) {
    match kind {
        "success" => {
            let Some(job) = state.job.borrow_mut().take() else {
                return;
            };
            if let Err(err) = decide(state, job) {
                *state.failed.borrow_mut() = Some(err);
                let _ = state.tx.abort();
            }
        }
        "complete" => {
            state.finished.set(true);
            let done = state.pending.borrow_mut().take();
            match done {
                Some((answer, reading, notices)) => {
                    for notice in &notices {
                        channel.post(notice);
                    }
                    state.slot.fill(Ok((answer, reading)));
                }
                None => state.slot.fill(Err(unavailable(
                    "IndexedDB committed a transaction without an answer",
                ))),
            }
            // Dropped while it runs: wasm-bindgen frees it when this call returns.
            state.handler.borrow_mut().take();
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
            state.slot.fill(Err(err));
            state.handler.borrow_mut().take();
        }
        _ => {}
    }
}

/// The body of the transaction: decodes what was read, decides, writes what changed.
fn decide<R>(state: &TxState<R>, job: Job<R>) -> Result<(), LockError> {
    let result = |r: &IdbRequest| {
        r.result()
            .map_err(|e| unavailable(format!("IndexedDB read failed: {}", describe(&e))))
    };
    let mut meta =
        codec::decode_meta(&result(&job.requests[0])?).map_err(|e| codec_err("clock", &e))?;
    let mut rows: Rows = Vec::new();
    match &job.scope {
        Scope::Row(name) => {
            let value = result(&job.requests[1])?;
            let row = codec::decode_row(&value).map_err(|e| codec_err(name, &e))?;
            rows.push((name.clone(), row));
        }
        Scope::All => {
            let values: Array = result(&job.requests[1])?.unchecked_into();
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
    let mut cx = Ctx::new(&mut meta, date_now_us(), cfg!(feature = "test-clock"));
    let answer = (job.body)(&mut rows, &mut cx);
    let notices = core::mem::take(&mut cx.notices);
    let (now, lapse_seen) = (cx.now, cx.lapse_seen);
    drop(cx);
    let write_clock = meta.token != before_meta.token
        || meta.offset != before_meta.offset
        || (meta.floor != before_meta.floor && lapse_seen);
    write(&state.tx, &before_rows, &rows, write_clock.then_some(&meta))?;
    let reading = Reading {
        now,
        offset: meta.offset,
    };
    *state.pending.borrow_mut() = Some((answer, reading, notices));
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

/// The future of one transaction: its body's answer once it committed, or
/// [`LockError::Unavailable`]. Dropping it leaves the transaction to finish on its own.
#[must_use = "the transaction runs anyway; the future only waits for its answer"]
pub(crate) enum TxFuture<R: 'static> {
    /// Waiting for the answer.
    Running(Rc<Slot<Result<(R, Reading), LockError>>>),
    /// The connection had to be opened again first.
    Later(Pin<Box<dyn Future<Output = Answer<R>>>>),
}

impl<R> Future for TxFuture<R> {
    type Output = Result<(R, Reading), LockError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            TxFuture::Later(fut) => fut.as_mut().poll(cx),
            TxFuture::Running(slot) => slot.poll(cx),
        }
    }
}
