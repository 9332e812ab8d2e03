//! The queue and the holder: dead tickets pruned anywhere, a bounded queue, a holder told
//! of a lapse found elsewhere, releases that compare the owner too.

use super::{S, T0, at, ctx, granted, step};
use crate::tx::ctx::Dead;
use crate::tx::ops::{self, Clocks, Ctx, Notice, release, renew, settle, try_lock};
use crate::tx::row::{MAX_QUEUE, Meta, Row};

#[test]
fn a_renewal_prunes_dead_tickets_while_the_name_stays_held() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""))
        .0
        .unwrap();
    for id in ["gone1", "gone2"] {
        at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step(id, 0)));
    }
    at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("alive", 0))
    });
    // Three seconds without a heartbeat: "gone1" and "gone2" went away.
    let ((renewed, lapse_seen), notices) = at(&mut meta, T0 + 4 * S, |cx| {
        (renew(&mut row, cx, g.token, "h", 100 * S), cx.lapse_seen)
    });
    assert!(renewed.is_ok());
    let left: Vec<_> = row.queue.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(left, ["alive"]);
    assert!(lapse_seen, "dropping a ticket is a decision on time");
    assert_eq!(
        notices,
        vec![Notice::Waiter("alive".into())],
        "the new head learns it is first in line"
    );
}

#[test]
fn a_full_queue_refuses_the_next_waiter() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""))
        .0
        .unwrap();
    let ids: Vec<String> = (0..MAX_QUEUE).map(|i| format!("w{i}")).collect();
    for id in &ids {
        let (refused, _) = at(&mut meta, T0, |cx| {
            ops::step(&mut row, cx, &step(id, 0));
            cx.refused.clone()
        });
        assert_eq!(refused, None);
    }
    let (refused, _) = at(&mut meta, T0, |cx| {
        ops::step(&mut row, cx, &step("one-too-many", 0));
        cx.refused.clone()
    });
    assert!(refused.expect("refused").contains("256 waiters"));
    assert_eq!(row.queue.len(), MAX_QUEUE);
}

#[test]
fn a_lapse_found_by_another_context_tells_the_holder() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 10 * S, ""))
        .0
        .unwrap();
    // Another context (its clock ahead, or just later) finds the lease lapsed and takes it.
    let (next, notices) = at(&mut meta, T0 + 10 * S, |cx| {
        try_lock(&mut row, cx, "b", 10 * S, "")
    });
    assert!(next.unwrap().token > g.token);
    assert_eq!(notices, vec![Notice::Lapsed(g.token)]);
}

#[test]
fn release_and_renew_compare_the_owner_too() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 10 * S, ""))
        .0
        .unwrap();
    assert!(!at(&mut meta, T0 + S, |cx| release(&mut row, cx, g.token, "b")).0);
    assert_eq!(
        at(&mut meta, T0 + S, |cx| renew(&mut row, cx, g.token, "b", S)).0,
        Err(())
    );
    let (held, _) = at(&mut meta, T0 + S, |cx| ops::is_held(&row, cx, g.token, "b"));
    assert_eq!(held, None);
    assert_eq!(
        row.lease.as_ref().unwrap().deadline,
        T0 + 10 * S,
        "untouched"
    );
    assert!(at(&mut meta, T0 + S, |cx| release(&mut row, cx, g.token, "a")).0);
}

#[test]
fn a_ticket_whose_heartbeat_expired_is_skipped() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let (g, _) = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""));
    at(&mut meta, T0, |cx| {
        ops::step(&mut row, cx, &step("gone", 0))
    });
    at(&mut meta, T0, |cx| {
        ops::step(&mut row, cx, &step("alive", 0))
    });
    // "alive" refreshes its heartbeat; "gone" (a closed tab) does not.
    at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("alive", 0))
    });
    let (_, notices) = at(&mut meta, T0 + 4 * S, |cx| {
        release(&mut row, cx, g.unwrap().token, "h")
    });
    assert_eq!(notices, vec![Notice::Waiter("alive".into())]);
    assert!(row.queue.is_empty(), "the dead ticket was dropped");
}

