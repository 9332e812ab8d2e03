//! Waiters of one context on one name share their heartbeats, and hear their news from each
//! other's steps.

use super::{S, T0, step};
use crate::tx::ctx::Dead;
use crate::tx::ops::{self, Clocks, Ctx, Notice, release, try_lock};
use crate::tx::row::{Meta, Row};

/// A transaction of context `me` at `at`.
fn as_ctx<R>(
    meta: &mut Meta,
    at: u64,
    me: &str,
    f: impl FnOnce(&mut Ctx<'_>) -> R,
) -> (R, Vec<Notice>) {
    let dead = Dead::new();
    let clocks = Clocks {
        date_now: at,
        anchored: 0,
        test_clock: true,
    };
    let mut cx = Ctx::new(meta, clocks).unwrap().with_contexts(me, &dead);
    let out = f(&mut cx);
    (out, cx.notices)
}

#[test]
fn one_step_refreshes_every_ticket_of_its_context_and_no_other() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    as_ctx(&mut meta, T0, "H", |cx| {
        try_lock(&mut row, cx, "h", 100 * S, "")
    })
    .0
    .unwrap();
    for (id, me) in [("a1", "A"), ("b1", "B"), ("a2", "A")] {
        as_ctx(&mut meta, T0, me, |cx| {
            ops::step(&mut row, cx, &step(id, 0))
        });
    }
    // Only a2 steps, two seconds later: a1's ticket is refreshed with it, b1's is not.
    as_ctx(&mut meta, T0 + 2 * S, "A", |cx| {
        ops::step(&mut row, cx, &step("a2", 0))
    });
    let until: Vec<_> = row
        .queue
        .iter()
        .map(|t| (t.id.as_str(), t.heartbeat_until))
        .collect();
    assert_eq!(
        until,
        [("a1", T0 + 5 * S), ("b1", T0 + 3 * S), ("a2", T0 + 5 * S)]
    );
    // At T0 + 4 s, b1 missed its heartbeats and goes; a1, kept by a2's step, stays.
    let (_, _) = as_ctx(&mut meta, T0 + 4 * S, "A", |cx| ops::settle(&mut row, cx));
    let left: Vec<_> = row.queue.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(left, ["a1", "a2"]);
    // A context without an id refreshes only its own ticket.
    as_ctx(&mut meta, T0 + 4 * S, "", |cx| {
        ops::step(&mut row, cx, &step("x", 0))
    });
    assert_eq!(row.queue[0].heartbeat_until, T0 + 5 * S);
}

#[test]
fn a_step_finds_the_news_of_its_siblings_a_hand_off_and_the_head() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let h = as_ctx(&mut meta, T0, "H", |cx| {
        try_lock(&mut row, cx, "h", 100 * S, "")
    })
    .0
    .unwrap();
    for (id, me) in [("a1", "A"), ("b1", "B"), ("a2", "A")] {
        as_ctx(&mut meta, T0, me, |cx| {
            ops::step(&mut row, cx, &step(id, 0))
        });
    }
    let news = |row: &mut Row, meta: &mut Meta, me: &str, id: &str| {
        as_ctx(meta, T0 + S, me, |cx| {
            ops::step(row, cx, &step(id, 0));
            ops::news(row, cx, id)
        })
        .0
    };
    assert_eq!(
        news(&mut row, &mut meta, "A", "a2"),
        ["a1"],
        "a1 is first in line"
    );
    assert!(
        news(&mut row, &mut meta, "B", "b1").is_empty(),
        "not B's waiter"
    );
    // The holder hands the name to a1 (its message may be lost): a2's step tells it.
    as_ctx(&mut meta, T0 + S, "H", |cx| {
        release(&mut row, cx, h.token, "h")
    });
    assert_eq!(
        news(&mut row, &mut meta, "A", "a2"),
        ["a1"],
        "the hand-off to a1"
    );
    assert!(
        news(&mut row, &mut meta, "A", "a1").is_empty(),
        "a1 picked it up itself"
    );
}
