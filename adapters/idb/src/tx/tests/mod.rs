//! The transaction bodies, natively, on hand-made clocks: every rule of `ops` once.

mod clock;
mod queue;
mod siblings;
mod steal;

use super::ops::{
    self, Clocks, Ctx, Granted, Notice, Step, Stepped, cancel, force_release, holder, release,
    renew, try_lock,
};
use super::row::{MAX_EXACT, Meta, Row};

const T0: u64 = 1_800_000_000_000_000;
const S: u64 = 1_000_000;

/// Runs `f` in a transaction at wall time `at` (µs), returning its notices too.
fn at<R>(meta: &mut Meta, at: u64, f: impl FnOnce(&mut Ctx<'_>) -> R) -> (R, Vec<Notice>) {
    let mut cx = ctx(meta, at, true);
    let out = f(&mut cx);
    (out, cx.notices)
}

/// A transaction's context at wall time `at` (µs), with no anchored estimate.
fn ctx(meta: &mut Meta, at: u64, test_clock: bool) -> Ctx<'_> {
    let clocks = Clocks {
        date_now: at,
        anchored: 0,
        test_clock,
    };
    Ctx::new(meta, clocks).expect("a time before the horizon")
}

fn step(id: &str, wait_until: u64) -> Step<'_> {
    Step {
        id,
        owner: id,
        ttl: 10 * S,
        wait_until,
        heartbeat: 3 * S,
    }
}

fn granted(s: Stepped) -> Granted {
    match s {
        Stepped::Granted(g) => g,
        other => panic!("expected a grant, got {other:?}"),
    }
}

#[test]
fn try_lock_grants_a_free_name_and_refuses_a_live_one() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let (g, _) = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 10 * S, ""));
    let g = g.unwrap();
    assert_eq!(g.deadline, T0 + 10 * S);
    assert_eq!(g.token, T0, "the first token is the clock in µs");
    let (busy, _) = at(&mut meta, T0 + S, |cx| try_lock(&mut row, cx, "b", S, ""));
    assert_eq!(busy, Err(T0 + 10 * S));
    // At the deadline it is free, with a larger token.
    let (g2, _) = at(&mut meta, T0 + 10 * S, |cx| {
        try_lock(&mut row, cx, "b", S, "")
    });
    assert!(g2.unwrap().token > g.token);
}

#[test]
fn tokens_strictly_increase_even_within_one_microsecond_and_across_a_lost_counter() {
    let mut meta = Meta::default();
    let mut tokens = Vec::new();
    for i in 0..5 {
        let mut row = Row::default();
        let (g, _) = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", S, ""));
        tokens.push(g.unwrap().token);
        assert_eq!(tokens[i], T0 + i as u64);
    }
    // The counter row lost (the database deleted): tokens still pass the old ones, later.
    let mut fresh = Meta::default();
    let mut row = Row::default();
    let (g, _) = at(&mut fresh, T0 + S, |cx| try_lock(&mut row, cx, "a", S, ""));
    assert!(g.unwrap().token > tokens[4]);
}

#[test]
fn the_clock_never_goes_back_and_the_test_offset_counts_only_in_test_builds() {
    let mut meta = Meta::default();
    let (now, _) = at(&mut meta, T0, |cx| cx.now);
    assert_eq!((now, meta.floor), (T0, T0));
    // A backward step: decisions stay at the floor (leases stop aging until time catches up).
    let (now, _) = at(&mut meta, T0 - 60 * S, |cx| (cx.now, cx.raw));
    assert_eq!(now, (T0, T0));
    meta.offset = 100 * S;
    let cx = ctx(&mut meta, T0 + S, true);
    assert_eq!((cx.now, cx.raw), (T0 + 101 * S, T0 + S));
    let cx = ctx(&mut meta, T0 + 2 * S, false);
    assert_eq!(
        cx.now,
        T0 + 101 * S,
        "the floor holds even where the offset is ignored"
    );
    // Nothing overflows a JavaScript number.
    let cx = ctx(&mut meta, T0, true);
    assert_eq!(cx.after(u64::MAX), MAX_EXACT);
}