#[test]
fn settle_and_waiting_skip_dead_tickets() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 10 * S, ""))
        .0
        .unwrap();
    at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("w1", 0)));
    at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("w2", 0))
    });
    let mut cx = ctx(&mut meta, T0 + 4 * S, true);
    assert!(settle(&mut row, &mut cx));
    let ids: Vec<_> = ops::waiting(&row, &cx).map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["w2"]);
}

/// A transaction of context `me` knowing `dead` dead.
fn as_ctx<R>(
    meta: &mut Meta,
    at: u64,
    me: &str,
    dead: &[&str],
    f: impl FnOnce(&mut Ctx<'_>) -> R,
) -> (R, Vec<Notice>) {
    let dead: Dead = dead.iter().map(|d| (*d).to_owned()).collect();
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
fn a_dead_contexts_lease_is_over_before_its_deadline_and_a_live_ones_is_not() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = as_ctx(&mut meta, T0, "A", &[], |cx| {
        try_lock(&mut row, cx, "a", 100 * S, "")
    })
    .0
    .unwrap();
    assert_eq!(
        row.lease.as_ref().unwrap().ctx,
        "A",
        "the lease records its context"
    );
    // B does not know A dead yet: busy.
    let (busy, _) = as_ctx(&mut meta, T0 + S, "B", &[], |cx| {
        try_lock(&mut row, cx, "b", S, "")
    });
    assert!(busy.is_err());
    // B knows A dead: the lease is over (its holder told), long before its deadline.
    let (taken, notices) = as_ctx(&mut meta, T0 + S, "B", &["A"], |cx| {
        try_lock(&mut row, cx, "b", S, "")
    });
    let taken = taken.unwrap();
    assert!(taken.token > g.token);
    assert!(notices.contains(&Notice::Lapsed(g.token)));
    // A context never counts itself dead, and a record without an id has no liveness.
    let (mine, _) = as_ctx(&mut meta, T0 + S, "B", &["B"], |cx| {
        try_lock(&mut row, cx, "c", S, "")
    });
    assert!(mine.is_err(), "B's own lease is live for B");
    row.lease.as_mut().unwrap().ctx.clear();
    let (old, _) = as_ctx(&mut meta, T0 + S, "C", &["", "B"], |cx| {
        try_lock(&mut row, cx, "c", S, "")
    });
    assert!(
        old.is_err(),
        "an old row without an id is ruled by its deadline"
    );
}

#[test]
fn a_dead_contexts_ticket_is_skipped_and_its_unclaimed_hand_off_passes_on() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = as_ctx(&mut meta, T0, "H", &[], |cx| {
        try_lock(&mut row, cx, "h", 100 * S, "")
    })
    .0
    .unwrap();
    let s1 = as_ctx(&mut meta, T0, "W1", &[], |cx| {
        step_ahead(&mut row, cx, "w1")
    })
    .0;
    assert_eq!(s1, vec!["H".to_owned()], "w1 waits behind H");
    let s2 = as_ctx(&mut meta, T0, "W2", &[], |cx| {
        step_ahead(&mut row, cx, "w2")
    })
    .0;
    assert_eq!(
        s2,
        vec!["H".to_owned(), "W1".to_owned()],
        "w2 waits behind H and W1"
    );
    // W1's context dies; the holder does not know it and hands the lease to w1.
    let (released, _) = as_ctx(&mut meta, T0 + S, "H", &[], |cx| {
        release(&mut row, cx, g.token, "h")
    });
    assert!(released);
    assert_eq!(row.lease.as_ref().unwrap().grantee, "w1");
    // W2 knows W1 dead: the unclaimed hand-off passes on to it at once.
    let (s, _) = as_ctx(&mut meta, T0 + S, "W2", &["W1"], |cx| {
        ops::step(&mut row, cx, &step("w2", 0))
    });
    let got = granted(s);
    assert!(got.token > g.token);
    assert!(row.queue.is_empty(), "w1's ticket is gone");
}

/// One step of waiter `id`, answering the contexts ahead of it.
fn step_ahead(row: &mut Row, cx: &mut Ctx<'_>, id: &str) -> Vec<String> {
    ops::step(row, cx, &step(id, 0));
    ops::ahead(row, cx, id)
}