#[test]
fn release_hands_the_name_to_the_first_waiter_and_its_next_step_picks_it_up() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let (g, _) = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""));
    let holder_token = g.unwrap().token;
    for id in ["w1", "w2"] {
        let (s, _) = at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step(id, 0)));
        assert!(matches!(s, Stepped::Queued { .. }), "{s:?}");
    }
    // Only the head learns the holder's deadline.
    let (s, _) = at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("w1", 0)));
    assert_eq!(
        s,
        Stepped::Queued {
            head_deadline: Some(T0 + 100 * S)
        }
    );
    let (released, notices) = at(&mut meta, T0 + S, |cx| {
        release(&mut row, cx, holder_token, "h")
    });
    assert!(released);
    assert_eq!(notices, vec![Notice::Waiter("w1".into())]);
    let lease = row.lease.clone().unwrap();
    assert_eq!((lease.owner.as_str(), lease.claimed), ("w1", false));
    assert!(lease.token > holder_token);
    // No barging while the hand-off waits to be picked up.
    let (busy, _) = at(&mut meta, T0 + S, |cx| try_lock(&mut row, cx, "x", S, ""));
    assert!(busy.is_err());
    let (s, notices) = at(&mut meta, T0 + S, |cx| {
        ops::step(&mut row, cx, &step("w1", 0))
    });
    assert_eq!(granted(s).token, lease.token);
    assert!(row.lease.as_ref().unwrap().claimed);
    assert_eq!(
        notices,
        vec![Notice::Waiter("w2".into())],
        "the new head re-reads the deadline"
    );
    assert_eq!(row.queue.len(), 1);
}

#[test]
fn a_hand_off_to_a_waiter_that_went_away_lapses_at_its_heartbeat_and_passes_on() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let (g, _) = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""));
    at(&mut meta, T0, |cx| {
        ops::step(&mut row, cx, &step("gone", 0))
    });
    at(&mut meta, T0, |cx| {
        ops::step(&mut row, cx, &step("next", 0))
    });
    at(&mut meta, T0 + S, |cx| {
        release(&mut row, cx, g.unwrap().token, "h")
    });
    assert_eq!(row.lease.as_ref().unwrap().grantee, "gone");
    // "next" keeps stepping; "gone" never comes back for its lease.
    let (s, _) = at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("next", 0))
    });
    assert!(matches!(s, Stepped::Queued { .. }));
    let (s, _) = at(&mut meta, T0 + 3 * S, |cx| {
        ops::step(&mut row, cx, &step("next", 0))
    });
    assert_eq!(granted(s).deadline, T0 + 13 * S);
    // Coming back late, "gone" joins the back of the queue.
    let (s, _) = at(&mut meta, T0 + 4 * S, |cx| {
        ops::step(&mut row, cx, &step("gone", 0))
    });
    assert!(matches!(s, Stepped::Queued { .. }));
    assert_eq!(row.queue[0].id, "gone");
}

#[test]
fn a_zero_wait_answers_as_try_lock_and_queues_nothing() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let (s, _) = at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("a", T0)));
    granted(s);
    let (s, _) = at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("b", T0)));
    assert_eq!(s, Stepped::Over);
    assert!(row.queue.is_empty());
}

#[test]
fn a_bounded_wait_ends_with_over_and_the_next_waiter_becomes_head() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""))
        .0
        .unwrap();
    let (s, _) = at(&mut meta, T0, |cx| {
        ops::step(&mut row, cx, &step("w1", T0 + 5 * S))
    });
    assert_eq!(
        s,
        Stepped::Queued {
            head_deadline: Some(T0 + 100 * S)
        }
    );
    at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("w2", 0)));
    // Both keep their heartbeats (a ticket lives 3 s); w1 waits until T0 + 5 s.
    let mut s = Stepped::Over;
    for t in [T0 + 2 * S, T0 + 4 * S] {
        s = at(&mut meta, t, |cx| {
            ops::step(&mut row, cx, &step("w1", T0 + 5 * S))
        })
        .0;
        at(&mut meta, t, |cx| ops::step(&mut row, cx, &step("w2", 0)));
    }
    assert!(matches!(s, Stepped::Queued { .. }));
    let (s, notices) = at(&mut meta, T0 + 5 * S, |cx| {
        ops::step(&mut row, cx, &step("w1", T0 + 5 * S))
    });
    assert_eq!(s, Stepped::Over);
    assert_eq!(notices, vec![Notice::Waiter("w2".into())]);
    assert_eq!(row.queue.len(), 1);
}

#[test]
fn cancelling_a_waiter_handed_the_lease_passes_it_on() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""))
        .0
        .unwrap();
    at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("w1", 0)));
    at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("w2", 0)));
    at(&mut meta, T0, |cx| release(&mut row, cx, g.token, "h"));
    let (_, notices) = at(&mut meta, T0, |cx| cancel(&mut row, cx, "w1"));
    assert_eq!(notices, vec![Notice::Waiter("w2".into())]);
    assert_eq!(row.lease.as_ref().unwrap().grantee, "w2");
    // The last one cancelled: the name is free, and the row can go.
    at(&mut meta, T0, |cx| cancel(&mut row, cx, "w2"));
    assert!(row.is_empty());
}

#[test]
fn release_and_renew_compare_the_token() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let old = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 10 * S, ""))
        .0
        .unwrap();
    let new = at(&mut meta, T0 + 10 * S, |cx| {
        try_lock(&mut row, cx, "b", 10 * S, "")
    })
    .0
    .unwrap();
    assert!(
        !at(&mut meta, T0 + 11 * S, |cx| release(
            &mut row, cx, old.token, "a"
        ))
        .0
    );
    assert_eq!(
        at(&mut meta, T0 + 11 * S, |cx| renew(
            &mut row, cx, old.token, "a", S
        ))
        .0,
        Err(())
    );
    assert_eq!(
        row.lease.as_ref().unwrap().token,
        new.token,
        "the newer lease is untouched"
    );
    // Renew is an absolute reset, even to an earlier deadline.
    let dl = at(&mut meta, T0 + 12 * S, |cx| {
        renew(&mut row, cx, new.token, "b", S)
    })
    .0
    .unwrap();
    assert_eq!(dl, T0 + 13 * S);
    assert_eq!(
        at(&mut meta, T0 + 13 * S, |cx| renew(
            &mut row, cx, new.token, "b", S
        ))
        .0,
        Err(())
    );
    assert!(
        !at(&mut meta, T0 + 13 * S, |cx| release(
            &mut row, cx, new.token, "b"
        ))
        .0
    );
    assert!(row.is_empty());
}

#[test]
fn force_release_ends_the_live_lease_and_hands_it_on() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let g = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 10 * S, ""))
        .0
        .unwrap();
    at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step("w", 0)));
    let (ended, notices) = at(&mut meta, T0 + S, |cx| force_release(&mut row, cx, "job"));
    assert_eq!(ended.unwrap().token, g.token);
    assert_eq!(
        notices,
        vec![Notice::Ended("job".into()), Notice::Waiter("w".into())]
    );
    assert!(!at(&mut meta, T0 + S, |cx| release(&mut row, cx, g.token, "a")).0);
    let h = at(&mut meta, T0 + S, |cx| holder(&mut row, cx)).0.unwrap();
    assert_eq!(h.owner, "w");
    // A lapsed lease is not force-released: there is nothing live to end.
    let mut lapsed = Row::default();
    at(&mut meta, T0, |cx| try_lock(&mut lapsed, cx, "a", S, ""))
        .0
        .unwrap();
    assert!(
        at(&mut meta, T0 + 20 * S, |cx| force_release(
            &mut lapsed,
            cx,
            "x"
        ))
        .0
        .is_none()
    );
}

#[test]
fn only_decisions_that_found_a_lapse_ask_for_the_floor_to_be_written() {
    let mut meta = Meta::default();
    let mut row = Row::default();
    let g = at(&mut meta, T0, |cx| {
        let g = try_lock(&mut row, cx, "a", 10 * S, "").unwrap();
        (g, cx.lapse_seen)
    })
    .0;
    assert!(
        !g.1,
        "a grant on a free name found nothing lapsed (the token write carries the floor)"
    );
    let token = g.0.token;
    let seen = |meta: &mut Meta, t: u64, row: &mut Row, f: &dyn Fn(&mut Row, &mut Ctx<'_>)| {
        at(meta, t, |cx| {
            f(row, cx);
            cx.lapse_seen
        })
        .0
    };
    assert!(!seen(&mut meta, T0 + S, &mut row, &|r, cx| {
        assert!(ops::is_held(r, cx, token, "a").is_some());
    }));
    assert!(!seen(&mut meta, T0 + S, &mut row, &|r, cx| {
        assert!(try_lock(r, cx, "b", S, "").is_err());
    }));
    assert!(seen(&mut meta, T0 + 10 * S, &mut row, &|r, cx| {
        assert!(ops::is_held(r, cx, token, "a").is_none());
    }));
    // A live release deletes the lease: nothing left for a stepped-back clock to contradict.
    let mut live = Row::default();
    let t = at(&mut meta, T0 + 20 * S, |cx| {
        try_lock(&mut live, cx, "a", 10 * S, "")
    })
    .0
    .unwrap()
    .token;
    assert!(!seen(&mut meta, T0 + 21 * S, &mut live, &|r, cx| {
        assert!(release(r, cx, t, "a"));
    }));
    let t = at(&mut meta, T0 + 22 * S, |cx| {
        try_lock(&mut live, cx, "a", S, "")
    })
    .0
    .unwrap()
    .token;
    assert!(seen(&mut meta, T0 + 30 * S, &mut live, &|r, cx| {
        assert!(!release(r, cx, t, "a"));
    }));
}
